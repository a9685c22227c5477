// SPDX-License-Identifier: MIT
// StepClaims and StepEvents: how the threads of a loop without barriers (BackupWorkers,
// BoundedStaleness) share out a step's work and wait for each other's progress.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "dptrain/core/spin_then_sleep.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

namespace detail {

// Hands out the indices 0 … n − 1 of a step once each; a thread still on an older step gets none.
// One word: the step in the high bits, the indices taken in the low 20.
class StepClaims {
 public:
  explicit StepClaims(Index n) : n_(n) {}

  // The next index of step `step`, or −1 when all are taken or the step has passed.
  Index next(Index step) noexcept {
    std::int64_t word = word_.load();
    for (;;) {
      const std::int64_t tag = word >> bits, taken = word & mask;
      if (tag > step || (tag == step && taken >= n_)) return -1;
      const std::int64_t want = tag < step ? (step << bits) | 1 : word + 1;
      if (word_.compare_exchange_weak(word, want)) return tag < step ? 0 : taken;
    }
  }

 private:
  static constexpr int bits = 20;
  static constexpr std::int64_t mask = (std::int64_t{1} << bits) - 1;
  Index n_;
  alignas(cache_line_bytes) std::atomic<std::int64_t> word_{-(std::int64_t{1} << bits)};  // step −1, none taken
};

// What an idle thread waits for: any change of the step's state. It spins, then sleeps on a
// futex until the next signal or `timeout`, by TeamBarrier's rule (SpinThenSleep; a round is the
// state a waiter saw), and a stalled chunk (hold()) holds the spins at once.
class StepEvents {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StepEvents(std::chrono::nanoseconds spin) : rule_(spin) {}

  [[nodiscard]] std::uint32_t seen() const noexcept { return word_.load(); }

  void signal() noexcept {
    word_.fetch_add(1);
    if (sleepers_.load() > 0) wake_all(word_);
  }

  // Until the word leaves `seen` or `timeout` has passed (then the caller looks again).
  void wait(std::uint32_t seen, std::chrono::nanoseconds timeout) noexcept {
    const Clock::time_point start = Clock::now();
    if (rule_.spin_until([&] { return word_.load() != seen; }, start)) return;
    // Counted before the last look, so that a signal after it sees a sleeper to wake.
    sleepers_.fetch_add(1);
    if (word_.load() == seen) sleep_while_for(word_, seen, timeout);
    sleepers_.fetch_sub(1);
    rule_.note_wait(start, seen);
  }

  // Waits sleep at once for the next 10 ms: a thread is being descheduled.
  void hold() noexcept { rule_.hold(Clock::now()); }

  // Until done() holds, looking again at each signal (and at least every millisecond).
  template <class Done>
  void wait_until(Done&& done) noexcept(noexcept(done())) {
    for (;;) {
      const std::uint32_t before = seen();
      if (done()) return;
      wait(before, std::chrono::milliseconds(1));
    }
  }

 private:
  alignas(cache_line_bytes) std::atomic<std::uint32_t> word_{0};
  std::atomic<Index> sleepers_{0};
  SpinThenSleep rule_;
};

}  // namespace detail

}  // namespace dptrain
