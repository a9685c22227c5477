// SPDX-License-Identifier: MIT
// Hogwild!: one thread against the synchronous step, convergence on a dense and a sparse convex
// problem, hooks at span ends, a failing worker and a stopping callback, and what it refuses.
#include <catch2/catch.hpp>

#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/faults.hpp"
#include "support/sparse_data.hpp"

using dptrain::Index;

TEST_CASE("Hogwild: one thread is the synchronous step up to rounding", "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(90, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = 1, .batch_size = 16, .epochs = 3, .seed = 5};
  const dptrain::Sgd sgd{.lr = 0.05, .weight_decay = 0.01};
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  const dptrain::FitReport synchronous = dptrain::DataParallelTrainer(options, sgd).fit(model, expected, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, sgd, dptrain::Hogwild{}).fit(model, theta, data);
  CHECK(test::relative_error(theta, expected) < 1e-12);
  CHECK(report.steps == synchronous.steps);
  CHECK(report.samples == synchronous.samples);
  CHECK(report.epoch_loss.back() == Approx(synchronous.epoch_loss.back()).epsilon(1e-12));
}

TEST_CASE("Hogwild: converges on a dense convex problem at 2 to 4 threads", "[synchronizers][trainer]") {
  const Index threads = GENERATE(2, 3, 4);
  const auto data = test::linear_data<float>(512, 6, 11);
  const dptrain::LinearRegression<float> model(6);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 32, .epochs = 30, .seed = 2};
  dptrain::Vector<float> synchronous = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.02}).fit(model, synchronous, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.02}, dptrain::Hogwild{}).fit(model, theta, data);
  CHECK(test::relative_error(theta, synchronous) < 0.02);
  CHECK(report.epoch_loss.back() < 0.02);  // the noise's ½σ² is 0.005
  CHECK(report.epoch_loss.back() < report.epoch_loss.front() / 10);
  Index samples = 0;
  for (const dptrain::WorkerReport& w : report.workers) samples += w.samples;
  CHECK(samples == 512 * 30);
}

TEST_CASE("Hogwild: converges on a sparse convex problem at 2 to 4 threads", "[synchronizers][trainer]") {
  const Index threads = GENERATE(2, 3, 4);
  // Labels a linear rule gives, and weight decay: a unique optimum for both runs to approach.
  auto data = test::random_sparse<double>(600, 50, 0.1, 2, 4);
  dptrain::Vector<double> rule(50);
  for (Index j = 0; j < 50; ++j) rule[j] = j % 2 == 0 ? 1.0 : -1.0;
  const dptrain::Vector<double> margins = data.features * rule;
  for (Index i = 0; i < 600; ++i) data.targets[i] = margins[i] > 0 ? 1 : 0;
  const dptrain::SparseLogisticRegression<double> model(50);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 30, .epochs = 20, .seed = 3};
  const dptrain::Sgd sgd{.lr = 0.2, .weight_decay = 0.01};
  dptrain::Vector<double> synchronous = model.init_parameters(), theta = model.init_parameters();
  const dptrain::FitReport reference = dptrain::DataParallelTrainer(options, sgd).fit(model, synchronous, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, sgd, dptrain::Hogwild{}).fit(model, theta, data);
  // Each thread's update is a whole SGD step on its micro-batch: T times the synchronous step's
  // movement, so θ is noisier than the synchronous run's, but the loss is as low.
  CHECK(report.epoch_loss.back() < report.epoch_loss.front() / 1.5);
  CHECK(report.epoch_loss.back() < 1.2 * reference.epoch_loss.back());
  CHECK(test::relative_error(theta, synchronous) < 0.5);
}

TEST_CASE("Hogwild: on_step_end at span ends, a worker that throws at step 7, a callback that stops at step 9",
          "[synchronizers][trainer][faults]") {
  const Index threads = GENERATE(1, 2, 3);
  auto data = test::linear_data<double>(128, 3, 1);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .shuffle = false};

  SECTION("a callback asks to stop from step 9: it runs at step 16, and the team leaves there") {
    struct StopFromStep9 {
      std::vector<Index> steps;
      dptrain::Vector<double> seen;
      bool on_step_end(dptrain::TrainContext<double>& ctx) {
        steps.push_back(ctx.step);
        seen = ctx.theta;
        return ctx.step >= 9;
      }
    } stop;
    const dptrain::LinearRegression<double> model(3);
    dptrain::Vector<double> theta = model.init_parameters();
    const dptrain::FitReport report =
        dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, dptrain::Hogwild{})
            .fit(model, theta, data, stop);
    CHECK(stop.steps == std::vector<Index>{8, 16});
    CHECK(report.stopped_by_callback);
    CHECK(report.steps == 16);
    CHECK((theta.array() == stop.seen.array()).all());
  }
  SECTION("a worker throws at step 7: fit() throws its error, with no hang") {
    data.features(100, 0) = test::ThrowsOnMarkedRow::marker();
    const test::ThrowsOnMarkedRow model(3, "boom at step 7");  // row 100: minibatch 7 of 8
    dptrain::Vector<double> theta = model.init_parameters();
    CHECK_THROWS_MATCHES(
        dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, dptrain::Hogwild{}).fit(model, theta, data),
        test::WorkerFailure, Catch::Matchers::Message("boom at step 7"));
    CHECK(theta.allFinite());
  }
}

TEST_CASE("Hogwild: a stateful optimizer and an adaptive partitioner are refused before training",
          "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(32, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Adam{.lr = 0.1}, dptrain::Hogwild{})
          .fit(model, theta, data),
      Catch::Matchers::StartsWith("dptrain::Hogwild: the optimizer keeps 2 state vector(s)"));
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.1},
                                                 dptrain::BalancingPartitioner{}, dptrain::Hogwild{})
                        .fit(model, theta, data),
                    Catch::Matchers::StartsWith("dptrain::Hogwild: an adaptive partitioner learns"));
  CHECK((theta.array() == model.init_parameters().array()).all());
}
