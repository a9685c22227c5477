// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/partitioners/balancing_partitioner.hpp"

static_assert(dptrain::AdaptivePartitioner<dptrain::BalancingPartitioner>);
static_assert(!dptrain::AdaptivePartitioner<dptrain::EvenPartitioner>);

using Catch::Matchers::Contains;
using dptrain::Index;
using dptrain::IndexRange;
using dptrain::WorkerLoad;

namespace {

std::vector<Index> sizes(const dptrain::BalancingPartitioner& p, Index batch, Index workers) {
  std::vector<Index> out;
  Index next = 0;
  for (Index rank = 0; rank < workers; ++rank) {
    const IndexRange r = p.range(batch, workers, rank);
    REQUIRE(r.begin == next);  // contiguous, in order
    REQUIRE(r.size >= 0);
    next = r.end();
    out.push_back(r.size);
  }
  REQUIRE(next == batch);  // covers the batch
  return out;
}

}  // namespace

TEST_CASE("BalancingPartitioner: the even split until it has measured the team", "[partitioners]") {
  dptrain::BalancingPartitioner p;
  const Index workers = GENERATE(1, 2, 3, 7), batch = GENERATE(0, 1, 5, 256, 1001);
  for (Index rank = 0; rank < workers; ++rank)
    CHECK(p.range(batch, workers, rank) == dptrain::EvenPartitioner{}.range(batch, workers, rank));
  // Measurements of another team size do not apply to this one.
  p.observe(std::vector<WorkerLoad>{{10, 1.0}, {10, 3.0}, {10, 2.0}, {10, 1.0}, {10, 1.0}});
  for (Index rank = 0; rank < workers; ++rank)
    CHECK(p.range(batch, workers, rank) == dptrain::EvenPartitioner{}.range(batch, workers, rank));
  CHECK(p.max_size(batch, workers) >= (batch + workers - 1) / workers);
}

TEST_CASE("BalancingPartitioner: shares follow the measured speeds", "[partitioners]") {
  dptrain::BalancingPartitioner p{.smoothing = 1.0};
  CHECK(p.shares().empty());
  // Worker 0 computes 128 samples in 1 ms, worker 1 in 2 ms: it is half as fast.
  p.observe(std::vector<WorkerLoad>{{128, 1e-3}, {128, 2e-3}});
  REQUIRE(p.shares().size() == 2);
  CHECK(p.shares()[0] == Approx(2.0 / 3));
  CHECK(p.shares()[1] == Approx(1.0 / 3));
  CHECK(sizes(p, 256, 2) == std::vector<Index>{168, 88});  // 170.7 rounded to a multiple of 8
  CHECK(sizes(p, 3, 2) == std::vector<Index>{2, 1});       // granule 1 for tiny batches
  dptrain::BalancingPartitioner exact{.smoothing = 1.0, .granule = 1};
  exact.observe(std::vector<WorkerLoad>{{128, 1e-3}, {128, 2e-3}});
  CHECK(sizes(exact, 256, 2) == std::vector<Index>{171, 85});
  // Three workers at speeds 1 : 2 : 1; 100 samples: granule 4 (8 of them per even share).
  p.observe(std::vector<WorkerLoad>{{10, 1.0}, {20, 1.0}, {10, 1.0}});
  CHECK(sizes(p, 100, 3) == std::vector<Index>{24, 52, 24});
}

TEST_CASE("BalancingPartitioner: speeds are smoothed over steps", "[partitioners]") {
  dptrain::BalancingPartitioner p{.smoothing = 0.5};
  p.observe(std::vector<WorkerLoad>{{100, 1.0}, {100, 1.0}});  // first step: taken as it is
  CHECK(p.shares()[0] == Approx(0.5));
  p.observe(std::vector<WorkerLoad>{{100, 1.0}, {100, 0.5}});  // worker 1 now at 200/s: estimate 150/s
  CHECK(p.shares()[1] == Approx(150.0 / 250));
  // A worker without samples keeps its estimate.
  p.observe(std::vector<WorkerLoad>{{100, 1.0}, {0, 0.0}});
  CHECK(p.shares()[1] == Approx(150.0 / 250));
}

TEST_CASE("BalancingPartitioner: a worker never measured counts as the mean of the others", "[partitioners]") {
  dptrain::BalancingPartitioner p;
  p.observe(std::vector<WorkerLoad>{{10, 1.0}, {0, 0.0}, {30, 1.0}});
  CHECK(p.shares()[1] == Approx(20.0 / 60));
  dptrain::BalancingPartitioner none;
  none.observe(std::vector<WorkerLoad>{{0, 0.0}, {0, 0.0}});
  CHECK(none.shares().empty());
  CHECK(none.range(10, 2, 1) == IndexRange{5, 5});
}

TEST_CASE("BalancingPartitioner: shares stay within min_factor and max_factor of the even share", "[partitioners]") {
  dptrain::BalancingPartitioner p{.smoothing = 1.0, .min_factor = 0.25, .max_factor = 2.0};
  // Worker 3 is a thousand times slower, worker 0 ten times faster than the rest.
  p.observe(std::vector<WorkerLoad>{{100, 0.1}, {100, 1.0}, {100, 1.0}, {100, 1000.0}});
  const std::vector<double> shares = p.shares();
  CHECK(shares[3] == Approx(0.25 / 4));   // the floor: it keeps being measured
  CHECK(shares[0] == Approx(2.0 / 4));    // the cap: buffers hold max_size() rows
  CHECK(shares[1] == Approx(shares[2]));  // the rest shared by speed
  CHECK(shares[0] + shares[1] + shares[2] + shares[3] == Approx(1.0));
  CHECK(sizes(p, 256, 4) == std::vector<Index>{128, 56, 56, 16});
}

TEST_CASE("BalancingPartitioner: speeds within the noise leave the even split", "[partitioners]") {
  dptrain::BalancingPartitioner p{.smoothing = 1.0};
  p.observe(std::vector<WorkerLoad>{{128, 1.00e-3}, {128, 1.02e-3}});  // 2% apart: under one granule
  CHECK(sizes(p, 256, 2) == std::vector<Index>{128, 128});
  p.observe(std::vector<WorkerLoad>{{128, 1.00e-3}, {128, 1.10e-3}});  // 10% apart: one granule moves
  CHECK(sizes(p, 256, 2) == std::vector<Index>{136, 120});
}

TEST_CASE("BalancingPartitioner: random speeds always give a cover within max_size", "[partitioners]") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> log_speed(-4, 4);
  for (int trial = 0; trial < 500; ++trial) {
    const Index workers = 1 + static_cast<Index>(rng() % 16);
    const double min_factor = static_cast<double>(1 + rng() % 4) / 4,
                 max_factor = 1 + static_cast<double>(rng() % 12) / 4;
    const Index granule = 1 + static_cast<Index>(rng() % 16);
    dptrain::BalancingPartitioner p{
        .smoothing = 0.3, .min_factor = min_factor, .max_factor = max_factor, .granule = granule};
    std::vector<WorkerLoad> loads(static_cast<std::size_t>(workers));
    for (int step = 0; step < 3; ++step) {
      for (WorkerLoad& l : loads) l = {1 + static_cast<Index>(rng() % 500), std::exp(log_speed(rng))};
      p.observe(loads);
      for (const Index batch : {Index{0}, Index{1}, workers, Index{255}, Index{256}, Index{1000}}) {
        const std::vector<Index> s = sizes(p, batch, workers);
        const Index largest = *std::max_element(s.begin(), s.end());
        CHECK(largest <= p.max_size(batch, workers));
      }
    }
  }
}

TEST_CASE("BalancingPartitioner: with a fixed cost per step, the gradient times become equal", "[partitioners]") {
  // Simulated workers: time = fixed + samples · per_sample, worker 1 at 60% of worker 0's speed.
  const double fixed = 5e-6, per_sample[2] = {0.2e-6, 0.2e-6 / 0.6};
  dptrain::BalancingPartitioner p{.granule = 1};
  double times[2] = {0, 0};
  for (int step = 0; step < 100; ++step) {
    std::vector<WorkerLoad> loads;
    for (Index rank = 0; rank < 2; ++rank) {
      const Index n = p.range(256, 2, rank).size;
      times[rank] = fixed + static_cast<double>(n) * per_sample[rank];
      loads.push_back({n, times[rank]});
    }
    p.observe(loads);
  }
  // Equal within two samples of the slower worker (sizes are whole samples); the even split
  // would leave them 17 µs apart.
  CHECK(std::abs(times[0] - times[1]) <= 2 * per_sample[1]);
}

TEST_CASE("BalancingPartitioner: validate rejects parameters outside their ranges", "[partitioners]") {
  CHECK_NOTHROW(dptrain::BalancingPartitioner{}.validate(4));
  CHECK_THROWS_WITH((dptrain::BalancingPartitioner{.smoothing = 0}.validate(2)), Contains("smoothing"));
  CHECK_THROWS_WITH((dptrain::BalancingPartitioner{.smoothing = 1.5}.validate(2)), Contains("smoothing"));
  CHECK_THROWS_WITH((dptrain::BalancingPartitioner{.min_factor = 0}.validate(2)), Contains("min_factor"));
  CHECK_THROWS_WITH((dptrain::BalancingPartitioner{.min_factor = 1.5}.validate(2)), Contains("min_factor"));
  CHECK_THROWS_WITH((dptrain::BalancingPartitioner{.max_factor = 0.5}.validate(2)), Contains("max_factor"));
  CHECK_THROWS_AS((dptrain::BalancingPartitioner{.max_factor = INFINITY}.validate(2)), dptrain::invalid_argument);
  CHECK_THROWS_WITH((dptrain::BalancingPartitioner{.granule = 0}.validate(2)), Contains("granule"));
}
