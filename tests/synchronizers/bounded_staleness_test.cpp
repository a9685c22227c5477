// SPDX-License-Identifier: MIT
// BoundedStaleness: staleness 0 against the synchronous step, the bound on how far a worker runs
// ahead (seen from inside a Worker), convergence, the staleness report, callbacks after every
// update, a failing worker and a stopping callback, and what it refuses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/faults.hpp"

using dptrain::Index;

namespace {

// How far the workers ran ahead of each other, seen from inside their gradients: worker i
// starting its c-th gradient while worker j has finished d_j of them is c − min_j d_j ahead.
// BoundedStaleness{s} lets no worker start step t before every worker has finished step
// t − 1 − s, so the lead is at most s + 1.
struct Pace {
  std::array<std::atomic<Index>, 8> started{}, finished{};
  std::atomic<Index> lead{0};
  Index workers = 0;
};

// A Worker that records its Pace and, if `slow` is its id, sleeps `delay` before each gradient.
struct PacedWorker {
  Pace* pace = nullptr;
  Index slow = -1;
  std::chrono::microseconds delay{0};

  template <class M>
  struct State {
    dptrain::GradientWorker::State<M> inner;
    Pace* pace;
    Index id;
    std::chrono::microseconds delay;

    void zero() { inner.zero(); }
    void accumulate(const M& model, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch) {
      const auto me = static_cast<std::size_t>(id);
      const Index c = pace->started[me].fetch_add(1) + 1;
      Index slowest = c;
      for (Index j = 0; j < pace->workers; ++j)
        slowest = std::min(slowest, pace->finished[static_cast<std::size_t>(j)].load());
      Index lead = pace->lead.load();
      while (c - slowest > lead && !pace->lead.compare_exchange_weak(lead, c - slowest)) {
      }
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      inner.accumulate(model, theta, batch);
      pace->finished[me].fetch_add(1);
    }
    dptrain::VectorMap<typename M::scalar_type> gradient() { return inner.gradient(); }
    [[nodiscard]] double loss() const { return inner.loss(); }
    [[nodiscard]] Index samples() const { return inner.samples(); }
  };

  template <class M>
  State<M> make(const M& model, Index id, Index rows) const {
    return {dptrain::GradientWorker{}.make(model, id, rows), pace, id,
            id == slow ? delay : std::chrono::microseconds(0)};
  }
};

}  // namespace

TEST_CASE("BoundedStaleness: staleness 0 is the synchronous step, within 1e-12 in double", "[synchronizers][trainer]") {
  const Index threads = GENERATE(1, 2, 3, 4);
  const auto data = test::linear_data<double>(90, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .seed = 5};
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  const dptrain::FitReport synchronous =
      dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}).fit(model, expected, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, dptrain::BoundedStaleness{.staleness = 0})
          .fit(model, theta, data);
  CHECK(test::relative_error(theta, expected) < 1e-12);
  CHECK(report.steps == synchronous.steps);
  CHECK(report.samples == synchronous.samples);
  CHECK(report.epoch_loss.size() == 3);
  for (std::size_t e = 0; e < 3; ++e) CHECK(report.epoch_loss[e] == Approx(synchronous.epoch_loss[e]).epsilon(1e-12));
  CHECK(report.largest_staleness() == 0);
  CHECK(report.mean_staleness() == 0);
  Index samples = 0;
  for (const dptrain::WorkerReport& w : report.workers) samples += w.samples;
  CHECK(samples == 90 * 3);
}

TEST_CASE("BoundedStaleness: no worker runs more than s steps ahead of the slowest, and the report says how stale",
          "[synchronizers][trainer]") {
  const Index threads = GENERATE(2, 3, 4);
  const Index staleness = GENERATE(0, 2);
  const auto data = test::linear_data<double>(256, 4, 5);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 32, .epochs = 3, .seed = 1};
  Pace pace;
  pace.workers = threads;
  // Worker 0 sleeps 2 ms before each gradient: the others run as far ahead as they may.
  const PacedWorker paced{.pace = &pace, .slow = 0, .delay = std::chrono::milliseconds(2)};
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport report = dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}, paced,
                                                                 dptrain::BoundedStaleness{.staleness = staleness})
                                        .fit(model, theta, data);
  CHECK(report.steps == 24);
  CHECK(pace.lead.load() <= staleness + 1);
  CHECK(report.largest_staleness() <= staleness);
  // The fast workers did run ahead: with a 2 ms straggler they reach the bound.
  CHECK(report.largest_staleness() == staleness);
  if (staleness > 0) CHECK(report.mean_staleness() > 0);
}

TEST_CASE("BoundedStaleness: staleness 2 converges on a convex problem at 2 to 4 threads", "[synchronizers][trainer]") {
  const Index threads = GENERATE(2, 3, 4);
  const auto data = test::linear_data<float>(512, 6, 11);
  const dptrain::LinearRegression<float> model(6);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 32, .epochs = 30, .seed = 2};
  dptrain::Vector<float> synchronous = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.02}).fit(model, synchronous, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.02}, dptrain::BoundedStaleness{.staleness = 2})
          .fit(model, theta, data);
  CHECK(test::relative_error(theta, synchronous) < 0.02);
  CHECK(report.epoch_loss.back() < 0.02);  // the noise's ½σ² is 0.005
  CHECK(report.epoch_loss.back() < report.epoch_loss.front() / 10);
}

TEST_CASE("BoundedStaleness: on_step_end runs after every update, with theta that update's",
          "[synchronizers][callbacks]") {
  const Index threads = GENERATE(1, 3);
  const auto data = test::linear_data<double>(96, 4, 7);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 24, .epochs = 3, .shuffle = false};
  struct Seen {
    std::vector<Index> steps;
    std::vector<dptrain::Vector<double>> thetas;
    bool on_step_end(dptrain::TrainContext<double>& ctx) {
      steps.push_back(ctx.step);
      thetas.emplace_back(ctx.theta);
      return false;
    }
  } seen;
  const dptrain::BoundedStaleness stale0{.staleness = 0};
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, stale0).fit(model, theta, data, seen);
  CHECK(seen.steps == std::vector<Index>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  // What the hook saw at step 6 is the run cut there (max_steps); staleness 0 has one outcome.
  dptrain::TrainerOptions six = options;
  six.max_steps = 6;
  dptrain::Vector<double> at_six = model.init_parameters();
  const dptrain::FitReport cut =
      dptrain::DataParallelTrainer(six, dptrain::Sgd{.lr = 0.05}, stale0).fit(model, at_six, data);
  CHECK(cut.steps == 6);
  CHECK((seen.thetas[5].array() == at_six.array()).all());
  CHECK((seen.thetas.back().array() == theta.array()).all());
}

TEST_CASE("BoundedStaleness: a worker that throws at step 7 and a callback that stops at step 9",
          "[synchronizers][trainer][faults]") {
  const Index threads = GENERATE(1, 2, 3);
  const Index staleness = GENERATE(0, 2);
  auto data = test::linear_data<double>(128, 3, 1);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 2, .shuffle = false};
  const dptrain::BoundedStaleness stale{.staleness = staleness};

  SECTION("a worker throws at step 7: fit() throws its error, theta as of update 6") {
    dptrain::TrainerOptions six = options;
    six.max_steps = 6;
    const dptrain::LinearRegression<double> plain(3);
    dptrain::Vector<double> at_6 = plain.init_parameters();
    dptrain::DataParallelTrainer(six, dptrain::Momentum{.lr = 0.05}, stale).fit(plain, at_6, data);
    data.features(100, 0) = test::ThrowsOnMarkedRow::marker();
    const test::ThrowsOnMarkedRow model(3, "boom at step 7");  // row 100: minibatch 7 of 16
    dptrain::Vector<double> theta = model.init_parameters();
    CHECK_THROWS_MATCHES(
        dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}, stale).fit(model, theta, data),
        test::WorkerFailure, Catch::Matchers::Message("boom at step 7"));
    if (staleness == 0 || threads == 1) CHECK((theta.array() == at_6.array()).all());
    CHECK(theta.allFinite());
    CHECK((theta.array() != plain.init_parameters().array()).any());
  }
  SECTION("a callback asks to stop at step 9: the team leaves before update 10, theta as the callback saw it") {
    struct StopAtStep9 {
      dptrain::Vector<double> seen;
      bool on_step_end(dptrain::TrainContext<double>& ctx) {
        if (ctx.step != 9) return false;
        seen = ctx.theta;
        return true;
      }
    } stop;
    const dptrain::LinearRegression<double> model(3);
    dptrain::Vector<double> theta = model.init_parameters();
    const dptrain::FitReport report =
        dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}, stale).fit(model, theta, data, stop);
    CHECK(report.stopped_by_callback);
    CHECK(report.steps == 9);
    CHECK((theta.array() == stop.seen.array()).all());
  }
}

TEST_CASE("BoundedStaleness: max_steps inside an epoch, and a resume from a checkpoint, go on from update k",
          "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(128, 3, 2);
  const dptrain::LinearRegression<double> model(3);
  dptrain::TrainerOptions options{.threads = 3, .batch_size = 16, .epochs = 2, .max_steps = 11, .seed = 3};
  const dptrain::BoundedStaleness stale0{.staleness = 0};
  dptrain::Vector<double> whole = model.init_parameters(), part = model.init_parameters();
  dptrain::TrainingState<double> saved;
  struct Save {
    dptrain::TrainingState<double>* to;
    void on_fit_end(dptrain::TrainContext<double>& ctx) const { *to = ctx.state; }
  };
  const dptrain::FitReport first =
      dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, stale0).fit(model, part, data, Save{&saved});
  CHECK(first.steps == 11);
  options.max_steps = 0;
  dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, stale0).fit(model, whole, data);
  dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, stale0).resume(model, part, data, saved);
  CHECK((part.array() == whole.array()).all());
}

TEST_CASE("BoundedStaleness: a negative staleness, and an adaptive partitioner, are refused before training",
          "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(32, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.1},
                                                 dptrain::BoundedStaleness{.staleness = -1})
                        .fit(model, theta, data),
                    "dptrain::BoundedStaleness: staleness must be in [0, 64], got -1");
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.1},
                                                 dptrain::BalancingPartitioner{}, dptrain::BoundedStaleness{})
                        .fit(model, theta, data),
                    Catch::Matchers::StartsWith("dptrain::BoundedStaleness: an adaptive partitioner learns"));
  CHECK((theta.array() == model.init_parameters().array()).all());
}
