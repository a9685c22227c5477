// SPDX-License-Identifier: MIT
// ThreadTeam: runs one function on every thread of a team, SPMD style, like an OpenMP region.
#pragma once

#include <atomic>
#include <exception>
#include <string>
#include <type_traits>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/omp.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief A set of threads that data-parallel work runs on: `run(f)` calls `f(member)` once on
 * each thread, with `member.rank` in [0, size()), and returns when every call has returned.
 *
 * A ThreadTeam made from a thread count opens an OpenMP parallel region of that many threads for
 * each run() (inside an active region the nested one is inactive: one thread, same result). The
 * trainer's hooks receive `ctx.team` instead, which runs the work on the trainer's own threads
 * while they would otherwise wait for the hook: an epoch-end evaluation uses every worker at
 * no fork/join cost. Either way f may call `member.barrier()` if every member reaches it (an
 * `omp barrier` in a region of its own; in ctx.team, the trainer's barrier, as its WaitPolicy
 * says); a call that throws must not leave the others waiting at a barrier.
 *
 * The evaluation helpers (accuracy, mean_loss, confusion_matrix) take a ThreadTeam, so they accept
 * both a thread count and `ctx.team`.
 *
 * @code
 * std::vector<double> partial(team.size());
 * team.run([&](const dptrain::TeamMember& me) { partial[me.rank] = work(me.rank, me.size); });
 * @endcode
 */
class ThreadTeam {
 public:
  /// One function call on one thread: `f` is the caller's function object.
  using Task = void (*)(void* f, const TeamMember& member);
  /// How a team that already runs (the trainer's) hands a task to its threads.
  using Dispatch = void (*)(void* owner, Task task, void* f);

  /**
   * @brief A team of `threads` threads, opened as an OpenMP parallel region by each run().
   * Implicit, so that a thread count can be passed wherever a team is expected.
   * @throws dptrain::invalid_argument for threads < 1
   */
  ThreadTeam(Index threads = default_threads()) : threads_(threads) {
    if (threads < 1)
      throw invalid_argument("dptrain::ThreadTeam: threads must be at least 1, got " + std::to_string(threads));
  }

  /// A team of `threads` threads that already run: run() calls `dispatch(owner, task, &f)`.
  ThreadTeam(Index threads, void* owner, Dispatch dispatch) noexcept
      : threads_(threads), owner_(owner), dispatch_(dispatch) {}

  /// Threads in the team: every run() calls f this many times (fewer only when nested, see above).
  [[nodiscard]] Index size() const noexcept { return threads_; }

  /**
   * @brief Calls f(member) on every thread of the team, in parallel; returns when all are done.
   * @throws the first exception any call threw, with its original type, after all have returned
   */
  template <class F>
  void run(F&& f) const {
    using Fn = std::remove_reference_t<F>;
    const Task task = [](void* fn, const TeamMember& member) { (*static_cast<Fn*>(fn))(member); };
    void* fn = const_cast<void*>(static_cast<const void*>(&f));
    if (dispatch_ != nullptr)
      dispatch_(owner_, task, fn);
    else
      run_region(task, fn);
  }

 private:
  void run_region(Task task, void* f) const {
    std::exception_ptr error;
    DPTRAIN_OMP(parallel num_threads(threads_)) {
      const TeamMember member{detail::omp_thread_id(), detail::omp_team_size()};
      try {
        task(f, member);
      } catch (...) {
        DPTRAIN_OMP(critical(dptrain_thread_team_error)) {
          if (!error) error = std::current_exception();
        }
      }
    }
    if (error) std::rethrow_exception(error);
  }

  Index threads_ = 1;
  void* owner_ = nullptr;
  Dispatch dispatch_ = nullptr;
};

}  // namespace dptrain
