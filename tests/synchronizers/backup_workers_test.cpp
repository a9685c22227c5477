// SPDX-License-Identifier: MIT
// BackupWorkers: synchronous steps shared out in chunks, a stalled chunk computed again.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;
using namespace std::chrono_literals;

static_assert(dptrain::Synchronizer<dptrain::BackupWorkers>);

namespace {

bool same_bits(const dptrain::Vector<float>& a, const dptrain::Vector<float>& b) {
  return a.size() == b.size() && (a.array() == b.array()).all();
}

// The MLP on clustered data, with momentum, shuffling, a partial last minibatch and clipping.
struct Problem {
  dptrain::DenseDataset<float, dptrain::Label> data = test::cluster_data<float>(203, 12, 4, 7);
  dptrain::Mlp<float> model{{12, 16, 4}};
  dptrain::Momentum sgd{.lr = 0.05, .momentum = 0.9};
  dptrain::TrainerOptions options(Index threads) const {
    return {.threads = threads, .batch_size = 32, .epochs = 3, .seed = 11, .clip_norm = 5};
  }
  template <class... Policies>
  dptrain::FitReport train(dptrain::Vector<float>& theta, const dptrain::TrainerOptions& options,
                           Policies... policies) const {
    theta = model.init_parameters(3);
    return dptrain::DataParallelTrainer(options, sgd, policies...).fit(model, theta, data);
  }
};

}  // namespace

TEST_CASE("BackupWorkers: with fixed chunks, the same theta bit for bit on any number of threads",
          "[synchronizers][trainer]") {
  const Problem p;
  dptrain::Vector<float> one, many;
  const dptrain::FitReport single = p.train(one, p.options(1), dptrain::BackupWorkers{.chunks = 6});
  const Index threads = GENERATE(2, 3, 4);
  const dptrain::FitReport report = p.train(many, p.options(threads), dptrain::BackupWorkers{.chunks = 6});
  CHECK(same_bits(many, one));
  CHECK(report.steps == single.steps);
  CHECK(report.epoch_loss == single.epoch_loss);
  Index samples = 0;
  for (const dptrain::WorkerReport& worker : report.workers) samples += worker.samples;
  CHECK(samples == report.samples);
  CHECK(report.samples == 3 * 203);
}

TEST_CASE(
    "BackupWorkers: with bf16 products, fixed chunks still give the same theta bit for bit on any number of threads",
    "[synchronizers][trainer][bf16]") {
  // A chunk's products are the same bf16 products wherever it runs, on either kernel.
  const Problem p;
  const dptrain::Mlp<float> mixed({12, 16, 4}, dptrain::Precision::bf16);
  const auto train = [&](Index threads) {
    dptrain::Vector<float> theta = mixed.init_parameters(3);
    dptrain::DataParallelTrainer(p.options(threads), p.sgd, dptrain::BackupWorkers{.chunks = 6})
        .fit(mixed, theta, p.data);
    return theta;
  };
  const dptrain::Vector<float> one = train(1);
  const Index threads = GENERATE(2, 3);
  CHECK(same_bits(train(threads), one));
  dptrain::Vector<float> full;
  p.train(full, p.options(1), dptrain::BackupWorkers{.chunks = 6});
  CHECK_FALSE(same_bits(one, full));  // the products did round to bf16
}

TEST_CASE("BackupWorkers: each step is the synchronous step, equal to EveryStepSynchronizer's up to rounding",
          "[synchronizers][trainer]") {
  const Problem p;
  const Index threads = GENERATE(1, 2);
  dptrain::Vector<float> every, backup;
  const dptrain::FitReport expected = p.train(every, p.options(threads));
  const dptrain::FitReport report = p.train(backup, p.options(threads), dptrain::BackupWorkers{});
  CHECK(test::relative_error(backup, every) < 1e-5);
  CHECK(report.steps == expected.steps);
  REQUIRE(report.epoch_loss.size() == expected.epoch_loss.size());
  for (std::size_t e = 0; e < report.epoch_loss.size(); ++e)
    CHECK(report.epoch_loss[e] == Approx(expected.epoch_loss[e]).epsilon(1e-5));
  CHECK(report.final_loss == Approx(expected.final_loss).epsilon(1e-5));
}

TEST_CASE("BackupWorkers: a stalled chunk is computed again by an idle thread, and theta does not change",
          "[synchronizers][trainer]") {
  const Problem p;
  dptrain::TrainerOptions options = p.options(2);
  options.epochs = 2;
  options.max_steps = 10;
  dptrain::Vector<float> quiet, stalled;
  p.train(quiet, options, dptrain::BackupWorkers{.chunks = 4});
  // Worker 0 sleeps 50 ms before each chunk it takes: far longer than a chunk (1 ms, for every
  // worker, so that worker 1 alone needs 40 ms for the run and worker 0 takes chunks), so the
  // other thread computes the chunk again and its result wins.
  const dptrain::StragglerWorker<> every_chunk_1ms{.ranks = {0, 1}, .delay = 1ms};
  const dptrain::StragglerWorker<dptrain::StragglerWorker<>> slow{
      .inner = every_chunk_1ms, .ranks = {0}, .delay = 50ms};
  const dptrain::FitReport report = p.train(stalled, options, dptrain::BackupWorkers{.chunks = 4}, slow);
  CHECK(same_bits(stalled, quiet));
  Index recomputed = 0;
  for (const dptrain::WorkerReport& worker : report.workers) recomputed += worker.recomputed;
  CHECK(recomputed >= 1);
  CHECK(report.steps == 10);
}

TEST_CASE("BackupWorkers: step hooks, stops and resuming see theta as the steps left it", "[synchronizers][trainer]") {
  const Problem p;
  const dptrain::TrainerOptions options = p.options(3);
  dptrain::Vector<float> expected;
  p.train(expected, options, dptrain::BackupWorkers{.chunks = 5});

  // Each step's number, loss and ‖θ‖ as on_step_end sees them.
  struct StepLog {
    std::vector<Index> steps;
    std::vector<double> losses, norms;
    void on_step_end(dptrain::TrainContext<float>& ctx) {
      steps.push_back(ctx.step);
      losses.push_back(ctx.loss);
      norms.push_back(ctx.theta.template cast<double>().norm());
    }
  };

  SECTION("on_step_end sees every step, in order, with theta as the step left it") {
    StepLog log, reference;
    dptrain::Vector<float> theta = p.model.init_parameters(3);
    const dptrain::FitReport report = dptrain::DataParallelTrainer(options, p.sgd, dptrain::BackupWorkers{.chunks = 5})
                                          .fit(p.model, theta, p.data, log);
    CHECK(same_bits(theta, expected));
    REQUIRE(static_cast<Index>(log.steps.size()) == report.steps);
    for (std::size_t k = 0; k < log.steps.size(); ++k) CHECK(log.steps[k] == static_cast<Index>(k) + 1);
    dptrain::Vector<float> every = p.model.init_parameters(3);
    dptrain::DataParallelTrainer(options, p.sgd).fit(p.model, every, p.data, reference);
    REQUIRE(reference.steps == log.steps);
    for (std::size_t k = 0; k < log.steps.size(); ++k) {
      CHECK(log.losses[k] == Approx(reference.losses[k]).epsilon(1e-4).margin(1e-6));  // float rounding apart
      CHECK(log.norms[k] == Approx(reference.norms[k]).epsilon(1e-5));
    }
  }
  SECTION("on_step_end stops training: theta as the last step taken left it") {
    struct StopAtStep {
      bool on_step_end(dptrain::TrainContext<float>& ctx) { return ctx.step == 9; }
    } stop;
    dptrain::Vector<float> theta = p.model.init_parameters(3);
    const dptrain::FitReport report = dptrain::DataParallelTrainer(options, p.sgd, dptrain::BackupWorkers{.chunks = 5})
                                          .fit(p.model, theta, p.data, stop);
    CHECK(report.stopped_by_callback);
    CHECK(report.steps == 9);
    dptrain::TrainerOptions nine = options;
    nine.max_steps = 9;
    dptrain::Vector<float> until_nine;
    p.train(until_nine, nine, dptrain::BackupWorkers{.chunks = 5});
    CHECK(same_bits(theta, until_nine));
  }
  SECTION("a stop at an epoch's end, then resume() from the state") {
    struct StopAfterFirstEpoch {
      bool on_epoch_end(dptrain::TrainContext<float>& ctx) { return ctx.epoch == 0; }
    } stop;
    dptrain::Vector<float> theta = p.model.init_parameters(3);
    dptrain::TrainingState<float> state;
    struct Keep {
      dptrain::TrainingState<float>* state;
      void on_fit_end(dptrain::TrainContext<float>& ctx) { *state = ctx.state; }
    } keep{&state};
    dptrain::DataParallelTrainer trainer(options, p.sgd, dptrain::BackupWorkers{.chunks = 5});
    const dptrain::FitReport first = trainer.fit(p.model, theta, p.data, stop, keep);
    CHECK(first.stopped_by_callback);
    CHECK(first.epochs == 1);
    const dptrain::FitReport rest = trainer.resume(p.model, theta, p.data, state);
    CHECK(rest.epochs == 2);
    CHECK(same_bits(theta, expected));
  }
}

TEST_CASE("BackupWorkers: a failing chunk leaves fit() with its exception, theta as before that step",
          "[synchronizers][trainer][faults]") {
  struct Boom : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  // Throws on a batch that holds the marked sample, whoever computes it and however often: the
  // sample is row 40, in the third minibatch of 16 (no shuffling), so step 3 fails.
  struct ThrowingModel : dptrain::LinearRegression<double> {
    static constexpr double marker() { return 12345; }
    using LinearRegression::LinearRegression;
    double loss_and_gradient(dptrain::ConstVectorRef<double> theta, const batch_type& batch,
                             dptrain::VectorRef<double> grad, workspace_type& ws) const {
      if ((batch.features.col(0).array() == marker()).any()) throw Boom("boom");
      return LinearRegression::loss_and_gradient(theta, batch, grad, ws);
    }
  };
  auto data = test::linear_data<double>(64, 3, 1);
  data.features(40, 0) = ThrowingModel::marker();
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 16, .epochs = 2, .shuffle = false};
  const ThrowingModel model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  CHECK_THROWS_AS(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.1}, dptrain::BackupWorkers{.chunks = 4})
                      .fit(model, theta, data),
                  Boom);
  dptrain::TrainerOptions two_steps = options;
  two_steps.max_steps = 2;
  const dptrain::LinearRegression<double> plain(3);
  dptrain::Vector<double> before = plain.init_parameters();
  dptrain::DataParallelTrainer(two_steps, dptrain::Sgd{.lr = 0.1}, dptrain::BackupWorkers{.chunks = 4})
      .fit(plain, before, data);
  CHECK((theta.array() == before.array()).all());
}

namespace {

struct LostCopy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A Worker policy whose state 0 sleeps 200 ms and then throws: far slower than a chunk, so
// another thread computes the chunk again and wins; the late copy's exception is not the step's.
struct SlowThenFailing {
  template <class Inner>
  struct State {
    Inner inner;
    bool fails;
    void zero() { inner.zero(); }
    template <class M>
    void accumulate(const M& model, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch) {
      if (fails) {
        std::this_thread::sleep_for(200ms);
        throw LostCopy("the copy that lost");
      }
      inner.accumulate(model, theta, batch);
    }
    auto gradient() { return inner.gradient(); }
    double loss() const { return inner.loss(); }
    Index samples() const { return inner.samples(); }
  };
  template <dptrain::Model M>
  auto make(const M& model, Index rank, Index rows) const {
    auto inner = dptrain::GradientWorker{}.make(model, rank, rows);
    return State<decltype(inner)>{std::move(inner), rank == 0};
  }
};

}  // namespace

TEST_CASE("BackupWorkers: a copy that lost the race and failed does not fail the step",
          "[synchronizers][trainer][faults]") {
  const Problem p;
  dptrain::TrainerOptions options = p.options(2);
  options.max_steps = 3;
  dptrain::Vector<float> quiet, theta;
  p.train(quiet, options, dptrain::BackupWorkers{.chunks = 2});
  dptrain::FitReport report;
  REQUIRE_NOTHROW(report = p.train(theta, options, dptrain::BackupWorkers{.chunks = 2}, SlowThenFailing{}));
  CHECK(same_bits(theta, quiet));
  CHECK(report.steps == 3);
}

TEST_CASE("BackupWorkers: bad settings are refused before the first step", "[synchronizers][trainer]") {
  const Problem p;
  dptrain::Vector<float> theta;
  CHECK_THROWS_AS(p.train(theta, p.options(2), dptrain::BackupWorkers{.chunks = -1}), dptrain::invalid_argument);
  CHECK_THROWS_AS(p.train(theta, p.options(2), dptrain::BackupWorkers{.chunks = 1'000'000}), dptrain::invalid_argument);
  CHECK_THROWS_AS(p.train(theta, p.options(2), dptrain::BackupWorkers{.stall = 0}), dptrain::invalid_argument);
}
