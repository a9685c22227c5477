// SPDX-License-Identifier: MIT
// ThreadTeam: a thread count opens a region per run(); a hook's ctx.team runs on the trainer's
// own waiting threads; both call f once per member and rethrow the first exception.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::TeamMember;

namespace {

// What one run() saw: which ranks were called, and on which OS threads.
struct RunLog {
  std::vector<std::atomic<int>> calls;
  std::vector<std::thread::id> threads;
  std::atomic<int> wrong_size{0};

  explicit RunLog(Index size) : calls(static_cast<std::size_t>(size)), threads(static_cast<std::size_t>(size)) {}

  void record(const TeamMember& me, Index size) {
    if (me.size != size || me.rank < 0 || me.rank >= size) {
      ++wrong_size;
      return;
    }
    ++calls[static_cast<std::size_t>(me.rank)];
    threads[static_cast<std::size_t>(me.rank)] = std::this_thread::get_id();
  }
  [[nodiscard]] bool each_rank_once() const {
    for (const auto& c : calls)
      if (c != 1) return false;
    return wrong_size == 0;
  }
  [[nodiscard]] bool distinct_threads() const {
    for (std::size_t a = 0; a < threads.size(); ++a)
      for (std::size_t b = a + 1; b < threads.size(); ++b)
        if (threads[a] == threads[b]) return false;
    return true;
  }
};

}  // namespace

TEST_CASE("ThreadTeam: a thread count runs f once on each of that many threads", "[trainer][thread_team]") {
  for (const Index threads : {1, 2, 3}) {
    const dptrain::ThreadTeam team(threads);
    CHECK(team.size() == threads);
    RunLog log(threads);
    std::vector<int> after_barrier(static_cast<std::size_t>(threads), 0);
    std::atomic<int> arrived{0};
    team.run([&](const TeamMember& me) {
      log.record(me, threads);
      ++arrived;
      me.barrier();  // every member reaches it
      after_barrier[static_cast<std::size_t>(me.rank)] = arrived.load();
    });
    CHECK(log.each_rank_once());
    CHECK(log.distinct_threads());
    for (const int seen : after_barrier) CHECK(seen == threads);
  }
  CHECK_THROWS_WITH(dptrain::ThreadTeam(0), Catch::Contains("dptrain::ThreadTeam: threads must be at least 1, got 0"));
}

TEST_CASE("ThreadTeam: the first exception of any member is rethrown with its type", "[trainer][thread_team]") {
  const dptrain::ThreadTeam team(3);
  std::atomic<int> calls{0};
  CHECK_THROWS_AS(team.run([&](const TeamMember& me) {
    ++calls;
    if (me.rank == 2) throw std::out_of_range("member 2");
  }),
                  std::out_of_range);
  CHECK(calls == 3);  // the others were not cut short
}

TEST_CASE("ThreadTeam: ctx.team runs a hook's work on the trainer's own threads", "[trainer][thread_team]") {
  const auto data = test::linear_data<double>(60, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  constexpr Index threads = 3;

  // Every hook runs one task on ctx.team and records the OS thread of each rank.
  struct Hooks {
    std::vector<std::vector<std::thread::id>> seen;  // one entry per run, indexed by rank
    int bad_runs = 0, size_mismatch = 0;
    void use_team(dptrain::TrainContext<double>& ctx) {
      if (ctx.team.size() != threads) ++size_mismatch;
      RunLog log(threads);
      ctx.team.run([&](const TeamMember& me) {
        log.record(me, threads);
        me.barrier();
      });
      if (!log.each_rank_once() || !log.distinct_threads()) ++bad_runs;
      seen.push_back(log.threads);
    }
    void on_fit_begin(dptrain::TrainContext<double>& ctx) { use_team(ctx); }
    void on_epoch_begin(dptrain::TrainContext<double>& ctx) { use_team(ctx); }
    void on_step_end(dptrain::TrainContext<double>& ctx) { use_team(ctx); }
    void on_epoch_end(dptrain::TrainContext<double>& ctx) { use_team(ctx); }
    void on_fit_end(dptrain::TrainContext<double>& ctx) { use_team(ctx); }
  } hooks;
  dptrain::Vector<double> plain = theta;
  dptrain::DataParallelTrainer trainer({.threads = threads, .batch_size = 20, .epochs = 2, .shuffle = false},
                                       dptrain::Sgd{.lr = 0.01});
  const dptrain::FitReport report = trainer.fit(model, theta, data, hooks);
  CHECK(hooks.bad_runs == 0);
  CHECK(hooks.size_mismatch == 0);
  // fit_begin, then per epoch: epoch_begin, 3 steps, epoch_end; then fit_end.
  REQUIRE(hooks.seen.size() == 2 + 2 * (1 + 3 + 1));
  // Inside the region every run uses the same team of threads.
  for (std::size_t r = 2; r + 1 < hooks.seen.size(); ++r) CHECK(hooks.seen[r] == hooks.seen[1]);
  // The team's work did not disturb training.
  trainer.fit(model, plain, data);
  CHECK(theta == plain);
  CHECK(report.steps == 6);
}

TEST_CASE("ThreadTeam: an exception in ctx.team work reaches the hook, then fit()", "[trainer][thread_team]") {
  const auto data = test::linear_data<double>(60, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 3, .batch_size = 20, .epochs = 3}, dptrain::Sgd{.lr = 0.01});

  struct CaughtInHook {
    int caught = 0;
    void on_epoch_end(dptrain::TrainContext<double>& ctx) {
      try {
        ctx.team.run([](const TeamMember& me) {
          if (me.rank == 1) throw std::domain_error("member 1");
        });
      } catch (const std::domain_error&) {
        ++caught;
      }
    }
  } caught_in_hook;
  CHECK(trainer.fit(model, theta, data, caught_in_hook).epochs == 3);  // handled: training goes on
  CHECK(caught_in_hook.caught == 3);

  struct Escapes {
    void on_step_end(dptrain::TrainContext<double>& ctx) {
      if (ctx.step == 4)
        ctx.team.run([](const TeamMember& me) {
          if (me.rank == 2) throw std::domain_error("member 2 at step 4");
        });
    }
  } escapes;
  CHECK_THROWS_WITH(trainer.fit(model, theta, data, escapes), "member 2 at step 4");

  struct Nested {
    void on_epoch_begin(dptrain::TrainContext<double>& ctx) {
      ctx.team.run([&](const TeamMember& me) {
        if (me.rank == 0) ctx.team.run([](const TeamMember&) {});
      });
    }
  } nested;
  CHECK_THROWS_WITH(trainer.fit(model, theta, data, nested), Catch::Contains("cannot be called inside"));
  CHECK(trainer.fit(model, theta, data).epochs == 3);  // the trainer is still usable
}
