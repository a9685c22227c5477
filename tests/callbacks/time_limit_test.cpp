// SPDX-License-Identifier: MIT
// TimeLimit: a long run is stopped early by a callback.
#include <catch2/catch.hpp>

#include <chrono>

#include "dptrain/callbacks/time_limit.hpp"
#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

TEST_CASE("TimeLimit: stops a long run before its planned steps", "[callbacks]") {
  const auto data = test::linear_data<double>(100, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::TimeLimit limit(std::chrono::milliseconds(20));
  CHECK_FALSE(limit.reached());
  // 10⁶ planned steps: far more than 20 ms.
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 100000}, dptrain::Sgd{.lr = 0.01})
          .fit(model, theta, data, limit);
  CHECK(report.stopped_by_callback);
  CHECK(limit.reached());
  CHECK(report.steps < 1000000);
  CHECK(report.steps >= 1);
  CHECK(limit.limit() == std::chrono::milliseconds(20));
  CHECK(dptrain::TimeLimit(std::chrono::duration<double>(1.5)).limit() == std::chrono::milliseconds(1500));
}
