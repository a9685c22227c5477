// SPDX-License-Identifier: MIT
// WaitPolicy: both barriers give bitwise the same θ; FitReport says how many cores the process
// had, whether the team oversubscribed them, and how much of them other work took.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

// Every hook point, each handing work with barriers of its own to ctx.team, so that the
// HookChannel's posts and a user's barriers run on the policy's barrier too.
struct WaitPolicyHooks {
  double sum = 0;
  Index cores_at_begin = -1;
  bool oversubscribed_at_begin = false;
  void on_fit_begin(dptrain::TrainContext<float>& ctx) {
    cores_at_begin = ctx.report.cores;
    oversubscribed_at_begin = ctx.report.oversubscribed();
  }
  void on_step_end(dptrain::TrainContext<float>& ctx) { work(ctx); }
  void on_epoch_end(dptrain::TrainContext<float>& ctx) { work(ctx); }
  void work(dptrain::TrainContext<float>& ctx) {
    ctx.team.run([&](const dptrain::TeamMember& me) {
      me.barrier();
      if (me.rank == 0) sum += static_cast<double>(ctx.theta.sum());
      me.barrier();
    });
  }
};

template <class Aggregator>
dptrain::Vector<float> train_with(dptrain::TrainerOptions options, WaitPolicyHooks& hooks) {
  const auto data = test::cluster_data<float>(333, 12, 4, 21);
  const dptrain::Mlp<float> model({12, 16, 4});
  dptrain::Vector<float> theta = model.init_parameters(5);
  dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, Aggregator{}).fit(model, theta, data, hooks);
  return theta;
}

}  // namespace

TEMPLATE_TEST_CASE("WaitPolicy: spin_then_sleep gives bitwise the θ of the omp barrier", "[trainer][wait_policy]",
                   dptrain::ReduceScatterAggregator, dptrain::TreeAggregator, dptrain::RingAllReduceAggregator,
                   dptrain::SerialAggregator) {
  // 8 threads: more than the cores of a small machine (then the spin is off).
  const Index threads = GENERATE(1, 2, 3, 8);
  const double spin = GENERATE(0.0, 50.0);
  CAPTURE(threads, spin);
  dptrain::TrainerOptions options{.threads = threads, .batch_size = 24, .epochs = 3, .seed = 3};
  WaitPolicyHooks omp_hooks, own_hooks;
  const dptrain::Vector<float> expected = train_with<TestType>(options, omp_hooks);
  options.wait_policy = dptrain::WaitPolicy::spin_then_sleep;
  options.spin_microseconds = spin;
  const dptrain::Vector<float> theta = train_with<TestType>(options, own_hooks);
  CHECK((theta.array() == expected.array()).all());
  CHECK(own_hooks.sum == omp_hooks.sum);  // the hooks saw the same θ after every step
}

TEST_CASE("FitReport: cores is the process's available CPUs, and more threads than that is oversubscribed",
          "[trainer][wait_policy]") {
  const Index cores = dptrain::available_cores();
  REQUIRE(cores > 0);
  CHECK(cores <= static_cast<Index>(std::thread::hardware_concurrency()));
  const dptrain::WaitPolicy policy = GENERATE(dptrain::WaitPolicy::openmp, dptrain::WaitPolicy::spin_then_sleep);
  for (const Index threads : {Index{1}, cores, cores + 1, 2 * cores + 1}) {
    CAPTURE(threads);
    WaitPolicyHooks hooks;
    const dptrain::Vector<float> theta = train_with<dptrain::ReduceScatterAggregator>(
        {.threads = threads, .batch_size = 64, .epochs = 1, .wait_policy = policy}, hooks);
    CHECK(theta.allFinite());
    CHECK(hooks.cores_at_begin == cores);  // filled before on_fit_begin
    CHECK(hooks.oversubscribed_at_begin == (threads > cores));
  }
  dptrain::FitReport report;
  CHECK_FALSE(report.oversubscribed());  // nothing known yet
  CHECK(std::isnan(report.other_load));
  report.threads = 3;
  report.cores = 2;
  CHECK(report.oversubscribed());
  report.cores = 3;
  CHECK_FALSE(report.oversubscribed());
}

TEST_CASE(
    "TrainerOptions: a spin budget that is negative, not finite or over a second is refused, and an unknown "
    "wait policy",
    "[trainer][wait_policy]") {
  const auto data = test::cluster_data<float>(40, 3, 2, 1);
  const dptrain::SoftmaxRegression<float> model(3, 2);
  for (const double spin : {-1.0, std::numeric_limits<double>::quiet_NaN(), 2e6}) {
    dptrain::Vector<float> theta = model.init_parameters();
    dptrain::DataParallelTrainer trainer(
        {.threads = 2, .wait_policy = dptrain::WaitPolicy::spin_then_sleep, .spin_microseconds = spin},
        dptrain::Sgd{.lr = 0.1});
    CHECK_THROWS_WITH(trainer.fit(model, theta, data),
                      Catch::StartsWith("dptrain::DataParallelTrainer: spin_microseconds must be between 0 and 1e6"));
  }
  dptrain::Vector<float> theta = model.init_parameters();
  dptrain::DataParallelTrainer unknown({.threads = 2, .wait_policy = static_cast<dptrain::WaitPolicy>(7)},
                                       dptrain::Sgd{.lr = 0.1});
  CHECK_THROWS_WITH(unknown.fit(model, theta, data),
                    Catch::StartsWith("dptrain::DataParallelTrainer: wait_policy must be WaitPolicy::openmp or"));
}

TEST_CASE("FitReport: other_load sees a busy process beside the training", "[trainer][wait_policy]") {
  // A child process that keeps one CPU of this process's mask busy for the whole fit().
  const pid_t busy = fork();
  REQUIRE(busy >= 0);
  if (busy == 0)
    for (;;) __asm__ volatile("" ::: "memory");  // no library call, nothing a sanitizer intercepts
  const dptrain::SoftmaxRegression<double> model(20, 3);
  dptrain::DenseDataset<double, dptrain::Label> data{dptrain::RowMatrix<double>::Random(4000, 20),
                                                     dptrain::Vector<dptrain::Label>::Zero(4000)};
  dptrain::Vector<double> theta = model.init_parameters();
  // Epochs until the fit has lasted half a second: long enough for /proc/stat's ticks.
  dptrain::FitReport report;
  for (int epochs = 4; report.seconds < 0.5 && epochs < 4096; epochs *= 2) {
    report = dptrain::DataParallelTrainer({.threads = 1, .batch_size = 32, .epochs = epochs}, dptrain::Sgd{.lr = 0.1})
                 .fit(model, theta, data);
  }
  kill(busy, SIGKILL);
  waitpid(busy, nullptr, 0);
  INFO("fit of " << report.seconds << " s, other load " << report.other_load);
  // The child had a CPU to itself or shared one with this test: at least about half a core.
  CHECK(report.other_load > 0.3);
  CHECK(report.other_load <= static_cast<double>(dptrain::available_cores()) + 0.5);
}
