// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "dptrain/data/standardizer.hpp"

using dptrain::Index;
using dptrain::RowMatrix;

namespace {

template <class Scalar>
RowMatrix<Scalar> sample_features() {
  RowMatrix<Scalar> x(5, 3);
  x << 1, 10, 0.1,  //
      2, 30, 0.1,   //
      3, -20, 0.1,  //
      4, 50, 0.1,   //
      10, 5, 0.1;
  return x;
}

}  // namespace

TEMPLATE_TEST_CASE("Standardizer: after fit and transform each column of the training set has mean 0 and std 1",
                   "[data]", float, double) {
  RowMatrix<TestType> x = sample_features<TestType>();
  const auto scaler = dptrain::Standardizer<TestType>::fit(x);
  CHECK(scaler.mean()[0] == Approx(4.0));
  CHECK(scaler.scale()[0] == Approx(std::sqrt(10.0)));  // deviations −3, −2, −1, 0, 6: Σ² / 5 = 10
  scaler.transform(x);
  const double tolerance = std::is_same_v<TestType, float> ? 1e-6 : 1e-14;
  for (Index j = 0; j < 2; ++j) {
    const Eigen::VectorXd column = x.col(j).template cast<double>();
    CHECK(std::abs(column.mean()) < tolerance);
    CHECK(std::sqrt((column.array() - column.mean()).square().mean()) == Approx(1.0).epsilon(tolerance));
  }
}

TEMPLATE_TEST_CASE("Standardizer: a constant column gets scale 1 and maps to exactly 0", "[data]", float, double) {
  RowMatrix<TestType> x = sample_features<TestType>();
  const auto scaler = dptrain::Standardizer<TestType>::fit(x);
  CHECK(scaler.scale()[2] == 1.0);
  CHECK(scaler.mean()[2] == static_cast<double>(TestType(0.1)));
  scaler.transform(x);
  CHECK((x.col(2).array() == TestType(0)).all());
}

TEST_CASE("Standardizer: transforming another set uses the training statistics", "[data]") {
  const RowMatrix<double> train = sample_features<double>();
  const auto scaler = dptrain::Standardizer<double>::fit(train);
  RowMatrix<double> other(2, 3);
  other << 4, 14, 0.1,  //
      14, -100, 7.1;
  scaler.transform(other);
  CHECK(other(0, 0) == 0.0);
  CHECK(other(1, 0) == Approx(10.0 / std::sqrt(10.0)));
  CHECK(other(0, 1) == Approx((14.0 - scaler.mean()[1]) / scaler.scale()[1]));
  CHECK(other(1, 1) == Approx((-100.0 - 15.0) / scaler.scale()[1]));
  CHECK(other(0, 2) == 0.0);
  CHECK(other(1, 2) == Approx(7.0));
}

TEST_CASE("Standardizer: a column-count mismatch, no rows or a non-finite value is an invalid_argument", "[data]") {
  const auto scaler = dptrain::Standardizer<double>::fit(sample_features<double>());
  RowMatrix<double> wrong(2, 4);
  wrong.setZero();
  CHECK_THROWS_AS(scaler.transform(wrong), dptrain::invalid_argument);
  CHECK_THROWS_AS(dptrain::Standardizer<double>::fit(RowMatrix<double>(0, 3)), dptrain::invalid_argument);
  RowMatrix<double> bad = sample_features<double>();
  bad(3, 1) = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(dptrain::Standardizer<double>::fit(bad), dptrain::invalid_argument);
}
