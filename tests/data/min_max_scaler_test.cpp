// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <limits>

#include "dptrain/data/min_max_scaler.hpp"

using dptrain::Index;
using dptrain::RowMatrix;

TEMPLATE_TEST_CASE("MinMaxScaler: each column of the training set spans exactly 0 to 1", "[data]", float, double) {
  RowMatrix<TestType> x(4, 3);
  x << 1, -5, 3,  //
      3, 5, 3,    //
      2, 0, 3,    //
      5, -1, 3;
  const auto scaler = dptrain::MinMaxScaler<TestType>::fit(x);
  CHECK(scaler.min()[0] == 1.0);
  CHECK(scaler.scale()[0] == 4.0);
  CHECK(scaler.scale()[1] == 10.0);
  scaler.transform(x);
  for (Index j = 0; j < 2; ++j) {
    CHECK(x.col(j).minCoeff() == TestType(0));
    CHECK(x.col(j).maxCoeff() == TestType(1));
  }
  CHECK(x(2, 0) == TestType(0.25));
  CHECK(x(2, 1) == TestType(0.5));
}

TEST_CASE("MinMaxScaler: a constant column gets scale 1 and maps to 0", "[data]") {
  RowMatrix<double> x(3, 2);
  x << 1, 0.7,  //
      2, 0.7,   //
      3, 0.7;
  const auto scaler = dptrain::MinMaxScaler<double>::fit(x);
  CHECK(scaler.scale()[1] == 1.0);
  scaler.transform(x);
  CHECK((x.col(1).array() == 0.0).all());
}

TEST_CASE("MinMaxScaler: another set is mapped with the training minimum and range, without clipping", "[data]") {
  RowMatrix<double> train(2, 1);
  train << 10, 20;
  const auto scaler = dptrain::MinMaxScaler<double>::fit(train);
  RowMatrix<double> other(3, 1);
  other << 15, 0, 30;
  scaler.transform(other);
  CHECK(other(0, 0) == 0.5);
  CHECK(other(1, 0) == -1.0);
  CHECK(other(2, 0) == 2.0);
}

TEST_CASE("MinMaxScaler: a column-count mismatch, no rows or a non-finite value is an invalid_argument", "[data]") {
  RowMatrix<float> x(2, 2);
  x << 1, 2, 3, 4;
  const auto scaler = dptrain::MinMaxScaler<float>::fit(x);
  RowMatrix<float> wrong(1, 3);
  wrong.setZero();
  CHECK_THROWS_AS(scaler.transform(wrong), dptrain::invalid_argument);
  CHECK_THROWS_AS(dptrain::MinMaxScaler<float>::fit(RowMatrix<float>(0, 2)), dptrain::invalid_argument);
  x(1, 0) = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(dptrain::MinMaxScaler<float>::fit(x), dptrain::invalid_argument);
}
