// SPDX-License-Identifier: MIT
// TeamBarrier: a reusable barrier for a thread team that spins briefly, then sleeps (futex on Linux).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "dptrain/core/spin_then_sleep.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief A reusable barrier for a team of threads: each waiting thread spins for at most `spin`,
 * then sleeps until the last thread arrives (a futex on Linux, `std::atomic::wait` elsewhere).
 *
 * When to spin and when to sleep is detail::SpinThenSleep's rule, which the loops without
 * barriers (StepEvents) follow too: spin at most `spin`, then sleep; after long waits in two
 * rounds less than 10 ms apart (threads are being descheduled, as beside a busy process), sleep
 * at once for the next 10 ms; a quiet machine never gets there. OpenMP's own barrier decides this
 * from environment variables read at program start (OMP_WAIT_POLICY, GOMP_SPINCOUNT,
 * KMP_BLOCKTIME); this one from its constructor's argument and what it sees.
 *
 * Sense-reversing (the sense is a generation count): the last of `threads` arrivals resets the
 * count and advances the generation, which the others wait on. Every write a thread made before
 * arrive_and_wait() is visible to every thread after it returns (each arrival is a release on the
 * count, which the last arrival acquires and releases again with the generation, which every
 * waiter acquires): the guarantee of `omp barrier`, and one ThreadSanitizer sees.
 *
 * Every member of the team calls arrive_and_wait(threads) with the same `threads`, once per
 * round, like an `omp barrier`. Not copyable: the team shares one. It allocates nothing.
 *
 * @code
 * dptrain::TeamBarrier barrier(std::chrono::microseconds(50));
 * #pragma omp parallel num_threads(4)
 * {
 *   results[omp_get_thread_num()] = work();
 *   barrier.arrive_and_wait(4);  // every result is written and visible
 *   use(results);
 * }
 * @endcode
 */
class TeamBarrier {
 public:
  using Clock = std::chrono::steady_clock;

  /// Spins for at most `spin` (0: sleeps at once) at each barrier before sleeping.
  explicit TeamBarrier(std::chrono::nanoseconds spin = std::chrono::microseconds(50)) noexcept : rule_(spin) {}
  TeamBarrier(const TeamBarrier&) = delete;
  TeamBarrier& operator=(const TeamBarrier&) = delete;

  /// How long a waiting thread spins before it sleeps.
  [[nodiscard]] std::chrono::nanoseconds spin() const noexcept { return rule_.spin(); }

  /// Until when waiters sleep at once, without spinning, after long waits in two rounds close
  /// together (the clock's epoch if that never happened).
  [[nodiscard]] Clock::time_point spins_held_until() const noexcept { return rule_.held_until(); }

  /// Blocks until `threads` calls of this round (this one included) have arrived; thread-safe.
  void arrive_and_wait(Index threads) noexcept {
    if (threads <= 1) return;
    // This thread left the previous round after seeing its generation (or made it), and the
    // generation cannot advance before this thread arrives: this reads the current round.
    const std::uint32_t round = generation_.load(std::memory_order_relaxed);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == threads - 1) {
      // The last arrival: every other arrival's writes happen before this point. The others read
      // the reset count only after they see the new generation.
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_seq_cst);
      // seq_cst against a sleeper's count-then-check: either it sees the new generation, or this
      // sees it counted. Without sleepers (the quiet case) no system call.
      if (sleepers_.load(std::memory_order_seq_cst) > 0) detail::wake_all(generation_);
      return;
    }
    if (rule_.spin().count() == 0) {  // nothing to hold: sleep, and read no clock
      sleep(round);
      return;
    }
    const Clock::time_point arrived = Clock::now();
    if (rule_.spin_until([&] { return generation_.load(std::memory_order_acquire) != round; }, arrived)) return;
    sleep(round);
    rule_.note_wait(arrived, round);
  }

 private:
  // Sleeps until the generation leaves `round`, counted as a sleeper for the last arrival.
  void sleep(std::uint32_t round) noexcept {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (generation_.load(std::memory_order_seq_cst) == round) detail::sleep_while(generation_, round);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Arrivals write the count; waiters read the generation: two cache lines, so arriving does not
  // disturb the spinners.
  alignas(cache_line_bytes) std::atomic<Index> arrived_{0};
  std::atomic<Index> sleepers_{0};  // threads in (or about to enter) the sleep of the current round
  alignas(cache_line_bytes) std::atomic<std::uint32_t> generation_{0};
  detail::SpinThenSleep rule_;  // beside the generation that waiters read anyway
};

}  // namespace dptrain
