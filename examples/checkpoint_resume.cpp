// SPDX-License-Identifier: MIT
// checkpoint_resume: stop a run halfway with a checkpoint and resume it elsewhere: on another
// thread count, with a new learning rate, and under Reproducible (fixed shards), where the
// resumed θ is the uninterrupted run's bit for bit. Prints what resume() reports (FitReport::notes).
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <string>

#include "common/fashion_mnist_data.hpp"

int main(int argc, char** argv) {
  CLI::App app(
      "Checkpoint a softmax regression on Fashion-MNIST halfway and resume it on another thread count, "
      "with another learning rate, and under Reproducible, where the bits are kept");
  dptrain::Index threads = 2, epochs = 4;
  std::string file = "checkpoint_resume.ckpt";
  app.add_option("--threads", threads, "threads of the interrupted run (the resumes take one more)")
      ->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "epochs in all; the checkpoint is written after half of them")
      ->check(CLI::Range(2, 1000));
  app.add_option("--file", file, "the checkpoint file (overwritten)");
  CLI11_PARSE(app, argc, argv);

  const examples::FashionMnist fashion = examples::load_fashion_mnist();
  const dptrain::SoftmaxRegression<float> model(784, 10);
  const auto options = [&](dptrain::Index t, dptrain::Index e) {
    return dptrain::TrainerOptions{.threads = t, .batch_size = 256, .epochs = e, .seed = 1};
  };

  // `epochs` in one go with trainer(threads, epochs); half of them and a checkpoint; the rest
  // resumed from the file by a fresh resumer(threads + 1, epochs). True if the bits were kept.
  const auto scenario = [&](const char* title, auto trainer, auto resumer) {
    dptrain::Vector<float> straight = model.init_parameters(1), theta = straight;
    trainer(threads, epochs).fit(model, straight, fashion.train);
    dptrain::Checkpoint checkpoint(model, file, {.every_epochs = 0});
    trainer(threads, epochs / 2).fit(model, theta, fashion.train, checkpoint);
    const dptrain::TrainingState<float> state = dptrain::load_checkpoint(file, model, theta);
    const dptrain::FitReport report = resumer(threads + 1, epochs).resume(model, theta, fashion.train, state);
    const bool same = std::memcmp(theta.data(), straight.data(), sizeof(float) * theta.size()) == 0;
    std::printf("\n%s: %ld epochs on %ld threads, %ld resumed on %ld\n", title, long(epochs / 2), long(threads),
                long(report.epochs), long(report.threads));
    for (const std::string& note : report.notes) std::printf("  resume() notes: %s\n", note.c_str());
    std::printf("  max |theta - uninterrupted theta| = %.3g (bit for bit: %s), test accuracy %.2f%%\n",
                double((theta - straight).cwiseAbs().maxCoeff()), same ? "yes" : "no",
                100 * dptrain::accuracy(model, theta, fashion.test, threads));
    return same;
  };

  const dptrain::Momentum momentum{.lr = 0.05};
  scenario(
      "another thread count",
      [&](dptrain::Index t, dptrain::Index e) { return dptrain::DataParallelTrainer(options(t, e), momentum); },
      [&](dptrain::Index t, dptrain::Index e) { return dptrain::DataParallelTrainer(options(t, e), momentum); });
  scenario(
      "a new learning rate",
      [&](dptrain::Index t, dptrain::Index e) { return dptrain::DataParallelTrainer(options(t, e), momentum); },
      [&](dptrain::Index t, dptrain::Index e) {
        return dptrain::DataParallelTrainer(options(t, e), dptrain::Momentum{.lr = 0.02});
      });
  const auto reproducible = [&](dptrain::Index t, dptrain::Index e) {
    return dptrain::DataParallelTrainer(options(t, e), momentum, dptrain::Reproducible{.shards = 8});
  };
  const bool kept = scenario("Reproducible{.shards = 8}, another thread count", reproducible, reproducible);
  std::remove(file.c_str());
  return kept ? 0 : 1;  // fixed shards keep the bits on any thread count
}
