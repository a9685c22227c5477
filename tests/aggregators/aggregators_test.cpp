// SPDX-License-Identifier: MIT
// Every aggregator against an exact oracle, for many team sizes and buffer lengths.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dptrain/aggregators/any_aggregator.hpp"
#include "dptrain/aggregators/reduce_scatter_aggregator.hpp"
#include "dptrain/aggregators/ring_all_reduce_aggregator.hpp"
#include "dptrain/aggregators/serial_aggregator.hpp"
#include "dptrain/aggregators/tree_aggregator.hpp"
#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/errors.hpp"

using dptrain::Index;

static_assert(dptrain::Aggregator<dptrain::SerialAggregator>);
static_assert(dptrain::Aggregator<dptrain::TreeAggregator>);
static_assert(dptrain::Aggregator<dptrain::ReduceScatterAggregator>);
static_assert(dptrain::Aggregator<dptrain::RingAllReduceAggregator>);
static_assert(dptrain::Aggregator<dptrain::AnyAggregator>);

namespace {

// AnyAggregator holding A, default-constructible as check_all_reduce() needs.
template <class A>
struct AnyHolding : dptrain::AnyAggregator {
  AnyHolding() : dptrain::AnyAggregator(A{}) {}
};

// Buffer u, element i holds u·1000 + i: small integers, so every sum is exact in float too.
template <class Aggregator, class Scalar>
void check_all_reduce(Index threads, Index length) {
  std::vector<dptrain::AlignedBuffer<Scalar>> storage;
  std::vector<Scalar*> pointers;
  for (Index u = 0; u < threads; ++u) {
    storage.emplace_back(length);
    for (Index i = 0; i < length; ++i) storage.back().data()[i] = static_cast<Scalar>(u * 1000 + i % 997);
    pointers.push_back(storage.back().data());
  }
  const dptrain::GradientBuffers<Scalar> buffers{pointers, {length, threads}};
  std::vector<std::pair<const Scalar*, Index>> results(static_cast<std::size_t>(threads));
  Index team_size = 0;
  DPTRAIN_OMP(parallel num_threads(threads)) {
    const dptrain::TeamMember team{dptrain::detail::omp_thread_id(), dptrain::detail::omp_team_size()};
    if (team.rank == 0) team_size = team.size;
    const dptrain::VectorMap<Scalar> shard = Aggregator{}.all_reduce(team, buffers);
    results[static_cast<std::size_t>(team.rank)] = {shard.data(), shard.size()};
  }
  REQUIRE(team_size == threads);
  const auto expected = [&](Index i) {
    return static_cast<Scalar>(1000 * threads * (threads - 1) / 2 + threads * (i % 997));
  };
  Index covered = 0;
  for (Index t = 0; t < threads; ++t) {
    const dptrain::IndexRange shard = buffers.layout.shard(t);
    const dptrain::ConstVectorMap<Scalar> r(results[static_cast<std::size_t>(t)].first,
                                            results[static_cast<std::size_t>(t)].second);
    REQUIRE(r.size() == shard.size);
    CHECK(shard.begin == covered);
    covered += shard.size;
    for (Index i = 0; i < shard.size; ++i) {
      if (r[i] != expected(shard.begin + i)) FAIL("thread " << t << " element " << shard.begin + i << ": " << r[i]);
    }
  }
  CHECK(covered == length);
}

}  // namespace

TEMPLATE_TEST_CASE("Aggregators: every thread's shard is the exact sum of all buffers", "[aggregators]",
                   dptrain::SerialAggregator, dptrain::TreeAggregator, dptrain::ReduceScatterAggregator,
                   dptrain::RingAllReduceAggregator, AnyHolding<dptrain::SerialAggregator>,
                   AnyHolding<dptrain::TreeAggregator>, AnyHolding<dptrain::ReduceScatterAggregator>,
                   AnyHolding<dptrain::RingAllReduceAggregator>) {
  const Index threads = GENERATE(1, 2, 3, 4, 5, 7, 8);
  const Index length = GENERATE(1, 7, 16, 100, 1000, 4099);
  check_all_reduce<TestType, float>(threads, length);
  check_all_reduce<TestType, double>(threads, length);
}

namespace {

// Every buffer after one all_reduce by `aggregator` on `threads` threads, buffer u starting at
// u + 1 everywhere: each built-in aggregator leaves its own footprint in the buffers.
template <class A>
std::vector<std::vector<double>> buffers_after(const A& aggregator, Index threads = 4) {
  const Index length = 333;
  std::vector<dptrain::AlignedBuffer<double>> storage;
  std::vector<double*> pointers;
  for (Index u = 0; u < threads; ++u) {
    storage.emplace_back(length);
    storage.back().map().setConstant(static_cast<double>(u + 1));
    pointers.push_back(storage.back().data());
  }
  const dptrain::GradientBuffers<double> buffers{pointers, {length, threads}};
  DPTRAIN_OMP(parallel num_threads(threads)) {
    const dptrain::TeamMember team{dptrain::detail::omp_thread_id(), dptrain::detail::omp_team_size()};
    (void)aggregator.all_reduce(team, buffers);
  }
  std::vector<std::vector<double>> after;
  for (const auto& b : storage) after.emplace_back(b.data(), b.data() + length);
  return after;
}

}  // namespace

TEST_CASE("RingAllReduceAggregator: afterwards every buffer holds the whole sum", "[aggregators]") {
  const Index threads = GENERATE(2, 3, 5);
  const double sum = static_cast<double>(threads * (threads + 1) / 2);
  for (const std::vector<double>& b : buffers_after(dptrain::RingAllReduceAggregator{}, threads))
    CHECK(std::all_of(b.begin(), b.end(), [&](double x) { return x == sum; }));
}

TEST_CASE("AnyAggregator: named() holds the aggregator of that name", "[aggregators]") {
  const auto serial = buffers_after(dptrain::SerialAggregator{});
  const auto tree = buffers_after(dptrain::TreeAggregator{});
  const auto reduce_scatter = buffers_after(dptrain::ReduceScatterAggregator{});
  const auto ring = buffers_after(dptrain::RingAllReduceAggregator{});
  // The footprints differ, so equal buffers below mean the same aggregator ran.
  REQUIRE(serial != tree);
  REQUIRE(serial != reduce_scatter);
  REQUIRE(serial != ring);
  REQUIRE(tree != reduce_scatter);
  REQUIRE(tree != ring);
  REQUIRE(reduce_scatter != ring);
  CHECK(buffers_after(dptrain::AnyAggregator::named("serial")) == serial);
  CHECK(buffers_after(dptrain::AnyAggregator::named("tree")) == tree);
  CHECK(buffers_after(dptrain::AnyAggregator::named("reduce-scatter")) == reduce_scatter);
  CHECK(buffers_after(dptrain::AnyAggregator::named("ring")) == ring);
  CHECK(buffers_after(dptrain::AnyAggregator{}) == reduce_scatter);  // the trainer's default
  CHECK(buffers_after(dptrain::AnyAggregator(dptrain::TreeAggregator{})) == tree);
  for (const std::string_view name : dptrain::AnyAggregator::names)
    CHECK(dptrain::AnyAggregator::named(name).name() == name);
  CHECK(dptrain::AnyAggregator(dptrain::RingAllReduceAggregator{}).name() == "ring");
  CHECK_THROWS_AS(dptrain::AnyAggregator::named("butterfly"), dptrain::invalid_argument);
  CHECK_THROWS_WITH(
      dptrain::AnyAggregator::named("butterfly"),
      Catch::Matchers::Contains("\"butterfly\"") && Catch::Matchers::Contains("reduce-scatter, ring, tree or serial"));
}

TEST_CASE("ShardLayout: shards are cache-line aligned, in order, and cover all n values", "[aggregators]") {
  const Index length = GENERATE(0, 1, 15, 16, 17, 1000, 12345);
  const Index shards = GENERATE(1, 2, 3, 7, 64);
  const dptrain::ShardLayout<float> layout{length, shards};
  Index next = 0;
  for (Index t = 0; t < shards; ++t) {
    const dptrain::IndexRange r = layout.shard(t);
    CHECK(r.begin == next);
    if (r.size > 0 && r.end() < length) CHECK(r.end() % 16 == 0);
    next = r.end();
  }
  CHECK(next == length);
}
