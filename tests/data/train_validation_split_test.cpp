// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dptrain/data/train_validation_split.hpp"
#include "support/sparse_data.hpp"

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

// Row i: column 0 holds i + 1, column 1 + i mod 4 holds −i (row 0 has one entry); target i mod 7.
dptrain::SparseDataset<double, Label> numbered_sparse(Index n) {
  std::vector<Eigen::Triplet<double, Index>> entries;
  for (Index i = 0; i < n; ++i) {
    entries.emplace_back(i, 0, static_cast<double>(i + 1));
    if (i > 0) entries.emplace_back(i, 1 + i % 4, -static_cast<double>(i));
  }
  dptrain::SparseDataset<double, Label> data;
  data.features.resize(n, 5);
  data.features.setFromTriplets(entries.begin(), entries.end());
  data.targets.resize(n);
  for (Index i = 0; i < n; ++i) data.targets[i] = static_cast<Label>(i % 7);
  return data;
}

// The original row index of each row of a sparse `part`, after checking the row is intact.
std::vector<Index> sparse_origins(const dptrain::SparseDataset<double, Label>& part) {
  std::vector<Index> rows;
  const dptrain::RowMatrix<double> dense = part.features.toDense();
  for (Index i = 0; i < part.size(); ++i) {
    const auto origin = static_cast<Index>(dense(i, 0)) - 1;
    dptrain::RowMatrix<double> expected = dptrain::RowMatrix<double>::Zero(1, 5);
    expected(0, 0) = static_cast<double>(origin + 1);
    if (origin > 0) expected(0, 1 + origin % 4) = -static_cast<double>(origin);
    CHECK(dense.row(i) == expected);
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

TEST_CASE("train_validation_split: a sparse data set splits into intact rows, each in exactly one set", "[data]") {
  const Index n = GENERATE(3, 10, 257);
  const double fraction = GENERATE(0.2, 0.5);
  const auto data = numbered_sparse(n);
  const auto [train, validation] = dptrain::train_validation_split(data, fraction, 99);
  CHECK(validation.size() == static_cast<Index>(std::llround(fraction * static_cast<double>(n))));
  CHECK(train.dim() == 5);
  CHECK(validation.dim() == 5);
  CHECK(train.features.isCompressed());
  CHECK(validation.features.isCompressed());
  std::vector<Index> all = sparse_origins(train);
  const std::vector<Index> other = sparse_origins(validation);
  all.insert(all.end(), other.begin(), other.end());
  std::sort(all.begin(), all.end());
  std::vector<Index> expected(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = i;
  CHECK(all == expected);
}

TEST_CASE("train_validation_split: a sparse data set gets the same rows, in the same order, as its dense copy",
          "[data]") {
  const auto sparse = test::random_sparse<float>(150, 12, 0.3, 4, 21);
  const auto dense = test::dense_copy(sparse);
  const std::uint64_t seed = GENERATE(0, 1, 12345);
  const auto [sparse_train, sparse_validation] = dptrain::train_validation_split(sparse, 0.3, seed);
  const auto [dense_train, dense_validation] = dptrain::train_validation_split(dense, 0.3, seed);
  CHECK(dptrain::RowMatrix<float>(sparse_train.features.toDense()) == dense_train.features);
  CHECK(sparse_train.targets == dense_train.targets);
  CHECK(dptrain::RowMatrix<float>(sparse_validation.features.toDense()) == dense_validation.features);
  CHECK(sparse_validation.targets == dense_validation.targets);
  const auto [other_train, other_validation] = dptrain::train_validation_split(sparse, 0.3, seed + 1);
  CHECK(other_train.targets != sparse_train.targets);
}

TEST_CASE("train_validation_split: a sparse data set that does not validate, or a bad fraction, is an invalid_argument",
          "[data]") {
  auto data = numbered_sparse(10);
  CHECK_THROWS_AS(dptrain::train_validation_split(data, 1.5, 0), dptrain::invalid_argument);
  CHECK_THROWS_WITH(dptrain::train_validation_split(numbered_sparse(3), 0.1, 0),
                    Catch::Contains("validation set empty"));
  data.features.uncompress();
  CHECK_THROWS_WITH(dptrain::train_validation_split(data, 0.5, 0), Catch::Contains("must be compressed"));
}
