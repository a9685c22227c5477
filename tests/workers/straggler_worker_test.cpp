// SPDX-License-Identifier: MIT
// StragglerWorker: the other workers wait for the slow rank; theta is unchanged.
#include <catch2/catch.hpp>

#include <chrono>

#include "dptrain/dptrain.hpp"
#include "dptrain/workers/straggler_worker.hpp"
#include "support/data.hpp"

static_assert(dptrain::Worker<dptrain::StragglerWorker<>, dptrain::LinearRegression<double>>);
static_assert(dptrain::Worker<dptrain::StragglerWorker<dptrain::StragglerWorker<>>, dptrain::Mlp<float>>);

TEST_CASE("StragglerWorker: the fast worker waits for the slow one and theta is unchanged", "[workers]") {
  using namespace std::chrono_literals;
  const auto data = test::linear_data<double>(200, 4, 1);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 10, .epochs = 1};
  dptrain::Vector<double> plain = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}).fit(model, plain, data);

  const bool random = GENERATE(false, true);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::StragglerWorker<> slow{.ranks = {1}, .delay = 2ms, .random = random, .seed = 3};
  dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.01}, slow);
  const dptrain::FitReport report = trainer.fit(model, theta, data);
  REQUIRE(report.steps == 20);
  CHECK(report.workers[0].wait > report.workers[1].wait);
  CHECK(theta == plain);
}

TEST_CASE("StragglerWorker: only the chosen ranks get a delay, drawn per rank from the seed", "[workers]") {
  using namespace std::chrono_literals;
  const dptrain::LinearRegression<float> model(2);
  const dptrain::StragglerWorker<> slow{.ranks = {0, 2}, .delay = 50us};
  CHECK(slow.make(model, 0, 4).delay() == 50us);
  CHECK(slow.make(model, 1, 4).delay() == 0us);
  CHECK(slow.make(model, 2, 4).delay() == 50us);
}
