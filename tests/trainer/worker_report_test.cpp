// SPDX-License-Identifier: MIT
// WorkerReport: each worker's phases add up to the fit's wall time; a straggler shows as the others' wait.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

// A hook at every hook point that also hands work to ctx.team, so that every phase occurs.
struct BusyHooks {
  double sum = 0;
  void on_epoch_begin(dptrain::TrainContext<double>& ctx) { work(ctx); }
  void on_step_end(dptrain::TrainContext<double>& ctx) { work(ctx); }
  void on_epoch_end(dptrain::TrainContext<double>& ctx) { work(ctx); }
  void work(dptrain::TrainContext<double>& ctx) {
    ctx.team.run([&](const dptrain::TeamMember& me) {
      if (me.rank == 0) sum += ctx.theta.sum();
      me.barrier();
    });
  }
};

}  // namespace

TEST_CASE("WorkerReport: compute + wait + aggregate + update + hooks is the fit's wall time for every worker",
          "[trainer]") {
  const Index threads = GENERATE(1, 2, 3);
  const dptrain::WaitPolicy policy = GENERATE(dptrain::WaitPolicy::openmp, dptrain::WaitPolicy::spin_then_sleep);
  const auto data = test::linear_data<double>(300, 6, 2);
  const dptrain::LinearRegression<double> model(6);
  dptrain::Vector<double> theta = model.init_parameters();
  BusyHooks hooks;
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = threads, .batch_size = 16, .epochs = 4, .wait_policy = policy},
                                   dptrain::Adam{.lr = 0.01}, dptrain::RingAllReduceAggregator{})
          .fit(model, theta, data, hooks);
  REQUIRE(report.workers.size() == static_cast<std::size_t>(threads));
  Index samples = 0;
  for (const dptrain::WorkerReport& worker : report.workers) {
    CHECK(worker.seconds() == Approx(report.seconds).epsilon(0.01));
    CHECK(worker.compute > 0);
    CHECK(worker.aggregate >= 0);
    CHECK(worker.update > 0);
    CHECK(worker.wait >= 0);
    CHECK(worker.hooks > 0);
    samples += worker.samples;
  }
  CHECK(samples == report.samples);
}

TEST_CASE("WorkerReport: a straggler's delay is its compute and the other workers' wait", "[trainer][workers]") {
  using namespace std::chrono_literals;
  const auto data = test::linear_data<double>(200, 4, 1);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::WaitPolicy policy = GENERATE(dptrain::WaitPolicy::openmp, dptrain::WaitPolicy::spin_then_sleep);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 10, .epochs = 1, .wait_policy = policy};
  constexpr auto delay = 3ms;
  const dptrain::StragglerWorker<> slow{.ranks = {1}, .delay = delay};

  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport delayed =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, slow).fit(model, theta, data);
  REQUIRE(delayed.steps == 20);
  const double added = static_cast<double>(delayed.steps) * std::chrono::duration<double>(delay).count();

  // The slow worker computes the delay on top of the work both do; the fast one waits for it at
  // the barrier after the local gradients, as long. Sleeps only overshoot, and a shared machine
  // adds noise to either worker (which then shows on both sides), hence the loose bounds.
  const dptrain::WorkerReport& fast = delayed.workers[0];
  const dptrain::WorkerReport& straggler = delayed.workers[1];
  const double extra_compute = straggler.compute - fast.compute;
  const double extra_wait = fast.wait - straggler.wait;
  CHECK(extra_compute >= 0.9 * added);
  CHECK(extra_wait >= 0.7 * added);
  CHECK(std::abs(extra_wait - extra_compute) <= 0.3 * extra_compute);
  for (const dptrain::WorkerReport& worker : delayed.workers)
    CHECK(worker.seconds() == Approx(delayed.seconds).epsilon(0.01));
}
