// SPDX-License-Identifier: MIT
// SingleProcessCommunicator: the default communication seam, one process; every operation is free.
#pragma once

#include "dptrain/concepts.hpp"

namespace dptrain {

/**
 * @brief The Communicator of a run in one process: the thread team is the whole world, so
 * broadcasting θ and summing across processes do nothing and cost nothing.
 *
 * It is DataParallelTrainer's default. A run over several processes (MPI ranks) names another
 * Communicator, which sums each thread's gradient shard and the step's scalars across processes.
 *
 * @code
 * static_assert(dptrain::Communicator<dptrain::SingleProcessCommunicator>);
 * @endcode
 */
struct SingleProcessCommunicator {
  /// One fit()'s process group: this process alone, its threads are all the workers.
  struct Group {
    Index threads = 1;

    [[nodiscard]] Index rank() const noexcept { return 0; }
    [[nodiscard]] Index size() const noexcept { return 1; }
    [[nodiscard]] Index first_worker() const noexcept { return 0; }
    [[nodiscard]] Index workers() const noexcept { return threads; }
    template <class Scalar>
    void broadcast(VectorMap<Scalar> /*theta*/) const noexcept {}
    template <class Scalar>
    void all_reduce(const TeamMember& /*me*/, VectorMap<Scalar> /*shard*/) const noexcept {}
    void all_reduce(StepScalars& /*scalars*/) const noexcept {}
  };

  /// The group of one fit() of `threads` threads; there is no other process to compare with.
  [[nodiscard]] Group connect(Index threads, const RunSignature& /*run*/) const noexcept { return {threads}; }
};

}  // namespace dptrain
