// SPDX-License-Identifier: MIT
// Bad input is rejected before training; exceptions and non-finite values leave fit() cleanly.
#include <catch2/catch.hpp>

#include <limits>
#include <span>
#include <stdexcept>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using Catch::Matchers::Contains;
using dptrain::Index;

namespace {

struct Boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// LinearRegression that throws Boom on the chosen rank (−1: every rank) from the chosen call on.
struct ThrowingModel : dptrain::LinearRegression<double> {
  Index rank = 0, from_call = 3;
  mutable std::atomic<Index> calls{0};
  ThrowingModel(Index inputs, Index throwing_rank) : LinearRegression(inputs), rank(throwing_rank) {}
  double loss_and_gradient(dptrain::ConstVectorRef<double> theta, const batch_type& batch,
                           dptrain::VectorRef<double> grad, workspace_type& ws) const {
    const Index me = dptrain::detail::omp_thread_id();
    if ((rank < 0 || me == rank) && calls.fetch_add(1) + 1 >= from_call)
      throw Boom("boom on thread " + std::to_string(me));
    return LinearRegression::loss_and_gradient(theta, batch, grad, ws);
  }
};

// A BalancingPartitioner whose observe() throws from the chosen step on.
struct ThrowingPartitioner : dptrain::BalancingPartitioner {
  Index from_step = 3;
  Index steps = 0;
  void observe(std::span<const dptrain::WorkerLoad> loads) {
    if (++steps >= from_step) throw Boom("boom in observe");
    BalancingPartitioner::observe(loads);
  }
};
static_assert(dptrain::AdaptivePartitioner<ThrowingPartitioner>);

}  // namespace

TEST_CASE("DataParallelTrainer: an exception in an adaptive partitioner leaves fit() with its type",
          "[trainer][faults]") {
  const Index threads = GENERATE(1, 2, 3);
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = threads, .batch_size = 16, .epochs = 5}, ThrowingPartitioner{},
                                       dptrain::Sgd{.lr = 0.01});
  CHECK_THROWS_WITH(trainer.fit(model, theta, data), Contains("boom in observe"));
  CHECK(theta.allFinite());
}

TEST_CASE("DataParallelTrainer: an exception in a worker leaves fit() with its type and message", "[trainer][faults]") {
  constexpr Index threads = 4;
  const Index rank = GENERATE(Index{0}, threads - 1, Index{-1});
  const auto data = test::linear_data<double>(64, 3, 1);
  ThrowingModel model(3, rank);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = threads, .batch_size = 16, .epochs = 5}, dptrain::Sgd{.lr = 0.01});
  CHECK_THROWS_AS(trainer.fit(model, theta, data), Boom);
  model.calls = 0;
  CHECK_THROWS_WITH(trainer.fit(model, theta, data), Contains("boom on thread"));
  SECTION("and the same trainer trains correctly afterwards") {
    const dptrain::LinearRegression<double> good(3);
    const auto report = trainer.fit(good, theta, data);
    CHECK(report.steps == 20);
  }
}

TEST_CASE("DataParallelTrainer: an exception in a callback leaves fit() with its type", "[trainer][faults]") {
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 3, .batch_size = 16, .epochs = 2}, dptrain::Sgd{.lr = 0.01});
  struct OnStep {
    void on_step_end(dptrain::TrainContext<double>& ctx) {
      if (ctx.step == 3) throw Boom("step hook");
    }
  } on_step;
  struct OnEpoch {
    void on_epoch_end(dptrain::TrainContext<double>&) { throw std::out_of_range("epoch hook"); }
  } on_epoch;
  struct OnBegin {
    void on_epoch_begin(dptrain::TrainContext<double>&) { throw Boom("begin hook"); }
  } on_begin;
  CHECK_THROWS_AS(trainer.fit(model, theta, data, on_step), Boom);
  CHECK_THROWS_AS(trainer.fit(model, theta, data, on_epoch), std::out_of_range);
  CHECK_THROWS_WITH(trainer.fit(model, theta, data, on_begin), "begin hook");
}

TEST_CASE("DataParallelTrainer: a non-finite loss stops with non_finite_error and keeps the last finite theta",
          "[trainer][faults]") {
  // A learning rate far too large: θ grows geometrically until the loss overflows.
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 16, .epochs = 200, .seed = 5};
  const dptrain::Sgd diverging{.lr = 50.0};

  dptrain::Vector<double> theta = model.init_parameters();
  Index failed_step = 0;
  try {
    dptrain::DataParallelTrainer(options, diverging).fit(model, theta, data);
    FAIL("no exception");
  } catch (const dptrain::non_finite_error& e) {
    failed_step = e.step();
    CHECK_THAT(e.what(), Contains("at step " + std::to_string(failed_step)));
  }
  REQUIRE(failed_step > 2);
  CHECK(theta.allFinite());

  dptrain::TrainerOptions until_before = options;
  until_before.max_steps = failed_step - 1;
  dptrain::Vector<double> before = model.init_parameters();
  dptrain::DataParallelTrainer(until_before, diverging).fit(model, before, data);
  CHECK((theta.array() == before.array()).all());

  SECTION("or skips such steps and counts them") {
    dptrain::TrainerOptions skip = options;
    skip.on_non_finite = dptrain::NonFinitePolicy::skip;
    skip.max_steps = failed_step + 9;
    dptrain::Vector<double> skipped = model.init_parameters();
    const auto report = dptrain::DataParallelTrainer(skip, diverging).fit(model, skipped, data);
    CHECK(report.steps == failed_step + 9);
    CHECK(report.skipped_steps >= 1);
    CHECK(skipped.allFinite());
  }
}

TEST_CASE("DataParallelTrainer: a huge but finite float gradient is clipped, not taken for non-finite",
          "[trainer][faults]") {
  // Features and targets near 1e12 give gradient values near 1e24: finite in float, but their
  // squares overflow float, so the norm must be summed in double.
  auto data = test::linear_data<float>(64, 3, 1);
  data.features *= 1e12f;
  data.targets *= 1e12f;
  const dptrain::LinearRegression<float> model(3);
  const dptrain::Vector<float> start = model.init_parameters();
  dptrain::Vector<float> theta = start;
  const auto report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 64, .epochs = 1, .clip_norm = 1},
                                                   dptrain::Sgd{.lr = 0.5})
                          .fit(model, theta, data);
  CHECK(report.skipped_steps == 0);
  // One SGD step of a gradient clipped to norm 1 moves θ by exactly lr.
  CHECK((theta - start).norm() == Approx(0.5).epsilon(1e-5));
}

TEST_CASE("DataParallelTrainer: bad options, hyperparameters and data are rejected with a clear message",
          "[trainer][faults]") {
  const auto data = test::linear_data<double>(20, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  const auto fit = [&](dptrain::TrainerOptions o, dptrain::Sgd sgd = {}) {
    dptrain::DataParallelTrainer(o, sgd).fit(model, theta, data);
  };
  CHECK_THROWS_WITH(fit({.threads = 0}), Contains("dptrain::DataParallelTrainer: threads must be at least 1, got 0"));
  CHECK_THROWS_WITH(fit({.batch_size = 0}),
                    Contains("dptrain::DataParallelTrainer: batch_size must be at least 1, got 0"));
  CHECK_THROWS_WITH(fit({.accumulation_steps = 0}), Contains("accumulation_steps"));
  CHECK_THROWS_WITH(fit({.clip_norm = -1}), Contains("clip_norm"));
  CHECK_THROWS_WITH(fit({}, {.lr = 0}), Contains("learning rate must be finite and positive, got 0"));
  CHECK_THROWS_WITH(fit({}, {.lr = std::numeric_limits<double>::infinity()}), Contains("inf"));
  CHECK_THROWS_WITH(fit({.batch_size = 32, .drop_last = true}), Contains("leaves no minibatch"));
  CHECK_THROWS_AS(fit({.threads = 0}), std::invalid_argument);
  // An adaptive split would make Weighting::equal's gradient depend on timings.
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .weighting = dptrain::Weighting::equal},
                                                 dptrain::BalancingPartitioner{}, dptrain::Sgd{.lr = 0.01})
                        .fit(model, theta, data),
                    Contains("Weighting::by_samples"));
  // A share per worker: checked before the first range() (the trainer's buffers are sized with it).
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 3}, dptrain::WeightedPartitioner{.shares = {1, 1}},
                                                 dptrain::Sgd{.lr = 0.01})
                        .fit(model, theta, data),
                    Contains("2 shares for 3 workers"));

  dptrain::Vector<double> short_theta(3);
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer(dptrain::TrainerOptions{}, dptrain::Sgd{.lr = 0.01}).fit(model, short_theta, data),
      Contains("theta has 3 values but the model has 4 parameters"));
  const dptrain::LinearRegression<double> wide(5);
  dptrain::Vector<double> wide_theta = wide.init_parameters();
  CHECK_THROWS_AS(
      dptrain::DataParallelTrainer(dptrain::TrainerOptions{}, dptrain::Sgd{.lr = 0.01}).fit(wide, wide_theta, data),
      dptrain::invalid_argument);
  const dptrain::DenseDataset<double> empty{dptrain::RowMatrix<double>(0, 3), dptrain::Vector<double>(0)};
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer(dptrain::TrainerOptions{}, dptrain::Sgd{.lr = 0.01}).fit(model, theta, empty),
      Contains("empty"));
  const dptrain::DenseDataset<double> ragged{dptrain::RowMatrix<double>(4, 3), dptrain::Vector<double>(3)};
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer(dptrain::TrainerOptions{}, dptrain::Sgd{.lr = 0.01}).fit(model, theta, ragged),
      Contains("4 feature rows but 3 targets"));

  auto labels = test::cluster_data<double>(20, 3, 3, 1);
  labels.targets[5] = 3;
  const dptrain::SoftmaxRegression<double> softmax(3, 3);
  dptrain::Vector<double> softmax_theta = softmax.init_parameters();
  CHECK_THROWS_AS(dptrain::DataParallelTrainer(dptrain::TrainerOptions{}, dptrain::Sgd{.lr = 0.01})
                      .fit(softmax, softmax_theta, labels),
                  dptrain::invalid_argument);
}
