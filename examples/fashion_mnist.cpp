// SPDX-License-Identifier: MIT
// fashion_mnist: softmax regression or an MLP on Fashion-MNIST, on every core, with a progress
// bar, validation accuracy per epoch and the final test accuracy. Under `mpirun` (examples built
// with the MPI component) every rank trains with its threads, one global step at a time.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "common/fashion_mnist_data.hpp"
#include "common/machine.hpp"
#include "common/processes.hpp"

namespace {

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
};

// `Exchange`: the aggregator, or BackupWorkers, which shares each step out in chunks and needs none.
template <class Exchange, class Optimizer, class Model, class Communicator, class Data>
int train(const Model& model, Optimizer optimizer, Communicator communicator, const Data& train, const Data& validation,
          const Data& test, const Options& o, const examples::Processes& processes) {
  dptrain::Vector<float> theta = model.init_parameters(o.seed);
  // The cosine decays over the whole run: fit() gives the schedule its length.
  dptrain::DataParallelTrainer trainer(
      {.threads = o.threads, .batch_size = o.batch, .epochs = o.epochs, .seed = o.seed}, optimizer,
      dptrain::CosineSchedule{}, Exchange{}, communicator);
  dptrain::Evaluate evaluate(model, validation);
  dptrain::ProgressBar progress;  // prints on rank 0
  const dptrain::FitReport report = trainer.fit(model, theta, train, evaluate, progress);

  if (!processes.lead()) return 0;  // every rank holds the same θ: rank 0 reports
  const double accuracy = dptrain::accuracy(model, theta, test, o.threads);
  std::printf("validation accuracy per epoch:");
  for (double a : evaluate.history()) std::printf(" %.4f", a);
  const std::string workers = processes.describe(examples::threads_text(report.threads));
  const std::string exchange = o.synchronizer == "backup" ? "backup workers" : o.aggregator;
  std::printf("\n%s, %s, %s: %ld epochs on %s in %.1f s (%.0f samples/s)\ntest accuracy: %.2f%%\n", o.model.c_str(),
              o.optimizer.c_str(), exchange.c_str(), long(report.epochs), workers.c_str(), report.seconds,
              report.samples_per_second(), 100 * accuracy);
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

template <class Aggregator, class Optimizer, class Model, class Data>
int with_communicator(const Model& model, Optimizer optimizer, const Run<Data>& r) {
  return r.processes.with_communicator([&](auto communicator) {
    return train<Aggregator>(model, optimizer, communicator, r.train, r.validation, r.test, r.options, r.processes);
  });
}

template <class Optimizer, class Model, class Data>
int with_aggregator(const Model& model, Optimizer optimizer, const Run<Data>& r) {
  if (r.options.synchronizer == "backup") return with_communicator<dptrain::BackupWorkers>(model, optimizer, r);
  const std::string& name = r.options.aggregator;
  if (name == "ring") return with_communicator<dptrain::RingAllReduceAggregator>(model, optimizer, r);
  if (name == "tree") return with_communicator<dptrain::TreeAggregator>(model, optimizer, r);
  if (name == "serial") return with_communicator<dptrain::SerialAggregator>(model, optimizer, r);
  return with_communicator<dptrain::ReduceScatterAggregator>(model, optimizer, r);
}

template <class Model, class Data>
int with_optimizer(const Model& model, const Run<Data>& r) {
  const Options& o = r.options;
  if (o.optimizer == "sgd") return with_aggregator(model, dptrain::Sgd{.lr = o.lr}, r);
  if (o.optimizer == "adam") return with_aggregator(model, dptrain::Adam{.lr = o.lr}, r);
  if (o.optimizer == "adamw") return with_aggregator(model, dptrain::AdamW{.lr = o.lr}, r);
  return with_aggregator(model, dptrain::Momentum{.lr = o.lr, .momentum = 0.9}, r);
}

}  // namespace

int main(int argc, char** argv) {
  const examples::Processes processes(argc, argv);
  Options o;
  CLI::App app("Train on Fashion-MNIST (Debian's dataset-fashion-mnist) on every core");
  app.add_option("--model", o.model, "softmax or mlp (784-256-10)")->check(CLI::IsMember({"softmax", "mlp"}));
  app.add_option("--threads", o.threads,
                 "worker threads (per rank under mpirun; default: all cores, shared by the ranks)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "global minibatch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", o.epochs, "passes over the data (default: 15 mlp, 10 softmax)")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr", o.lr, "peak learning rate of the cosine schedule (default: per model and optimizer)")
      ->check(CLI::PositiveNumber);
  app.add_option("--optimizer", o.optimizer, "sgd, momentum, adam or adamw")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}));
  app.add_option("--aggregator", o.aggregator, "reduce-scatter, ring, tree or serial")
      ->check(CLI::IsMember({"reduce-scatter", "ring", "tree", "serial"}));
  app.add_option("--synchronizer", o.synchronizer,
                 "every-step (synchronous SGD) or backup (the same steps with no barrier, for cores shared with "
                 "busy processes; one process)")
      ->check(CLI::IsMember({"every-step", "backup"}));
  app.add_option("--seed", o.seed, "seed of the initialisation, the split and the shuffle");
  app.add_flag("--bytes", o.bytes,
               "keep the pixels as bytes, read as pixel · 1/255 (a quarter of the memory and of the bytes each "
               "shuffled batch reads)");
  CLI11_PARSE(app, argc, argv);
  if (o.synchronizer == "backup" && processes.ranks() > 1) {
    if (processes.lead()) std::fprintf(stderr, "fashion_mnist: --synchronizer backup runs in one process\n");
    return 2;
  }

  const bool mlp = o.model == "mlp";
  if (o.epochs == 0) o.epochs = mlp ? 15 : 10;
  if (o.lr == 0) {
    const bool adaptive = o.optimizer == "adam" || o.optimizer == "adamw";
    o.lr = adaptive ? 1e-3 : o.optimizer == "sgd" ? (mlp ? 0.2 : 0.5) : (mlp ? 0.05 : 0.05);
  }

  const std::string workers = processes.describe(examples::threads_text(o.threads));
  if (processes.lead()) std::printf("%s\n", examples::machine_line(workers).c_str());
  // Every rank loads the whole data set and splits it alike (same seed): one global step of all ranks.
  const auto run_on = [&](const auto& fashion) {
    auto [train, validation] = dptrain::train_validation_split(fashion.train, 5000.0 / 60000.0, o.seed);
    if (processes.lead())
      std::printf("%ld training, %ld validation, %ld test samples%s; %s on %s, batch %ld, lr %g\n", long(train.size()),
                  long(validation.size()), long(fashion.test.size()), o.bytes ? " (pixels as bytes)" : "",
                  o.model.c_str(), workers.c_str(), long(o.batch), o.lr);
    const Run<decltype(train)> run{train, validation, fashion.test, o, processes};
    if (mlp) return with_optimizer(dptrain::Mlp<float>({784, 256, 10}), run);
    return with_optimizer(dptrain::SoftmaxRegression<float>(784, 10), run);
  };
  if (o.bytes) return run_on(examples::load_fashion_mnist_bytes(processes.lead()));
  return run_on(examples::load_fashion_mnist(processes.lead()));
}
