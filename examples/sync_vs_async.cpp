// SPDX-License-Identifier: MIT
// sync_vs_async: when to synchronise. One problem, trained by every synchronizer the library
// offers, with one worker slowed down (0 %, 20 %, 100 % more compute) and once beside a busy
// process: the wall time each takes to reach a target training loss, its final validation
// accuracy, and where each worker's time went. A table, a CSV of the loss against wall time
// (examples/plot_sync_vs_async.sh draws it), and under `mpirun` the synchronous step against
// local SGD across the ranks, with the communication share of each.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "common/fashion_mnist_data.hpp"
#include "common/processes.hpp"

namespace {

struct Options {
  dptrain::Index threads = examples::Processes::default_threads();
  dptrain::Index batch = 128;
  dptrain::Index epochs = 10;
  dptrain::Index train_size = 0;  // 0: every training sample
  double lr = 0.1;                // plain SGD; Hogwild! takes lr / workers (each worker's update is one step)
  double target = 0;              // 0: 1.1 × the first run's final loss
  std::vector<double> slowdowns{0, 0.2, 1};
  bool busy = true;  // also a scenario beside a busy process (one process only)
  std::vector<std::string> modes{"sync", "backup", "local4", "local16", "ssp2", "hogwild"};
  std::string libsvm;  // a LIBSVM file: sparse softmax regression on it instead of the MLP
  std::string csv = "sync_vs_async";
  bool no_window = false;  // under mpirun: no shared-memory window, so the ranks talk through the transport
  std::uint64_t seed = 1;
};

/// A scenario: one worker (rank 1) slowed by `slowdown` times its compute, or a busy process beside the run.
struct Scenario {
  std::string name;
  double slowdown = 0;
  bool busy = false;
};

/// The training loss at every epoch's end, against the wall time since fit() began.
class LossClock {
 public:
  struct Point {
    double seconds, loss;
  };
  template <class Scalar>
  void on_fit_begin(dptrain::TrainContext<Scalar>&) {
    start_ = std::chrono::steady_clock::now();
    points_.clear();
  }
  template <class Scalar>
  bool on_epoch_end(dptrain::TrainContext<Scalar>& ctx) {
    points_.push_back({std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(), ctx.loss});
    return false;
  }
  [[nodiscard]] const std::vector<Point>& points() const { return points_; }

  /// When the loss first reached `target`, interpolated between epoch ends; negative if never.
  [[nodiscard]] double seconds_to(double target) const {
    for (std::size_t e = 0; e < points_.size(); ++e) {
      if (points_[e].loss > target) continue;
      if (e == 0) return points_[0].seconds;
      const Point& a = points_[e - 1];
      const Point& b = points_[e];
      return a.seconds + (b.seconds - a.seconds) * (a.loss - target) / (a.loss - b.loss);
    }
    return -1;
  }

 private:
  std::chrono::steady_clock::time_point start_;
  std::vector<Point> points_;
};

struct Result {
  std::string scenario, mode;
  LossClock clock;
  dptrain::FitReport report;
  double accuracy = 0;
};

/// A process that keeps one core busy until it is destroyed (the "busy" scenario).
class BusyProcess {
 public:
  explicit BusyProcess(bool start) {
    if (!start) return;
    pid_ = fork();
    if (pid_ == 0) {  // the child only spins: it calls nothing the parent's threads hold
      std::atomic<unsigned long> spins{0};
      for (;;) spins.fetch_add(1, std::memory_order_relaxed);
    }
    if (pid_ < 0) throw dptrain::error("sync_vs_async: fork failed");
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;
  ~BusyProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = 0;
};

template <class Model, class Data, class Communicator, class Synchronizer>
Result train_once(const Model& model, const Data& train, const Data& validation, const Options& o,
                  const Scenario& scenario, const std::string& mode, Synchronizer synchronizer,
                  Communicator communicator, dptrain::Index workers) {
  const bool hogwild = mode.starts_with("hogwild");
  const dptrain::StragglerWorker<> worker{.ranks = {1}, .slowdown = scenario.slowdown};
  dptrain::DataParallelTrainer trainer(
      {.threads = o.threads, .batch_size = o.batch, .epochs = o.epochs, .seed = o.seed},
      dptrain::Sgd{.lr = hogwild ? o.lr / static_cast<double>(workers) : o.lr}, worker, synchronizer, communicator);
  Result r{scenario.name, mode, {}, {}, 0};
  dptrain::Vector<float> theta = model.init_parameters(o.seed);
  {
    const BusyProcess busy(scenario.busy);
    r.report = trainer.fit(model, theta, train, r.clock);
  }
  r.accuracy = dptrain::accuracy(model, theta, validation, o.threads);
  return r;
}

/// "63/35 98/0": each worker's compute and wait, in % of its time.
std::string shares(const dptrain::FitReport& report) {
  std::string text;
  for (const dptrain::WorkerReport& w : report.workers) {
    char cell[32];
    std::snprintf(cell, sizeof cell, "%s%.0f/%.0f", text.empty() ? "" : " ", 100 * w.compute / w.seconds(),
                  100 * w.wait / w.seconds());
    text += cell;
  }
  return text;
}

/// The mean share of the workers' time spent reducing (the step's communication).
double communication_share(const dptrain::FitReport& report) {
  double share = 0;
  for (const dptrain::WorkerReport& w : report.workers) share += w.aggregate / w.seconds();
  return share / static_cast<double>(report.workers.size());
}

class Study {
 public:
  Study(const Options& o, const examples::Processes& processes) : o_(o), processes_(processes) {}

  /// Every scenario × mode, in order; the table on rank 0 as it goes.
  template <class Model, class Data>
  void run(const Model& model, const Data& train, const Data& validation) {
    std::vector<Scenario> scenarios;
    for (double s : o_.slowdowns) {
      char name[32];
      std::snprintf(name, sizeof name, "slow %.0f%%", 100 * s);
      scenarios.push_back({name, s, false});
    }
    if (o_.busy && processes_.ranks() == 1) scenarios.push_back({"busy process", 0, true});
    say("%-13s %-14s %9s %7s %8s %7s  %s\n", "scenario", "mode", "to target", "vs sync", "loss", "val acc",
        processes_.ranks() > 1 ? "communication" : "compute/wait % per worker");
    for (const Scenario& scenario : scenarios) {
      double sync_seconds = -1;
      for (const std::string& mode : o_.modes) {
        if (!runs_across_ranks(mode)) continue;
        Result r = processes_.with_communicator([&](auto communicator) {
          if (processes_.ranks() > 1) communicator = configured(communicator);
          return by_mode(model, train, validation, scenario, mode, communicator);
        });
        if (target_ == 0) target_ = o_.target > 0 ? o_.target : 1.1 * r.report.epoch_loss.back();
        const double seconds = r.clock.seconds_to(target_);
        if (mode == "sync") sync_seconds = seconds;
        char ratio[16] = "-";
        if (seconds > 0 && sync_seconds > 0) std::snprintf(ratio, sizeof ratio, "%.2f", seconds / sync_seconds);
        char shown[16] = "not reached";
        if (seconds > 0) std::snprintf(shown, sizeof shown, "%.2f s", seconds);
        char communication[16];
        std::snprintf(communication, sizeof communication, "%.1f%%", 100 * communication_share(r.report));
        say("%-13s %-14s %9s %7s %8.4f %6.2f%%  %s\n", scenario.name.c_str(), mode.c_str(), shown, ratio,
            r.report.epoch_loss.back(), 100 * r.accuracy,
            processes_.ranks() > 1 ? communication : shares(r.report).c_str());
        results_.push_back(std::move(r));
      }
    }
    say("to target: wall time until the epoch's mean training loss reached %.4f (%s), between epoch ends\n", target_,
        o_.target > 0 ? "--target" : "1.1 × the first run's final loss");
    write_csv();
  }

 private:
  // Across ranks the modes of one process (BackupWorkers, BoundedStaleness, Hogwild!) are left out.
  [[nodiscard]] bool runs_across_ranks(const std::string& mode) const {
    return processes_.ranks() == 1 || mode == "sync" || mode.starts_with("local");
  }

  template <class Communicator>
  [[nodiscard]] Communicator configured(Communicator communicator) const {
#ifdef DPTRAIN_EXAMPLES_MPI
    if constexpr (std::is_same_v<Communicator, dptrain::MpiCommunicator>)
      if (o_.no_window) communicator.node = MPI_COMM_SELF;
#endif
    return communicator;
  }

  template <class Model, class Data, class Communicator>
  Result by_mode(const Model& model, const Data& train, const Data& validation, const Scenario& scenario,
                 const std::string& mode, Communicator communicator) {
    const dptrain::Index workers = o_.threads * processes_.ranks();
    auto run = [&](auto synchronizer) {
      return train_once(model, train, validation, o_, scenario, mode, synchronizer, communicator, workers);
    };
    if (mode.starts_with("local")) return run(dptrain::LocalSgd{.period = std::stol(mode.substr(5))});
    if constexpr (std::is_same_v<Communicator, dptrain::SingleProcessCommunicator>) {
      if (mode == "backup") return run(dptrain::BackupWorkers{});
      if (mode.starts_with("ssp")) return run(dptrain::BoundedStaleness{.staleness = std::stol(mode.substr(3))});
      if (mode.starts_with("hogwild")) return run(dptrain::Hogwild{.atomic_adds = mode == "hogwild-atomic"});
    }
    return run(dptrain::EveryStepSynchronizer{});
  }

  // Two files: one row per run, and the loss curves (one row per run and epoch).
  void write_csv() const {
    if (!processes_.lead() || o_.csv.empty()) return;
    std::ofstream runs(o_.csv + ".csv"), curves(o_.csv + "_curves.csv");
    runs << "scenario,mode,seconds_to_target,target,final_loss,val_accuracy,seconds,communication";
    for (std::size_t t = 0; t < results_.front().report.workers.size(); ++t) runs << ",compute_" << t << ",wait_" << t;
    runs << '\n';
    curves << "scenario,mode,epoch,seconds,loss\n";
    for (const Result& r : results_) {
      runs << r.scenario << ',' << r.mode << ',' << r.clock.seconds_to(target_) << ',' << target_ << ','
           << r.report.epoch_loss.back() << ',' << r.accuracy << ',' << r.report.seconds << ','
           << communication_share(r.report);
      for (const dptrain::WorkerReport& w : r.report.workers)
        runs << ',' << w.compute / w.seconds() << ',' << w.wait / w.seconds();
      runs << '\n';
      for (std::size_t e = 0; e < r.clock.points().size(); ++e)
        curves << r.scenario << ',' << r.mode << ',' << e + 1 << ',' << r.clock.points()[e].seconds << ','
               << r.clock.points()[e].loss << '\n';
    }
    if (!runs || !curves) throw dptrain::error("sync_vs_async: could not write " + o_.csv + ".csv");
    std::printf("wrote %s.csv and %s_curves.csv (plot: examples/plot_sync_vs_async.sh %s_curves.csv)\n", o_.csv.c_str(),
                o_.csv.c_str(), o_.csv.c_str());
  }

  template <class... Args>
  void say(const char* format, Args... args) const {
    if (processes_.lead()) std::printf(format, args...);
  }

  const Options& o_;
  const examples::Processes& processes_;
  std::vector<Result> results_;
  double target_ = 0;
};

/// The first `size` rows (all of them for 0).
template <class Data>
Data first_rows(const Data& data, dptrain::Index size) {
  std::vector<dptrain::Index> rows(static_cast<std::size_t>(size > 0 ? std::min(size, data.size()) : data.size()));
  std::iota(rows.begin(), rows.end(), dptrain::Index{0});
  return dptrain::subset(data, rows);
}

template <class Model, class Data>
void study(const Model& model, const Data& data, const std::string& what, const Options& o,
           const examples::Processes& processes) {
  auto [train, validation] = dptrain::train_validation_split(data, 0.1, o.seed);
  train = first_rows(train, o.train_size);
  if (processes.lead())
    std::printf(
        "%s: %ld training, %ld validation samples; %s, batch %ld, SGD lr %g (Hogwild! lr / workers), %ld epochs\n",
        what.c_str(), long(train.size()), long(validation.size()),
        processes.describe(examples::threads_text(o.threads)).c_str(), long(o.batch), o.lr, long(o.epochs));
  Study(o, processes).run(model, train, validation);
}

}  // namespace

int main(int argc, char** argv) try {
  const examples::Processes processes(argc, argv);
  Options o;
  CLI::App app("When to synchronise: every synchronizer on one problem, with a slow worker and beside a busy process");
  app.add_option("--threads", o.threads, "worker threads (per rank under mpirun)")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "global minibatch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", o.epochs, "passes over the training data")->check(CLI::PositiveNumber);
  app.add_option("--train-size", o.train_size, "train on the first N training samples (default: all)")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr", o.lr, "learning rate of plain SGD (Hogwild!: divided by the workers)")
      ->check(CLI::PositiveNumber);
  app.add_option("--target", o.target, "training loss to time (default: 1.1 × the first run's final loss)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slowdowns", o.slowdowns,
                 "worker 1's extra compute, as fractions of its own (one scenario each; default 0 0.2 1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--busy", o.busy, "also a scenario beside a busy process (true or false)");
  app.add_option(
      "--modes", o.modes,
      "sync backup local<H> ssp<s> hogwild hogwild-atomic (default: sync backup local4 local16 ssp2 hogwild)");
  app.add_option("--libsvm", o.libsvm, "sparse softmax regression on this LIBSVM file instead of the Fashion-MNIST MLP")
      ->check(CLI::ExistingFile);
  app.add_option("--csv", o.csv, "write BASE.csv (one row per run) and BASE_curves.csv (\"\": none)");
  app.add_flag("--no-window", o.no_window,
               "under mpirun: no shared-memory window between the ranks, so they talk through the transport "
               "(with --mca btl self,tcp: TCP on loopback, as between machines)");
  app.add_option("--seed", o.seed, "seed of the initialisation, the split and the shuffle");
  CLI11_PARSE(app, argc, argv);
  for (const std::string& mode : o.modes) {
    const bool known = mode == "sync" || mode == "backup" || mode == "hogwild" || mode == "hogwild-atomic" ||
                       (mode.starts_with("local") && mode.size() > 5) || (mode.starts_with("ssp") && mode.size() > 3);
    if (!known)
      throw dptrain::error("unknown mode '" + mode + "' (sync backup local<H> ssp<s> hogwild hogwild-atomic)");
  }

  if (!o.libsvm.empty()) {
    const auto data = dptrain::read_libsvm<float, dptrain::Label>(o.libsvm, {.labels = dptrain::LabelMode::multiclass});
    const auto classes = static_cast<dptrain::Index>(data.classes.size());
    study(dptrain::SparseSoftmaxRegression<float>(data.data.dim(), classes), data.data,
          o.libsvm + " (sparse softmax regression)", o, processes);
  } else {
    const examples::FashionMnist fashion = examples::load_fashion_mnist(processes.lead());
    study(dptrain::Mlp<float>({784, 256, 10}), fashion.train,
          fashion.generated ? "generated Fashion-MNIST-like data, MLP 784-256-10" : "Fashion-MNIST, MLP 784-256-10", o,
          processes);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sync_vs_async: %s\n", e.what());
  return 1;
}
