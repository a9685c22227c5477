// SPDX-License-Identifier: MIT
// Tests of shard_of(): every rank's strided shard, all of one size, none overlapping.
#include <catch2/catch.hpp>

#include <vector>

#include "dptrain/data/shard.hpp"

using Catch::Matchers::Contains;
using dptrain::Index;
using dptrain::Label;

TEST_CASE("shard_of: equal strided shards that together hold all but the last n mod ranks rows", "[data]") {
  const Index n = GENERATE(7, 12, 13);
  const Index ranks = GENERATE(1, 2, 3, 5);
  // Row i holds i, target 10·i: each row identifies its origin.
  dptrain::DenseDataset<double, Label> data{dptrain::RowMatrix<double>(n, 2), dptrain::Vector<Label>(n)};
  for (Index i = 0; i < n; ++i) {
    data.features.row(i) << static_cast<double>(i), 1.0;
    data.targets[i] = static_cast<Label>(10 * i);
  }
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  for (Index rank = 0; rank < ranks; ++rank) {
    const auto shard = dptrain::shard_of(data, rank, ranks);
    REQUIRE(shard.size() == n / ranks);
    for (Index p = 0; p < shard.size(); ++p) {
      const auto row = static_cast<Index>(shard.features(p, 0));
      CHECK(row == rank + p * ranks);
      CHECK(shard.targets[p] == 10 * row);
      ++seen[static_cast<std::size_t>(row)];
    }
  }
  for (Index i = 0; i < n; ++i) CHECK(seen[static_cast<std::size_t>(i)] == (i < n / ranks * ranks ? 1 : 0));
}

TEST_CASE("shard_of: a rank outside the ranks, or too few rows, is refused", "[data]") {
  dptrain::DenseDataset<double, Label> data{dptrain::RowMatrix<double>::Zero(3, 2), dptrain::Vector<Label>::Zero(3)};
  CHECK_THROWS_WITH(dptrain::shard_of(data, 2, 2), Contains("rank 2 is not one of 2 ranks"));
  CHECK_THROWS_WITH(dptrain::shard_of(data, -1, 2), Contains("is not one of"));
  CHECK_THROWS_WITH(dptrain::shard_of(data, 0, 4), Contains("3 rows make no shard for each of 4 ranks"));
}
