// SPDX-License-Identifier: MIT
// A short real-data run: a few hundred steps on a Fashion-MNIST subset, far above chance.
// Skipped, with a message, when Debian's dataset-fashion-mnist package is not installed.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "dptrain/dptrain.hpp"

TEST_CASE("Fashion-MNIST: a few hundred steps of softmax regression are far above chance", "[integration]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-images-idx3-ubyte.gz")) {
    WARN("skipped: " << dir << " not found (apt-get install dataset-fashion-mnist)");
    return;
  }
  // The 10 000 test images: the first 8 000 to train on, the last 2 000 held out.
  const auto all = dptrain::read_idx<float>(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz");
  const dptrain::DenseDataset<float, dptrain::Label> train{all.features.topRows(8000), all.targets.head(8000)};
  const dptrain::DenseDataset<float, dptrain::Label> held_out{all.features.bottomRows(2000), all.targets.tail(2000)};
  const dptrain::SoftmaxRegression<float> model(784, 10);
  dptrain::Vector<float> theta = model.init_parameters();
  const auto report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 64, .epochs = 3, .seed = 1},
                                                   dptrain::Momentum{.lr = 0.05})
                          .fit(model, theta, train);
  CHECK(report.steps == 375);
  const double accuracy = dptrain::accuracy(model, theta, held_out, 2);
  INFO("held-out accuracy " << accuracy);
  CHECK(accuracy > 0.7);  // chance is 0.1
}

TEST_CASE("Fashion-MNIST: the MLP with bf16 products is as accurate as with fp32", "[integration][bf16]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "train-images-idx3-ubyte.gz")) {
    WARN("skipped: " << dir << " not found (apt-get install dataset-fashion-mnist)");
    return;
  }
  // The example's defaults (784-256-10, Momentum 0.05 with 0.9, batch 128, the cosine schedule)
  // on a subset: 3 epochs on the first 20 000 training images, then the whole test set, so that
  // 0.3 points are 30 images.
  const auto all = dptrain::read_idx<float>(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz");
  const dptrain::DenseDataset<float, dptrain::Label> train{all.features.topRows(20000), all.targets.head(20000)};
  const auto test = dptrain::read_idx<float>(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz");
  const auto test_accuracy = [&](dptrain::Precision precision) {
    const dptrain::Mlp<float> model({784, 256, 10}, precision);
    dptrain::Vector<float> theta = model.init_parameters(1);
    dptrain::DataParallelTrainer({.threads = 2, .batch_size = 128, .epochs = 3, .seed = 1},
                                 dptrain::Momentum{.lr = 0.05, .momentum = 0.9}, dptrain::CosineSchedule{})
        .fit(model, theta, train);
    return dptrain::accuracy(model, theta, test, 2);
  };
  const double full = test_accuracy(dptrain::Precision::full);
  const double bf16 = test_accuracy(dptrain::Precision::bf16);
  INFO("test accuracy: fp32 " << full << ", bf16 " << bf16 << " (" << dptrain::bf16_kernel_name() << ")");
  CHECK(full > 0.8);
  CHECK(std::fabs(bf16 - full) <= 0.003);
}
