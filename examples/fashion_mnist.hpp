// SPDX-License-Identifier: MIT
// The training of examples/fashion_mnist.cpp, for either form of the pixels: floats
// (fashion_mnist.cpp) or bytes (fashion_mnist_bytes.cpp). Each form is compiled in its own file
// because each instantiates the trainer for every model, optimizer, exchange and communicator the
// flags can choose (2 × 4 × 3 × 2 = 48 with MPI; the four aggregators are one AnyAggregator), and
// two cores then build the two files side by side.
#pragma once

#include <dptrain/dptrain.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/fashion_mnist_data.hpp"
#include "common/processes.hpp"

namespace fashion_mnist {

struct Options {
  std::string model = "mlp";
  dptrain::Index threads = examples::Processes::default_threads();
  dptrain::Index batch = 128;
  dptrain::Index epochs = 0;  // 0: the model's default
  double lr = 0;              // 0: the model's and optimizer's default
  std::string optimizer = "momentum";
  std::string aggregator = "reduce-scatter";
  std::string synchronizer = "every-step";
  std::uint64_t seed = 1;
  bool bytes = false;
  std::string precision = "full";  // the MLP's products: full (fp32) or bf16

  [[nodiscard]] dptrain::Precision mlp_precision() const {
    return precision == "bf16" ? dptrain::Precision::bf16 : dptrain::Precision::full;
  }
  /// "mlp", or "mlp (bf16 products)".
  [[nodiscard]] std::string model_text() const {
    return mlp_precision() == dptrain::Precision::bf16 ? model + " (bf16 products)" : model;
  }
};

// `exchange`: the aggregator the flag names (an AnyAggregator), or a synchronizer that needs none:
// BackupWorkers, which shares each step out in chunks, or Reproducible, which sums 8 shards in
// shard order.
template <class Exchange, class Optimizer, class Model, class Communicator, class Data>
int train(const Model& model, Optimizer optimizer, Exchange exchange, Communicator communicator, const Data& train,
          const Data& validation, const Data& test, const Options& o, const examples::Processes& processes) {
  dptrain::Vector<float> theta = model.init_parameters(o.seed);
  // The cosine decays over the whole run: fit() gives the schedule its length.
  dptrain::DataParallelTrainer trainer(
      {.threads = o.threads, .batch_size = o.batch, .epochs = o.epochs, .seed = o.seed}, optimizer,
      dptrain::CosineSchedule{}, exchange, communicator);
  dptrain::Evaluate evaluate(model, validation);
  dptrain::ProgressBar progress;  // prints on rank 0
  const dptrain::FitReport report = trainer.fit(model, theta, train, evaluate, progress);

  if (!processes.lead()) return 0;  // every rank holds the same θ: rank 0 reports
  const double accuracy = dptrain::accuracy(model, theta, test, o.threads);
  std::printf("validation accuracy per epoch:");
  for (double a : evaluate.history()) std::printf(" %.4f", a);
  const std::string workers = processes.describe(examples::threads_text(report.threads));
  const std::string exchange_text = o.synchronizer == "backup"         ? "backup workers"
                                    : o.synchronizer == "reproducible" ? "reproducible (8 shards)"
                                                                       : o.aggregator;
  std::printf("\n%s, %s, %s: %ld epochs on %s in %.1f s (%.0f samples/s)\ntest accuracy: %.2f%%\n",
              o.model_text().c_str(), o.optimizer.c_str(), exchange_text.c_str(), long(report.epochs), workers.c_str(),
              report.seconds, report.samples_per_second(), 100 * accuracy);
  // On a machine shared with busy processes the synchronous step waits for workers that lost
  // their cores (docs/trainer.md, "Shared and oversubscribed machines"). Other ranks count as
  // other work, so only a lone process says so.
  if (processes.ranks() == 1 && report.other_load > 0.5 && o.synchronizer != "backup")
    std::printf(
        "note: other work kept %.1f of the %ld cores busy meanwhile; --synchronizer backup or fewer threads may "
        "train faster\n",
        report.other_load, long(report.cores));
  return 0;
}

// The data sets (floats, or bytes with --bytes), the options and the processes, handed down to train().
template <class Data>
struct Run {
  const Data& train;
  const Data& validation;
  const Data& test;
  const Options& options;
  const examples::Processes& processes;
};

template <class Exchange, class Optimizer, class Model, class Data>
int with_communicator(const Model& model, Optimizer optimizer, Exchange exchange, const Run<Data>& r) {
  return r.processes.with_communicator([&](auto communicator) {
    return train(model, optimizer, exchange, communicator, r.train, r.validation, r.test, r.options, r.processes);
  });
}

template <class Optimizer, class Model, class Data>
int with_exchange(const Model& model, Optimizer optimizer, const Run<Data>& r) {
  if (r.options.synchronizer == "backup") return with_communicator(model, optimizer, dptrain::BackupWorkers{}, r);
  if (r.options.synchronizer == "reproducible") return with_communicator(model, optimizer, dptrain::Reproducible{}, r);
  return with_communicator(model, optimizer, dptrain::AnyAggregator::named(r.options.aggregator), r);
}

template <class Model, class Data>
int with_optimizer(const Model& model, const Run<Data>& r) {
  const Options& o = r.options;
  if (o.optimizer == "sgd") return with_exchange(model, dptrain::Sgd{.lr = o.lr}, r);
  if (o.optimizer == "adam") return with_exchange(model, dptrain::Adam{.lr = o.lr}, r);
  if (o.optimizer == "adamw") return with_exchange(model, dptrain::AdamW{.lr = o.lr}, r);
  return with_exchange(model, dptrain::Momentum{.lr = o.lr, .momentum = 0.9}, r);
}

/// Splits off the validation set and trains on the rest: every rank loads the whole data set and
/// splits it alike (same seed), so the ranks take one global step together.
template <class Fashion>
int train_on(const Fashion& fashion, const Options& o, const examples::Processes& processes) {
  const std::string workers = processes.describe(examples::threads_text(o.threads));
  auto [train, validation] = dptrain::train_validation_split(fashion.train, 5000.0 / 60000.0, o.seed);
  if (processes.lead())
    std::printf("%ld training, %ld validation, %ld test samples%s; %s on %s, batch %ld, lr %g\n", long(train.size()),
                long(validation.size()), long(fashion.test.size()), o.bytes ? " (pixels as bytes)" : "",
                o.model_text().c_str(), workers.c_str(), long(o.batch), o.lr);
  const Run<decltype(train)> run{train, validation, fashion.test, o, processes};
  if (o.model == "mlp") return with_optimizer(dptrain::Mlp<float>({784, 256, 10}, o.mlp_precision()), run);
  return with_optimizer(dptrain::SoftmaxRegression<float>(784, 10), run);
}

/// Loads Fashion-MNIST with float pixels (fashion_mnist.cpp) or byte pixels (fashion_mnist_bytes.cpp)
/// and trains.
int train_on_floats(const Options& o, const examples::Processes& processes);
int train_on_bytes(const Options& o, const examples::Processes& processes);

}  // namespace fashion_mnist
