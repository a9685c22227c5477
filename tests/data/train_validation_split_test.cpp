// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dptrain/data/train_validation_split.hpp"

using dptrain::Index;
using dptrain::Label;

namespace {

// Row i = (i, −i, 0.5·i), target i mod 7: each row identifies its origin.
dptrain::DenseDataset<double, Label> numbered(Index n) {
  dptrain::DenseDataset<double, Label> data{dptrain::RowMatrix<double>(n, 3), dptrain::Vector<Label>(n)};
  for (Index i = 0; i < n; ++i) {
    data.features.row(i) << static_cast<double>(i), -static_cast<double>(i), 0.5 * static_cast<double>(i);
    data.targets[i] = static_cast<Label>(i % 7);
  }
  return data;
}

// The original row index of each row of `part`, after checking the row is intact.
std::vector<Index> origins(const dptrain::DenseDataset<double, Label>& part) {
  std::vector<Index> rows;
  for (Index i = 0; i < part.size(); ++i) {
    const auto origin = static_cast<Index>(part.features(i, 0));
    CHECK(part.features(i, 1) == -static_cast<double>(origin));
    CHECK(part.features(i, 2) == 0.5 * static_cast<double>(origin));
    CHECK(part.targets[i] == origin % 7);
    rows.push_back(origin);
  }
  return rows;
}

}  // namespace

TEST_CASE("train_validation_split: the validation set holds round(fraction times n) rows", "[data]") {
  const auto data = numbered(10);
  const auto [train, validation] = dptrain::train_validation_split(data, 0.3, 1);
  CHECK(train.size() == 7);
  CHECK(validation.size() == 3);
  CHECK(train.dim() == 3);
  CHECK(validation.dim() == 3);
  const auto [train2, validation2] = dptrain::train_validation_split(numbered(101), 0.25, 1);
  CHECK(validation2.size() == 25);
  CHECK(train2.size() == 76);
}

TEST_CASE("train_validation_split: every row lands intact in exactly one of the two sets", "[data]") {
  const Index n = GENERATE(3, 10, 257);
  const double fraction = GENERATE(0.2, 0.5);
  const auto data = numbered(n);
  const auto [train, validation] = dptrain::train_validation_split(data, fraction, 99);
  std::vector<Index> all = origins(train);
  const std::vector<Index> other = origins(validation);
  all.insert(all.end(), other.begin(), other.end());
  std::sort(all.begin(), all.end());
  std::vector<Index> expected(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = i;
  CHECK(all == expected);
}

TEST_CASE("train_validation_split: the same seed gives the same split, another seed another", "[data]") {
  const auto data = numbered(200);
  const auto [a_train, a_validation] = dptrain::train_validation_split(data, 0.2, 7);
  const auto [b_train, b_validation] = dptrain::train_validation_split(data, 0.2, 7);
  const auto [c_train, c_validation] = dptrain::train_validation_split(data, 0.2, 8);
  CHECK(a_train.features == b_train.features);
  CHECK(a_train.targets == b_train.targets);
  CHECK(a_validation.features == b_validation.features);
  CHECK(a_train.features != c_train.features);
  // Shuffled: not the identity order.
  CHECK(a_train.features.col(0) != data.features.col(0).head(160));
}

TEST_CASE("train_validation_split: fractions outside the open interval 0 to 1 are an invalid_argument", "[data]") {
  const auto data = numbered(10);
  const double fraction = GENERATE(0.0, 1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN());
  CHECK_THROWS_AS(dptrain::train_validation_split(data, fraction, 0), dptrain::invalid_argument);
}

TEST_CASE("train_validation_split: a split that leaves either set empty is an invalid_argument", "[data]") {
  CHECK_THROWS_WITH(dptrain::train_validation_split(numbered(3), 0.1, 0), Catch::Contains("validation set empty"));
  CHECK_THROWS_WITH(dptrain::train_validation_split(numbered(3), 0.9, 0), Catch::Contains("training set empty"));
  CHECK_THROWS_AS(dptrain::train_validation_split(numbered(1), 0.5, 0), dptrain::invalid_argument);
  CHECK_THROWS_AS(dptrain::train_validation_split(numbered(0), 0.5, 0), dptrain::invalid_argument);
}

TEST_CASE("train_validation_split: features and targets of different lengths are an invalid_argument", "[data]") {
  auto data = numbered(10);
  data.targets.conservativeResize(9);
  CHECK_THROWS_AS(dptrain::train_validation_split(data, 0.5, 0), dptrain::invalid_argument);
}
