// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "dptrain/concepts.hpp"
#include "dptrain/partitioners/weighted_partitioner.hpp"

static_assert(dptrain::Partitioner<dptrain::WeightedPartitioner>);

using Catch::Matchers::Contains;
using dptrain::Index;

TEST_CASE("WeightedPartitioner: sizes follow the shares", "[partitioners]") {
  const dptrain::WeightedPartitioner p{.shares = {2, 1, 1}};
  CHECK(p.range(8, 3, 0) == dptrain::IndexRange{0, 4});
  CHECK(p.range(8, 3, 1) == dptrain::IndexRange{4, 2});
  CHECK(p.range(8, 3, 2) == dptrain::IndexRange{6, 2});
  const dptrain::WeightedPartitioner zero_share{.shares = {1, 0, 3}};
  CHECK(zero_share.range(8, 3, 1).empty());
  CHECK(zero_share.range(8, 3, 2) == dptrain::IndexRange{2, 6});
}

TEST_CASE("WeightedPartitioner: contiguous ranges always cover the batch", "[partitioners]") {
  const dptrain::WeightedPartitioner p{.shares = {0.3, 1.7, 0.25, 1.0, 2.2}};
  const Index batch = GENERATE(0, 1, 3, 7, 100, 1001);
  Index next = 0;
  for (Index rank = 0; rank < 5; ++rank) {
    const dptrain::IndexRange r = p.range(batch, 5, rank);
    CHECK(r.begin == next);
    CHECK(r.size >= 0);
    next = r.end();
  }
  CHECK(next == batch);
}

TEST_CASE("WeightedPartitioner: validate rejects a share count or value that cannot work", "[partitioners]") {
  const dptrain::WeightedPartitioner two{.shares = {1, 1}}, negative{.shares = {1, -1}}, zero{.shares = {0, 0}},
      one_idle{.shares = {0, 1}};
  CHECK_THROWS_WITH(two.validate(3), Contains("2 shares for 3 workers"));
  CHECK_THROWS_WITH(negative.validate(2), Contains("-1"));
  CHECK_THROWS_AS(zero.validate(2), dptrain::invalid_argument);
  CHECK_NOTHROW(one_idle.validate(2));
}
