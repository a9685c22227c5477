// SPDX-License-Identifier: MIT
// TeamMember: one thread's view of the team it runs in (its rank, the team's size, the barrier).
#pragma once

#include <chrono>

#include "dptrain/core/omp.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief One thread's view of the persistent OpenMP team that runs fit().
 *
 * Collectives are called by every member in the same order; barrier() must be reached by all of
 * them (it is an orphaned `omp barrier`, valid only inside the team's region).
 *
 * Inside fit() each member carries `waited`, the thread's barrier clock: every barrier adds the
 * seconds it waited, so that a worker's wait is counted as wait wherever the barrier is (in the
 * step, in an aggregator, in a hook's ctx.team work). Other teams leave it null and pay nothing.
 */
struct TeamMember {
  Index rank = 0;            ///< this thread, 0 ≤ rank < size
  Index size = 1;            ///< threads in the team
  double* waited = nullptr;  ///< if set, each barrier adds the seconds it waited here

  /// A team of one has nothing to wait for; libgomp would still spend about a microsecond.
  void barrier() const noexcept {
    if (size == 1) return;
    if (waited == nullptr) {
      DPTRAIN_OMP(barrier);
      return;
    }
    const std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
    DPTRAIN_OMP(barrier);
    *waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
  }
};

}  // namespace dptrain
