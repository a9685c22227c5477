// SPDX-License-Identifier: MIT
// TreeAggregator: pairwise reduction in ceil(log2 N) rounds.
#pragma once

#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/team_member.hpp"

namespace dptrain {

/**
 * @brief Pairwise tree reduction: in round k (stride s = 2^k) thread t with t mod 2s = 0 adds
 * buffer t + s into buffer t; after ⌈log2 N⌉ rounds buffer 0 holds the sum.
 *
 * Cost per step: ⌈log2 N⌉ barriers; a thread reads and writes at most ⌈log2 N⌉·n values (thread 0
 * does every round), half the threads idle in each round; no extra memory; deterministic.
 * Choose it for moderate N when buffers are small enough that barriers, not bandwidth, dominate.
 */
struct TreeAggregator {
  /// Collective: every thread calls it; returns this thread's shard of the sum (in buffer 0).
  template <class Scalar>
  VectorMap<Scalar> all_reduce(const TeamMember& team, const GradientBuffers<Scalar>& buffers) const noexcept {
    for (Index stride = 1; stride < team.size; stride *= 2) {
      if (team.rank % (2 * stride) == 0 && team.rank + stride < team.size)
        buffers.buffer(team.rank) += buffers.buffer(team.rank + stride);
      team.barrier();
    }
    return buffers.shard(0, team.rank);
  }
};

}  // namespace dptrain
