// SPDX-License-Identifier: MIT
// ReduceScatterAggregator: thread t sums shard t of every buffer (the default aggregator).
#pragma once

#include <algorithm>

#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/team_member.hpp"

namespace dptrain {

/**
 * @brief Reduce-scatter: thread t sums shard t of all N buffers into its own buffer, so the N
 * threads share the reduction evenly and each then updates only its own slice of θ.
 *
 * Cost per step: no barrier of its own (the trainer's barrier after the local gradients
 * suffices); each thread reads n values (N shards of n/N) and writes n/N; no extra memory;
 * deterministic for a given thread count. Bandwidth-optimal in shared memory, and the default.
 */
struct ReduceScatterAggregator {
  /// Collective: every thread calls it; returns this thread's shard of the sum (in its own buffer).
  template <class Scalar>
  VectorMap<Scalar> all_reduce(const TeamMember& team, const GradientBuffers<Scalar>& buffers) const noexcept {
    VectorMap<Scalar> mine = buffers.shard(team.rank, team.rank);
    if (team.size == 1) return mine;  // nothing to add
    // Blocks small enough to stay in L1 while every buffer's block is added into them.
    constexpr Index block = 2048;
    for (Index begin = 0; begin < mine.size(); begin += block) {
      const Index count = std::min(block, mine.size() - begin);
      auto out = mine.segment(begin, count);
      for (Index u = 0; u < team.size; ++u)
        if (u != team.rank) out += buffers.shard(u, team.rank).segment(begin, count);
    }
    return mine;
  }
};

}  // namespace dptrain
