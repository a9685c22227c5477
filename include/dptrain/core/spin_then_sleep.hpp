// SPDX-License-Identifier: MIT
// SpinThenSleep: the one rule by which a thread team's waits spin, then sleep (TeamBarrier,
// StepEvents), and the futex calls they sleep on.
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

/**
 * @brief When a team's waits spin and when they sleep: the one rule of TeamBarrier and StepEvents.
 *
 * A wait spins for at most `spin`, then sleeps. On a quiet machine a team's waits end within
 * microseconds, and a short spin catches them without a system call. When waits in two rounds
 * less than 10 ms apart each last longer than 0.5 ms, a thread being waited for is being
 * descheduled (beside a busy process, say), possibly because the spinners hold its core: then the
 * waits of the next 10 ms sleep at once, giving such a thread its core back. One round alone (a
 * hook on thread 0, however many wait for it) holds nothing, so a quiet machine keeps spinning. A
 * caller that sees a stall by other means (BackupWorkers' stalled chunk) holds the spins at once.
 *
 * What a round is belongs to the caller: a barrier's generation, the step state a StepEvents
 * waiter saw. The times and rounds are hints, read and written relaxed beside the word the
 * waiters read anyway; a lost update delays a hold by a round. Allocates nothing.
 */
class SpinThenSleep {
 public:
  using Clock = std::chrono::steady_clock;

  /// Waits spin for at most `spin` (0 or less: they sleep at once).
  explicit SpinThenSleep(std::chrono::nanoseconds spin) noexcept : spin_(std::max(spin, std::chrono::nanoseconds(0))) {}

  [[nodiscard]] std::chrono::nanoseconds spin() const noexcept { return spin_; }

  /// Until when waits sleep at once (the clock's epoch if they never had to).
  [[nodiscard]] Clock::time_point held_until() const noexcept {
    return Clock::time_point(Clock::duration(held_until_.load(std::memory_order_relaxed)));
  }

  /// Spins while a wait that began at `start` may, until done() holds (true) or the spin is over
  /// (false, at once where the spins are held); reads the clock every 64 pauses, a few per
  /// microsecond.
  template <class Done>
  [[nodiscard]] bool spin_until(Done&& done, Clock::time_point start) const noexcept(noexcept(done())) {
    if (spin_.count() == 0 || start.time_since_epoch().count() < held_until_.load(std::memory_order_relaxed))
      return done();
    const Clock::time_point end = start + spin_;
    for (unsigned i = 1;; ++i) {
      if (done()) return true;
      cpu_relax();
      if (i % 64 == 0 && Clock::now() >= end) return false;
    }
  }

  /// After a wait of `round` that began at `start` and slept: a long one in a second round within
  /// 10 ms of the last holds the spins.
  void note_wait(Clock::time_point start, std::uint32_t round) noexcept {
    const Clock::time_point now = Clock::now();
    if (now - start < long_wait || last_long_round_.exchange(round, std::memory_order_relaxed) == round) return;
    const Clock::rep ticks = now.time_since_epoch().count();
    if (ticks - last_long_wait_.exchange(ticks, std::memory_order_relaxed) < hold_for.count()) hold(now);
  }

  /// Waits sleep at once for the next 10 ms (with no spin there is nothing to hold).
  void hold(Clock::time_point now) noexcept {
    if (spin_.count() > 0) held_until_.store((now + hold_for).time_since_epoch().count(), std::memory_order_relaxed);
  }

 private:
  static constexpr Clock::duration long_wait = std::chrono::microseconds(500);
  static constexpr Clock::duration hold_for = std::chrono::milliseconds(10);  // a few time slices

  std::chrono::nanoseconds spin_;
  std::atomic<std::uint32_t> last_long_round_{~std::uint32_t{0}};
  std::atomic<Clock::rep> last_long_wait_{std::numeric_limits<Clock::rep>::min() / 2}, held_until_{0};
};

}  // namespace detail

}  // namespace dptrain
