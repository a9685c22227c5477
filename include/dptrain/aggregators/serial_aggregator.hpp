// SPDX-License-Identifier: MIT
// SerialAggregator: thread 0 sums every buffer, as a parameter server would.
#pragma once

#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/team_member.hpp"

namespace dptrain {

/**
 * @brief Thread 0 adds all N buffers into buffer 0 while the others wait: the parameter-server
 * picture, and the baseline the parallel aggregators are measured against.
 *
 * Cost per step: 1 barrier; thread 0 reads (N−1)·n and writes n values, the others nothing;
 * no extra memory; deterministic (sums in rank order). Its time grows linearly with N.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.1}, dptrain::SerialAggregator{});
 * @endcode
 */
struct SerialAggregator {
  /// Collective: every thread calls it; returns this thread's shard of the sum (in buffer 0).
  template <class Scalar>
  VectorMap<Scalar> all_reduce(const TeamMember& team, const GradientBuffers<Scalar>& buffers) const noexcept {
    if (team.rank == 0) {
      VectorMap<Scalar> sum = buffers.buffer(0);
      for (Index u = 1; u < buffers.count(); ++u) sum += buffers.buffer(u);
    }
    if (team.size > 1) team.barrier();
    return buffers.shard(0, team.rank);
  }
};

}  // namespace dptrain
