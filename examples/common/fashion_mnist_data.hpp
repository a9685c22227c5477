// SPDX-License-Identifier: MIT
// Fashion-MNIST for the examples: Debian's dataset-fashion-mnist package, or generated data of
// the same shape when the package is not installed.
#pragma once

#include <dptrain/dptrain.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

namespace examples {

/// Where Debian's `dataset-fashion-mnist` package puts the four IDX files.
inline const std::string fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

struct FashionMnist {
  dptrain::DenseDataset<float, dptrain::Label> train, test;
  bool generated = false;
};

/// 10 classes of 28×28 "images": each class a random smooth prototype, each sample the prototype
/// plus pixel noise, clipped to [0, 1]. Learnable but not trivially separable.
inline dptrain::DenseDataset<float, dptrain::Label> generated_fashion(dptrain::Index n, std::uint64_t seed) {
  constexpr dptrain::Index pixels = 784, classes = 10;
  std::mt19937_64 rng(1234);  // the same prototypes for the training and test sets
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  dptrain::RowMatrix<float> prototypes(classes, pixels);
  for (dptrain::Index c = 0; c < classes; ++c)
    for (dptrain::Index p = 0; p < pixels; ++p) prototypes(c, p) = uniform(rng) < 0.5f ? 0.2f : 0.6f;
  rng.seed(seed);
  std::normal_distribution<float> noise(0.0f, 0.35f);
  dptrain::DenseDataset<float, dptrain::Label> data{dptrain::huge_page_matrix<float>(n, pixels),
                                                    dptrain::Vector<dptrain::Label>(n)};
  for (dptrain::Index i = 0; i < n; ++i) {
    const auto c = static_cast<dptrain::Label>(rng() % classes);
    data.targets[i] = c;
    for (dptrain::Index p = 0; p < pixels; ++p)
      data.features(i, p) = std::clamp(prototypes(c, p) + noise(rng), 0.0f, 1.0f);
  }
  return data;
}

/// Loads Fashion-MNIST, or generates 60 000 + 10 000 samples of the same shape and says so
/// (unless not `say`: the ranks other than 0 of an MPI run).
inline FashionMnist load_fashion_mnist(bool say = true) {
  const std::string dir = fashion_mnist_dir + "/";
  if (std::filesystem::exists(dir + "train-images-idx3-ubyte.gz")) {
    return {dptrain::read_idx<float>(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz"),
            dptrain::read_idx<float>(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz"), false};
  }
  if (say)
    std::printf(
        "Fashion-MNIST not found in %s (apt-get install dataset-fashion-mnist):\n"
        "using GENERATED data of the same shape (60000 + 10000 samples, 784 features, 10 classes)\n",
        fashion_mnist_dir.c_str());
  return {generated_fashion(60000, 1), generated_fashion(10000, 2), true};
}

struct FashionMnistBytes {
  using Data = dptrain::ByteDataset<float, dptrain::Label>;
  Data train, test;
  bool generated = false;
};

/// The same pixels kept as bytes (read as b · 1/255): the generated data's values rounded to
/// the nearest of 256 levels.
inline dptrain::ByteDataset<float, dptrain::Label> to_bytes(const dptrain::DenseDataset<float, dptrain::Label>& data) {
  dptrain::ByteDataset<float, dptrain::Label> bytes{
      .bytes = dptrain::huge_page_matrix<std::uint8_t>(data.size(), data.dim()),
      .targets = data.targets,
      .scale = dptrain::Vector<float>::Constant(data.dim(), 1.0f / 255),
      .offset = dptrain::Vector<float>::Zero(data.dim())};
  bytes.bytes = (data.features.array() * 255.0f).round().cast<std::uint8_t>();
  return bytes;
}

/// load_fashion_mnist(), its pixels kept as bytes: a quarter of the memory, and a quarter of the
/// bytes read per shuffled batch.
inline FashionMnistBytes load_fashion_mnist_bytes(bool say = true) {
  const std::string dir = fashion_mnist_dir + "/";
  if (std::filesystem::exists(dir + "train-images-idx3-ubyte.gz")) {
    return {dptrain::read_idx_bytes<float>(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz"),
            dptrain::read_idx_bytes<float>(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz"),
            false};
  }
  const FashionMnist floats = load_fashion_mnist(say);
  return {to_bytes(floats.train), to_bytes(floats.test), true};
}

}  // namespace examples
