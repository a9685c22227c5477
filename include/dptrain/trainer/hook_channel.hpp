// SPDX-License-Identifier: MIT
// HookChannel: thread 0 runs the callbacks' hooks while the other workers serve their ctx.team work.
#pragma once

#include <array>
#include <exception>
#include <utility>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/omp.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief How the trainer's team runs hooks: thread 0 runs them while the other threads wait for
 * the work a hook hands to `ctx.team` (team()), run it with thread 0, and return when thread 0
 * is done. Without tasks a hook point costs one barrier.
 *
 * Each hand-over is a *post*: a barrier after which every thread reads the posted task (none
 * ends the hook point). Posts alternate between two slots: a thread reads slot k after post k,
 * and thread 0 writes slot k again only after post k + 1, which that thread must reach first,
 * so no post overwrites a task a slow thread has yet to read. (With one slot thread 0 could post
 * the next hook point's task before a slow thread had read the empty post that ended the last.)
 */
class HookChannel {
 public:
  explicit HookChannel(Index threads) : threads_(threads), posts_(static_cast<std::size_t>(threads)) {}

  /**
   * @brief Collective: thread 0 runs `hooks()` (which must not throw: the caller guards it) while
   * the others serve ctx.team tasks; every thread returns when the hooks are done.
   */
  template <class Hooks>
  void run(const TeamMember& me, Hooks&& hooks) {
    if (me.rank == 0) {
      leader_ = me;
      std::forward<Hooks>(hooks)();
      post({});
      return;
    }
    Index& posts = posts_[static_cast<std::size_t>(me.rank)].count;
    for (;;) {
      me.barrier();  // a post
      const Task task = posted_[static_cast<std::size_t>(posts++ % 2)];
      if (task.run == nullptr) return;
      run_task(task, me);
      me.barrier();  // every call of the task has returned
    }
  }

  /// The team a hook's ctx carries: run(f) hands f to the waiting threads.
  [[nodiscard]] ThreadTeam team() noexcept { return ThreadTeam(threads_, this, &HookChannel::dispatch); }

 private:
  struct Task {
    ThreadTeam::Task run = nullptr;
    void* f = nullptr;
  };
  struct alignas(cache_line_bytes) PostCount {
    Index count = 0;  // posts passed: picks the slot to read
  };

  // Thread 0 posts the next task, or none.
  void post(Task task) {
    posted_[static_cast<std::size_t>(posts_[0].count++ % 2)] = task;
    leader_.barrier();
  }

  // ctx.team.run(f) in a hook, on thread 0: the waiting threads run f with it.
  static void dispatch(void* self, ThreadTeam::Task run, void* f) {
    HookChannel& channel = *static_cast<HookChannel*>(self);
    if (channel.dispatching_)
      throw error("dptrain::DataParallelTrainer: ctx.team.run() cannot be called inside ctx.team.run()");
    channel.dispatching_ = true;
    const Task task{run, f};
    channel.post(task);
    channel.run_task(task, channel.leader_);
    channel.leader_.barrier();  // every call of f has returned
    channel.dispatching_ = false;
    if (channel.task_error_) std::rethrow_exception(std::exchange(channel.task_error_, nullptr));
  }

  void run_task(const Task& task, const TeamMember& me) noexcept {
    try {
      task.run(task.f, me);
    } catch (...) {
      DPTRAIN_OMP(critical(dptrain_task_error)) {
        if (!task_error_) task_error_ = std::current_exception();
      }
    }
  }

  Index threads_;
  std::vector<PostCount> posts_;
  std::array<Task, 2> posted_{};
  TeamMember leader_;         // thread 0, with its barrier clock (set by run)
  bool dispatching_ = false;  // thread 0 is inside ctx.team.run
  std::exception_ptr task_error_;
};

}  // namespace dptrain
