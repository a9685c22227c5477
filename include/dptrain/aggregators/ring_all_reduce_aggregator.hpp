// SPDX-License-Identifier: MIT
// RingAllReduceAggregator: the classic ring, N−1 reduce-scatter then N−1 all-gather steps.
#pragma once

#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/team_member.hpp"

namespace dptrain {

/**
 * @brief The ring all-reduce of Patarasuk & Yuan (2009), as used by Horovod and NCCL: the
 * buffers are cut into N chunks (the shards); in each of N−1 reduce-scatter steps every thread
 * adds one chunk received from its left neighbour, then in N−1 all-gather steps it copies the
 * finished chunks around the ring. Afterwards every buffer holds the whole sum.
 *
 * Cost per step: 2(N−1) barriers; each thread reads 2(N−1)·n/N and writes 2(N−1)·n/N values,
 * the bandwidth-optimal volume for message passing; no extra memory; deterministic.
 * In shared memory it does more work than ReduceScatterAggregator (which reads neighbours'
 * buffers directly); it is here because it is the algorithm that crosses machines, and to be
 * measured against.
 */
struct RingAllReduceAggregator {
  /// Collective: every thread calls it; returns this thread's shard of the sum (in its own buffer).
  template <class Scalar>
  VectorMap<Scalar> all_reduce(const TeamMember& team, const GradientBuffers<Scalar>& buffers) const noexcept {
    const Index n = team.size, me = team.rank, left = (me + n - 1) % n;
    // Reduce-scatter: at step s, receive chunk (me − 1 − s) from the left and add it.
    for (Index s = 0; s + 1 < n; ++s) {
      const Index chunk = ((me - 1 - s) % n + n) % n;
      buffers.shard(me, chunk) += buffers.shard(left, chunk);
      team.barrier();
    }
    // Now buffer `me` holds the finished chunk me + 1. All-gather: at step s, copy chunk (me − s).
    for (Index s = 0; s + 1 < n; ++s) {
      const Index chunk = ((me - s) % n + n) % n;
      buffers.shard(me, chunk) = buffers.shard(left, chunk);
      team.barrier();
    }
    return buffers.shard(me, me);
  }
};

}  // namespace dptrain
