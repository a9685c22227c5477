// SPDX-License-Identifier: MIT
// TeamMember: one thread's view of the team it runs in (its rank, the team's size, the barrier).
#pragma once

#include <chrono>

#include "dptrain/core/omp.hpp"
#include "dptrain/core/team_barrier.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief One thread's view of the persistent OpenMP team that runs fit().
 *
 * Collectives are called by every member in the same order; barrier() must be reached by all of
 * them. It is the team's TeamBarrier when the members carry one (the trainer's, under
 * WaitPolicy::spin_then_sleep), otherwise an orphaned `omp barrier`, valid only inside the
 * team's region. Every member of a team must carry the same one.
 *
 * Inside fit() each member carries `waited`, the thread's barrier clock: every barrier adds the
 * seconds it waited, so that a worker's wait is counted as wait wherever the barrier is (in the
 * step, in an aggregator, in a hook's ctx.team work). Other teams leave it null and pay nothing.
 */
struct TeamMember {
  Index rank = 0;                       ///< this thread, 0 ≤ rank < size
  Index size = 1;                       ///< threads in the team
  double* waited = nullptr;             ///< if set, each barrier adds the seconds it waited here
  TeamBarrier* team_barrier = nullptr;  ///< if set, barrier() waits here instead of at an `omp barrier`

  /// A team of one has nothing to wait for; libgomp would still spend about a microsecond.
  void barrier() const noexcept {
    if (size == 1) return;
    if (waited == nullptr) {
      wait();
      return;
    }
    const std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
    wait();
    *waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
  }

 private:
  void wait() const noexcept {
    if (team_barrier != nullptr) {
      team_barrier->arrive_and_wait(size);
    } else {
      DPTRAIN_OMP(barrier);
    }
  }
};

namespace detail {

/// The calling thread's global worker index in the fit() it runs; -1 outside one.
inline thread_local Index current_worker = -1;

/// Marks the calling thread as global worker `worker` while it lives, then restores the mark it
/// found (a fit() run inside another's hook).
class WorkerMark {
 public:
  explicit WorkerMark(Index worker) noexcept : previous_(current_worker) { current_worker = worker; }
  ~WorkerMark() { current_worker = previous_; }
  WorkerMark(const WorkerMark&) = delete;
  WorkerMark& operator=(const WorkerMark&) = delete;

 private:
  Index previous_;
};

}  // namespace detail

/**
 * @brief The worker the calling thread is in the fit() it runs: its global index (this process's
 * first worker + its thread), numbered as a Partitioner's `rank`; -1 outside fit().
 *
 * A Worker's state is not always one worker's: BackupWorkers keeps a pool of states that any of
 * its threads takes. A Worker that acts per worker (StragglerWorker slows chosen ones) asks this
 * when it runs, under every synchronizer, instead of keeping the number its state was made with.
 */
[[nodiscard]] inline Index current_worker() noexcept {
  return detail::current_worker;
}

}  // namespace dptrain
