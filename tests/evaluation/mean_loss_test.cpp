// SPDX-License-Identifier: MIT
// mean_loss(): the closed-form mean loss, bitwise the same for any thread count.
#include <catch2/catch.hpp>

#include <cmath>

#include "dptrain/evaluation/mean_loss.hpp"
#include "dptrain/models/linear_regression.hpp"
#include "dptrain/models/softmax_regression.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::Vector;

TEMPLATE_TEST_CASE("mean_loss: half the mean squared residual of a known linear fit", "[evaluation]", float, double) {
  // y = x + r with residuals r cycling through 1, −2, 3, 0 at θ = (1, 0): ℓ = ½ r², mean ½ · 14 / 4.
  const Index n = 4 * GENERATE(1, 500);
  dptrain::DenseDataset<TestType> data{dptrain::RowMatrix<TestType>(n, 1), Vector<TestType>(n)};
  const double r[4] = {1, -2, 3, 0};
  for (Index i = 0; i < n; ++i) {
    data.features(i, 0) = static_cast<TestType>(i % 7);
    data.targets[i] = static_cast<TestType>(static_cast<double>(i % 7) - r[i % 4]);
  }
  const dptrain::LinearRegression<TestType> model(1);
  const Vector<TestType> theta{{TestType(1), TestType(0)}};
  const Index threads = GENERATE(1, 2, 3, 7);
  CHECK(dptrain::mean_loss(model, theta, data, threads) == 1.75);  // every value is exact
}

TEMPLATE_TEST_CASE("mean_loss: bitwise the same for threads 1, 2, 3 and 7", "[evaluation]", float, double) {
  const auto data = test::cluster_data<TestType>(5003, 7, 5, 3, 1.0);
  const dptrain::SoftmaxRegression<TestType> model(7, 5);
  const Vector<TestType> theta = Vector<TestType>::LinSpaced(model.num_parameters(), TestType(-0.5), TestType(0.5));
  const double one = dptrain::mean_loss(model, theta, data, 1);
  // The oracle: the summed loss of the whole set, one call, in double.
  auto ws = model.make_workspace(data.size());
  const double whole = static_cast<double>(model.loss(theta, data.rows(0, data.size()), ws)) / 5003.0;
  CHECK(one == Approx(whole).epsilon(std::is_same_v<TestType, float> ? 1e-5 : 1e-12));
  const Index threads = GENERATE(2, 3, 7);
  CHECK(dptrain::mean_loss(model, theta, data, threads) == one);
}

TEST_CASE("mean_loss: an exception thrown on a worker thread reaches the caller", "[evaluation]") {
  const auto data = test::linear_data<double>(3000, 3, 1);
  const dptrain::LinearRegression<double> model(4);  // the data have 3 features
  CHECK_THROWS_AS(dptrain::mean_loss(model, Vector<double>::Zero(5), data, 3), dptrain::invalid_argument);
  CHECK_THROWS_WITH(dptrain::mean_loss(model, Vector<double>::Zero(5), data, 3),
                    Catch::Contains("expects 4 features per sample"));
}
