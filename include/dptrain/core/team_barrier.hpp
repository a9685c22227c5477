// SPDX-License-Identifier: MIT
// TeamBarrier: a reusable barrier for a thread team that spins briefly, then sleeps (futex on Linux).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#include <immintrin.h>
#endif

#include "dptrain/core/types.hpp"

namespace dptrain {

namespace detail {

/// Tells the core that the thread spins: x86 `pause`, Arm `yield` (the other hyperthread runs,
/// the memory-order pipeline is not flushed at every check); elsewhere nothing.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
  _mm_pause();
#elif (defined(__aarch64__) || defined(__arm__)) && (defined(__GNUC__) || defined(__clang__))
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

}  // namespace detail

/**
 * @brief A reusable barrier for a team of threads: each waiting thread spins for at most `spin`,
 * then sleeps until the last thread arrives (C++20 `std::atomic::wait`: a futex on Linux).
 *
 * On a quiet machine a step's barriers end within microseconds, so a short spin catches them
 * without a system call. On a shared or oversubscribed machine the thread being waited for may
 * not be running at all — possibly because the waiters' spinning holds its core — so after
 * the spin a waiter gives its core back. OpenMP's own barrier decides this from environment
 * variables read at program start (OMP_WAIT_POLICY, GOMP_SPINCOUNT, KMP_BLOCKTIME); this one
 * from its constructor's argument.
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
  explicit TeamBarrier(std::chrono::nanoseconds spin = std::chrono::microseconds(50)) noexcept
      : spin_(spin.count() > 0 ? spin : std::chrono::nanoseconds(0)) {}
  TeamBarrier(const TeamBarrier&) = delete;
  TeamBarrier& operator=(const TeamBarrier&) = delete;

  /// How long a waiting thread spins before it sleeps.
  [[nodiscard]] std::chrono::nanoseconds spin() const noexcept { return spin_; }

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
      if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
      return;
    }
    if (spin_.count() > 0 && spun(round)) return;
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (generation_.load(std::memory_order_seq_cst) == round) generation_.wait(round, std::memory_order_acquire);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  // Spins until the round ends (true) or the budget is spent (false); reads the clock every
  // 64 pauses, a few per microsecond.
  bool spun(std::uint32_t round) const noexcept {
    const Clock::time_point until = Clock::now() + spin_;
    for (unsigned i = 1;; ++i) {
      if (generation_.load(std::memory_order_acquire) != round) return true;
      detail::cpu_relax();
      if (i % 64 == 0 && Clock::now() >= until) return false;
    }
  }

  // Arrivals write the count; waiters read the generation: two cache lines, so arriving does not
  // disturb the spinners.
  alignas(cache_line_bytes) std::atomic<Index> arrived_{0};
  std::atomic<Index> sleepers_{0};  // threads in (or about to enter) the sleep of the current round
  alignas(cache_line_bytes) std::atomic<std::uint32_t> generation_{0};
  std::chrono::nanoseconds spin_;
};

}  // namespace dptrain
