// SPDX-License-Identifier: MIT
// fashion_mnist: softmax regression or an MLP on Fashion-MNIST, on every core, with a progress
// bar, validation accuracy per epoch and the final test accuracy.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "common/fashion_mnist_data.hpp"
#include "common/machine.hpp"

namespace {

struct Options {
  std::string model = "mlp";
  dptrain::Index threads = dptrain::default_threads();
  dptrain::Index batch = 128;
  dptrain::Index epochs = 0;  // 0: the model's default
  double lr = 0;              // 0: the model's and optimizer's default
  std::string optimizer = "momentum";
  std::string aggregator = "reduce-scatter";
  std::uint64_t seed = 1;
};

using Data = dptrain::DenseDataset<float, dptrain::Label>;

template <class Aggregator, class Optimizer, class Model>
int train(const Model& model, Optimizer optimizer, const Data& train, const Data& validation, const Data& test,
          const Options& o) {
  dptrain::Vector<float> theta = model.init_parameters(o.seed);
  // The cosine decays over the whole run: fit() gives the schedule its length.
  dptrain::DataParallelTrainer trainer(
      {.threads = o.threads, .batch_size = o.batch, .epochs = o.epochs, .seed = o.seed}, optimizer,
      dptrain::CosineSchedule{}, Aggregator{});
  dptrain::Evaluate evaluate(model, validation);
  dptrain::ProgressBar progress;
  const dptrain::FitReport report = trainer.fit(model, theta, train, evaluate, progress);

  std::printf("validation accuracy per epoch:");
  for (double a : evaluate.history()) std::printf(" %.4f", a);
  const double accuracy = dptrain::accuracy(model, theta, test, o.threads);
  std::printf("\n%s, %s, %s: %ld epochs on %ld threads in %.1f s (%.0f samples/s)\ntest accuracy: %.2f%%\n",
              o.model.c_str(), o.optimizer.c_str(), o.aggregator.c_str(), long(report.epochs), long(report.threads),
              report.seconds, report.samples_per_second(), 100 * accuracy);
  return 0;
}

template <class Optimizer, class Model>
int with_aggregator(const Model& model, Optimizer optimizer, const Data& tr, const Data& va, const Data& te,
                    const Options& o) {
  if (o.aggregator == "ring") return train<dptrain::RingAllReduceAggregator>(model, optimizer, tr, va, te, o);
  if (o.aggregator == "tree") return train<dptrain::TreeAggregator>(model, optimizer, tr, va, te, o);
  if (o.aggregator == "serial") return train<dptrain::SerialAggregator>(model, optimizer, tr, va, te, o);
  return train<dptrain::ReduceScatterAggregator>(model, optimizer, tr, va, te, o);
}

template <class Model>
int with_optimizer(const Model& model, const Data& tr, const Data& va, const Data& te, const Options& o) {
  if (o.optimizer == "sgd") return with_aggregator(model, dptrain::Sgd{.lr = o.lr}, tr, va, te, o);
  if (o.optimizer == "adam") return with_aggregator(model, dptrain::Adam{.lr = o.lr}, tr, va, te, o);
  if (o.optimizer == "adamw") return with_aggregator(model, dptrain::AdamW{.lr = o.lr}, tr, va, te, o);
  return with_aggregator(model, dptrain::Momentum{.lr = o.lr, .momentum = 0.9}, tr, va, te, o);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Train on Fashion-MNIST (Debian's dataset-fashion-mnist) on every core");
  app.add_option("--model", o.model, "softmax or mlp (784-256-10)")->check(CLI::IsMember({"softmax", "mlp"}));
  app.add_option("--threads", o.threads, "worker threads (default: all cores)")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "global minibatch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", o.epochs, "passes over the data (default: 15 mlp, 10 softmax)")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr", o.lr, "peak learning rate of the cosine schedule (default: per model and optimizer)")
      ->check(CLI::PositiveNumber);
  app.add_option("--optimizer", o.optimizer, "sgd, momentum, adam or adamw")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}));
  app.add_option("--aggregator", o.aggregator, "reduce-scatter, ring, tree or serial")
      ->check(CLI::IsMember({"reduce-scatter", "ring", "tree", "serial"}));
  app.add_option("--seed", o.seed, "seed of the initialisation, the split and the shuffle");
  CLI11_PARSE(app, argc, argv);

  const bool mlp = o.model == "mlp";
  if (o.epochs == 0) o.epochs = mlp ? 15 : 10;
  if (o.lr == 0) {
    const bool adaptive = o.optimizer == "adam" || o.optimizer == "adamw";
    o.lr = adaptive ? 1e-3 : o.optimizer == "sgd" ? (mlp ? 0.2 : 0.5) : (mlp ? 0.05 : 0.05);
  }

  std::printf("%s\n", examples::machine_line(std::to_string(o.threads) + " threads").c_str());
  examples::FashionMnist fashion = examples::load_fashion_mnist();
  auto [train, validation] = dptrain::train_validation_split(fashion.train, 5000.0 / 60000.0, o.seed);
  std::printf("%ld training, %ld validation, %ld test samples; %s on %ld threads, batch %ld, lr %g\n",
              long(train.size()), long(validation.size()), long(fashion.test.size()), o.model.c_str(), long(o.threads),
              long(o.batch), o.lr);
  if (mlp) return with_optimizer(dptrain::Mlp<float>({784, 256, 10}), train, validation, fashion.test, o);
  return with_optimizer(dptrain::SoftmaxRegression<float>(784, 10), train, validation, fashion.test, o);
}
