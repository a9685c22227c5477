// SPDX-License-Identifier: MIT
// oversubscription_epoch: seconds per epoch of one training run (MLP 784-256-10 by default) on
// Fashion-MNIST (or generated data of its shape), for one thread count and one wait policy, in
// one line that benchmarks/oversubscription.sh reads; it runs them in alternating rounds.
//   benchmarks/oversubscription_epoch --threads 2 --wait spin-then-sleep
//   OMP_WAIT_POLICY=passive benchmarks/oversubscription_epoch --threads 8 --wait openmp
// Options: --threads N (default: all available cores), --wait openmp|spin-then-sleep (openmp),
// --spin-us S (spin_microseconds, 50), --partitioner even|balancing (even), --model mlp|softmax
// (mlp), --batch B (256), --epochs E (1), --samples N (60000), --synchronizer every-step|backup
// (every-step; backup: dptrain::BackupWorkers), --chunks C (BackupWorkers' chunks, 0: its default).
#include <dptrain/dptrain.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/fashion_mnist_data.hpp"

namespace {

struct Options {
  dptrain::Index threads = dptrain::available_cores();
  std::string wait = "openmp";
  double spin_us = 50;
  std::string partitioner = "even";
  std::string model = "mlp";
  dptrain::Index batch = 256;
  dptrain::Index epochs = 1;
  dptrain::Index samples = 60000;
  std::string synchronizer = "every-step";
  dptrain::Index chunks = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "oversubscription_epoch: %s\n"
               "usage: oversubscription_epoch [--threads N] [--wait openmp|spin-then-sleep] [--spin-us S]\n"
               "         [--partitioner even|balancing] [--model mlp|softmax] [--batch B] [--epochs E] "
               "[--samples N]\n"
               "         [--synchronizer every-step|backup] [--chunks C]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage(("no value after " + key).c_str());
    const std::string value = argv[i + 1];
    if (key == "--threads") {
      o.threads = std::atol(value.c_str());
    } else if (key == "--wait") {
      o.wait = value;
    } else if (key == "--spin-us") {
      o.spin_us = std::atof(value.c_str());
    } else if (key == "--partitioner") {
      o.partitioner = value;
    } else if (key == "--model") {
      o.model = value;
    } else if (key == "--batch") {
      o.batch = std::atol(value.c_str());
    } else if (key == "--epochs") {
      o.epochs = std::atol(value.c_str());
    } else if (key == "--samples") {
      o.samples = std::atol(value.c_str());
    } else if (key == "--synchronizer") {
      o.synchronizer = value;
    } else if (key == "--chunks") {
      o.chunks = std::atol(value.c_str());
    } else {
      usage(("unknown option " + key).c_str());
    }
  }
  if (o.wait != "openmp" && o.wait != "spin-then-sleep") usage("--wait must be openmp or spin-then-sleep");
  if (o.partitioner != "even" && o.partitioner != "balancing") usage("--partitioner must be even or balancing");
  if (o.model != "mlp" && o.model != "softmax") usage("--model must be mlp or softmax");
  if (o.synchronizer != "every-step" && o.synchronizer != "backup")
    usage("--synchronizer must be every-step or backup");
  if (o.threads < 1 || o.batch < 1 || o.epochs < 1 || o.samples < 1) usage("counts must be positive");
  return o;
}

template <class Partitioner, class Model, class Synchronizer>
void run(const Model& model, const dptrain::DenseDataset<float, dptrain::Label>& data, const Options& o,
         const Synchronizer& synchronizer) {
  dptrain::Vector<float> theta = model.init_parameters(1);
  const dptrain::TrainerOptions options{
      .threads = o.threads,
      .batch_size = o.batch,
      .epochs = o.epochs,
      .seed = 1,
      .wait_policy = o.wait == "openmp" ? dptrain::WaitPolicy::openmp : dptrain::WaitPolicy::spin_then_sleep,
      .spin_microseconds = o.spin_us};
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}, Partitioner{}, synchronizer)
          .fit(model, theta, data);
  double wait = 0, total = 0;
  for (const dptrain::WorkerReport& worker : report.workers) {
    wait += worker.wait;
    total += worker.seconds();
  }
  std::printf("s/epoch %.6f wait-share %.3f other-load %.2f threads %ld cores %ld oversubscribed %d\n",
              report.seconds / static_cast<double>(report.epochs), total > 0 ? wait / total : 0.0, report.other_load,
              long(report.threads), long(report.cores), report.oversubscribed() ? 1 : 0);
}

template <class Model>
void run(const Model& model, const dptrain::DenseDataset<float, dptrain::Label>& data, const Options& o) {
  if (o.synchronizer == "backup")
    run<dptrain::EvenPartitioner>(model, data, o, dptrain::BackupWorkers{.chunks = o.chunks});
  else if (o.partitioner == "balancing")
    run<dptrain::BalancingPartitioner>(model, data, o, dptrain::EveryStepSynchronizer{});
  else
    run<dptrain::EvenPartitioner>(model, data, o, dptrain::EveryStepSynchronizer{});
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  examples::FashionMnist fashion = examples::load_fashion_mnist();
  auto& data = fashion.train;
  if (o.samples < data.size()) {
    data.features.conservativeResize(o.samples, Eigen::NoChange);
    data.targets.conservativeResize(o.samples);
  }
  if (o.model == "mlp")
    run(dptrain::Mlp<float>({784, 256, 10}), data, o);
  else
    run(dptrain::SoftmaxRegression<float>(784, 10), data, o);
}
