// SPDX-License-Identifier: MIT
// TeamBarrier: a reusable barrier for a thread team that spins briefly, then sleeps (futex on Linux).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <limits>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#else
#include <thread>
#endif

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

// Sleeps until `word` is woken while it holds `expected` (at once if it no longer does; spurious
// wake-ups possible): a futex on Linux. std::atomic::wait would do, but libstdc++ 12 first calls
// sched_yield four times, and beside a busy process each yield hands it the core for the rest of
// its time slice, where a sleeper is woken at once (benchmarks/RESULTS.md, issue 16).
inline void sleep_while(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
#if defined(__linux__)
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                std::atomic<std::uint32_t>::is_always_lock_free);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
  word.wait(expected, std::memory_order_acquire);
#endif
}

// sleep_while for at most `timeout` (at least a microsecond); elsewhere than Linux it sleeps out
// the timeout or 100 µs, whichever is shorter.
inline void sleep_while_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                            std::chrono::nanoseconds timeout) noexcept {
  const std::int64_t ns = std::max<std::int64_t>(timeout.count(), 1000);
#if defined(__linux__)
  const timespec wait{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &wait, nullptr, 0);
#else
  if (word.load(std::memory_order_acquire) == expected)
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(ns, 100'000)));
#endif
}

// Wakes every thread sleeping in sleep_while(word, …).
inline void wake_all(std::atomic<std::uint32_t>& word) noexcept {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
  word.notify_all();
#endif
}

}  // namespace detail

/**
 * @brief A reusable barrier for a team of threads: each waiting thread spins for at most `spin`,
 * then sleeps until the last thread arrives (a futex on Linux, `std::atomic::wait` elsewhere).
 *
 * On a quiet machine a step's barriers end within microseconds, so a short spin catches them
 * without a system call. On a shared or oversubscribed machine the thread being waited for may
 * not be running at all — possibly because the waiters' spinning holds its core — so after
 * the spin a waiter gives its core back. When waits in two rounds less than 10 ms apart last
 * longer than 0.5 ms (threads are being descheduled, as beside a busy process), the waiters stop
 * spinning for the next 10 ms and sleep at once; a quiet machine never gets there. OpenMP's own
 * barrier decides this from environment variables read at program start (OMP_WAIT_POLICY,
 * GOMP_SPINCOUNT, KMP_BLOCKTIME); this one from its constructor's argument and what it sees.
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

  /// Until when waiters sleep at once, without spinning, after long waits in two rounds close
  /// together (the clock's epoch if that never happened).
  [[nodiscard]] Clock::time_point spins_held_until() const noexcept {
    return Clock::time_point(Clock::duration(held_until_.load(std::memory_order_relaxed)));
  }

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
    if (spin_.count() == 0) {  // nothing to hold: sleep, and read no clock
      sleep(round);
      return;
    }
    const Clock::time_point arrived = Clock::now();
    if (!held(arrived) && spun(round, arrived + spin_)) return;
    sleep(round);
    note_wait(arrived, round);
  }

 private:
  // Sleeps until the generation leaves `round`, counted as a sleeper for the last arrival.
  void sleep(std::uint32_t round) noexcept {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (generation_.load(std::memory_order_seq_cst) == round) detail::sleep_while(generation_, round);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Spins until the round ends (true) or `until` (false); reads the clock every 64 pauses, a
  // few per microsecond.
  bool spun(std::uint32_t round, Clock::time_point until) const noexcept {
    for (unsigned i = 1;; ++i) {
      if (generation_.load(std::memory_order_acquire) != round) return true;
      detail::cpu_relax();
      if (i % 64 == 0 && Clock::now() >= until) return false;
    }
  }

  // Whether the spins are held: waiters then sleep at once. A busy neighbour deschedules the
  // team's threads in turn, for a time slice each, and a waiter that sleeps at once gives such a
  // thread its core back, where a spinning one keeps it out for the whole budget.
  [[nodiscard]] bool held(Clock::time_point now) const noexcept {
    return now.time_since_epoch().count() < held_until_.load(std::memory_order_relaxed);
  }

  // After a sleep: long waits (more than `long_wait`: a thread waited for was descheduled, not
  // just late) in two rounds within `hold` of each other hold the spins for `hold`. One round
  // alone (a hook on thread 0, say, however many wait for it) holds nothing, so a quiet machine
  // keeps spinning.
  void note_wait(Clock::time_point arrived, std::uint32_t round) noexcept {
    const Clock::time_point now = Clock::now();
    if (now - arrived < long_wait || last_long_round_.exchange(round, std::memory_order_relaxed) == round) return;
    const Clock::rep ticks = now.time_since_epoch().count();
    if (ticks - last_long_wait_.exchange(ticks, std::memory_order_relaxed) < hold.count())
      held_until_.store(ticks + hold.count(), std::memory_order_relaxed);
  }

  static constexpr Clock::duration long_wait = std::chrono::microseconds(500);
  static constexpr Clock::duration hold = std::chrono::milliseconds(10);  // a few time slices

  // Arrivals write the count; waiters read the generation: two cache lines, so arriving does not
  // disturb the spinners.
  alignas(cache_line_bytes) std::atomic<Index> arrived_{0};
  std::atomic<Index> sleepers_{0};  // threads in (or about to enter) the sleep of the current round
  alignas(cache_line_bytes) std::atomic<std::uint32_t> generation_{0};
  // The last round with a long wait, when that wait ended, and until when the spins are held
  // (steady_clock ticks): hints, read and written relaxed, beside the generation that waiters
  // read anyway.
  std::atomic<std::uint32_t> last_long_round_{~std::uint32_t{0}};
  std::atomic<Clock::rep> last_long_wait_{std::numeric_limits<Clock::rep>::min() / 2}, held_until_{0};
  std::chrono::nanoseconds spin_;
};

}  // namespace dptrain
