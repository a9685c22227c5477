// SPDX-License-Identifier: MIT
// thread_scaling: the same training at 1, 2, … all threads; seconds per epoch, speedup, parallel
// efficiency, where the time goes (compute / wait / aggregate / update) and how the minibatch was
// split, per aggregator; --partitioner balancing lets the split follow each core's speed. Under
// `mpirun -np R` (examples built with the MPI component) a grid: 1 … R ranks × 1 … T threads.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "common/fashion_mnist_data.hpp"
#include "common/machine.hpp"
#include "common/processes.hpp"

namespace {

struct Options {
  std::string model = "mlp";
  std::string aggregator = "reduce-scatter";
  std::string partitioner = "even";
  dptrain::Index max_threads = examples::Processes::default_threads();
  dptrain::Index batch = 256;
  dptrain::Index epochs = 1;
  dptrain::Index samples = 60000;
  std::string precision = "full";  // the MLP's products: full (fp32) or bf16
};

std::vector<dptrain::Index> thread_counts(dptrain::Index max) {
  std::vector<dptrain::Index> counts;
  for (dptrain::Index t = 1; t <= max; t = t < 8 ? t + 1 : t * 2) counts.push_back(t);
  if (counts.back() != max) counts.push_back(max);
  return counts;
}

using Data = dptrain::DenseDataset<float, dptrain::Label>;

template <class Partitioner, class Model>
void scale(const dptrain::AnyAggregator& aggregator, const Model& model, const Data& data, const Options& o,
           const examples::Processes& processes) {
  if (processes.lead()) {
    const std::string name(aggregator.name());
    const std::string model_text = o.precision == "bf16" ? o.model + " (bf16 products)" : o.model;
    std::printf("\n%s, %s, %s split, batch %ld, %ld samples, %ld epoch(s)\n", model_text.c_str(), name.c_str(),
                o.partitioner.c_str(), long(o.batch), long(data.size()), long(o.epochs));
    std::printf(
        "ranks  threads  s/epoch  samples/s  speedup  efficiency   compute    wait  aggregate  update   hooks  share "
        "min-max\n");
  }
  double base = 0;  // 1 rank × 1 thread
  for (int ranks = 1; ranks <= processes.ranks(); ++ranks) {
    processes.on_first_ranks(ranks, [&](auto communicator) {
      for (dptrain::Index threads : thread_counts(o.max_threads)) {
        dptrain::Vector<float> theta = model.init_parameters(1);
        dptrain::DataParallelTrainer trainer({.threads = threads, .batch_size = o.batch, .epochs = o.epochs, .seed = 1},
                                             dptrain::Momentum{.lr = 0.05}, aggregator, Partitioner{}, communicator);
        const dptrain::FitReport report = trainer.fit(model, theta, data);
        const double per_epoch = report.seconds / static_cast<double>(report.epochs);
        if (ranks == 1 && threads == 1) base = per_epoch;
        if (!processes.lead()) continue;
        const auto workers = static_cast<double>(ranks * threads);
        dptrain::WorkerReport mean;  // over rank 0's threads
        // Each worker's samples as a multiple of the even share: 1.00-1.00 is an even split.
        double fewest = std::numeric_limits<double>::infinity(), most = 0;
        for (const dptrain::WorkerReport& w : report.workers) {
          const double share = static_cast<double>(w.samples) * workers / static_cast<double>(report.samples);
          fewest = std::min(fewest, share);
          most = std::max(most, share);
          mean.compute += w.compute / static_cast<double>(threads);
          mean.wait += w.wait / static_cast<double>(threads);
          mean.aggregate += w.aggregate / static_cast<double>(threads);
          mean.update += w.update / static_cast<double>(threads);
          mean.hooks += w.hooks / static_cast<double>(threads);
        }
        // The phases add up to the wall time of the fit (hooks: the per-epoch shuffle).
        const double total = mean.seconds();
        std::printf(
            "%5d  %7ld  %7.3f  %9.0f  %7.2f  %9.0f%%  %7.1f%%  %5.1f%%  %8.1f%%  %5.1f%%  %5.1f%%  %5.2f-%.2f\n", ranks,
            long(threads), per_epoch, report.samples_per_second(), base / per_epoch, 100.0 * base / per_epoch / workers,
            100 * mean.compute / total, 100 * mean.wait / total, 100 * mean.aggregate / total,
            100 * mean.update / total, 100 * mean.hooks / total, fewest, most);
      }
    });
  }
}

// One trainer type for the four aggregators (AnyAggregator): a quarter of the instantiations.
template <class Partitioner, class Model>
void scale_all(const Model& model, const Data& data, const Options& o, const examples::Processes& processes) {
  for (const std::string_view name : dptrain::AnyAggregator::names)
    if (o.aggregator == "all" || o.aggregator == name)
      scale<Partitioner>(dptrain::AnyAggregator::named(name), model, data, o, processes);
}

template <class Model>
void scale_all(const Model& model, const Data& data, const Options& o, const examples::Processes& processes) {
  if (o.partitioner == "balancing")
    scale_all<dptrain::BalancingPartitioner>(model, data, o, processes);
  else
    scale_all<dptrain::EvenPartitioner>(model, data, o, processes);
}

}  // namespace

int main(int argc, char** argv) {
  const examples::Processes processes(argc, argv);
  Options o;
  CLI::App app("Thread scaling of one training run on Fashion-MNIST (or generated data of its shape)");
  app.add_option("--model", o.model, "softmax or mlp (784-256-10)")->check(CLI::IsMember({"softmax", "mlp"}));
  app.add_option("--aggregator", o.aggregator, "reduce-scatter, ring, tree, serial or all")
      ->check(CLI::IsMember({"reduce-scatter", "ring", "tree", "serial", "all"}));
  app.add_option("--partitioner", o.partitioner,
                 "even (equal micro-batches) or balancing (micro-batches follow each core's measured speed)")
      ->check(CLI::IsMember({"even", "balancing"}));
  app.add_option("--max-threads", o.max_threads,
                 "largest thread count (per rank under mpirun; default: all cores, shared by the ranks)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "global minibatch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", o.epochs, "epochs per measurement")->check(CLI::PositiveNumber);
  app.add_option("--samples", o.samples, "training samples used (at most 60000)")->check(CLI::PositiveNumber);
  app.add_option("--precision", o.precision,
                 "the MLP's matrix products: full (fp32) or bf16 (inputs rounded to bfloat16, fp32 accumulation)")
      ->check(CLI::IsMember({"full", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  if (o.precision == "bf16" && o.model != "mlp") {
    if (processes.lead()) std::fprintf(stderr, "thread_scaling: --precision bf16 is an option of --model mlp\n");
    return 2;
  }

  const std::string threads = "1 to " + std::to_string(o.max_threads) + " threads";
  if (processes.lead())
    std::printf("%s\n", examples::machine_line(processes.ranks() > 1
                                                   ? "1 to " + std::to_string(processes.ranks()) + " ranks × " + threads
                                                   : threads)
                            .c_str());
  if (processes.lead() && o.precision == "bf16")
    std::printf("bf16 products: %s\n", std::string(dptrain::bf16_kernel_name()).c_str());
  examples::FashionMnist fashion = examples::load_fashion_mnist(processes.lead());
  auto& data = fashion.train;
  if (o.samples < data.size()) {
    data.features.conservativeResize(o.samples, Eigen::NoChange);
    data.targets.conservativeResize(o.samples);
  }
  if (o.model == "softmax")
    scale_all(dptrain::SoftmaxRegression<float>(784, 10), data, o, processes);
  else
    scale_all(dptrain::Mlp<float>({784, 256, 10},
                                  o.precision == "bf16" ? dptrain::Precision::bf16 : dptrain::Precision::full),
              data, o, processes);
}
