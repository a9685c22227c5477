// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "dptrain/concepts.hpp"
#include "dptrain/partitioners/even_partitioner.hpp"

static_assert(dptrain::Partitioner<dptrain::EvenPartitioner>);

using dptrain::Index;

TEST_CASE("EvenPartitioner: contiguous ranges cover the batch, sizes differ by at most one", "[partitioners]") {
  const Index batch = GENERATE(0, 1, 5, 7, 10, 64, 257);
  const Index workers = GENERATE(1, 2, 3, 4, 7, 16);
  const dptrain::EvenPartitioner p;
  Index next = 0, smallest = batch, largest = 0;
  for (Index rank = 0; rank < workers; ++rank) {
    const dptrain::IndexRange r = p.range(batch, workers, rank);
    CHECK(r.begin == next);
    next = r.end();
    smallest = std::min(smallest, r.size);
    largest = std::max(largest, r.size);
  }
  CHECK(next == batch);
  CHECK(largest - smallest <= 1);
}

TEST_CASE("EvenPartitioner: the first batch % workers workers take the extra sample", "[partitioners]") {
  const dptrain::EvenPartitioner p;
  CHECK(p.range(10, 4, 0) == dptrain::IndexRange{0, 3});
  CHECK(p.range(10, 4, 1) == dptrain::IndexRange{3, 3});
  CHECK(p.range(10, 4, 2) == dptrain::IndexRange{6, 2});
  CHECK(p.range(10, 4, 3) == dptrain::IndexRange{8, 2});
}

TEST_CASE("EvenPartitioner: more workers than samples leaves trailing workers empty", "[partitioners]") {
  const dptrain::EvenPartitioner p;
  CHECK(p.range(2, 5, 1) == dptrain::IndexRange{1, 1});
  CHECK(p.range(2, 5, 2).empty());
  CHECK(p.range(2, 5, 4).empty());
}
