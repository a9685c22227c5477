// SPDX-License-Identifier: MIT
// TeamBarrier: every write before a barrier is seen by every thread after it, with more threads
// than cores too, whether the waiters spin or sleep; TeamMember times its waits either way.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "dptrain/dptrain.hpp"

using dptrain::Index;

namespace {

// How a team's members wait: an `omp barrier` (no TeamBarrier), or a TeamBarrier with this spin.
struct BarrierKind {
  const char* name;
  std::optional<std::chrono::nanoseconds> spin;  // none: `omp barrier`
};

const BarrierKind barrier_omp{"omp barrier", std::nullopt};
const BarrierKind barrier_sleeps{"TeamBarrier, sleeps at once", std::chrono::nanoseconds(0)};
const BarrierKind barrier_spins{"TeamBarrier, spins 20 us", std::chrono::microseconds(20)};

}  // namespace

TEST_CASE("TeamBarrier: every thread sees every write made before the barrier, round after round",
          "[core][team_barrier]") {
  // 8 threads: more than the cores of a small machine, so waiters must give theirs back.
  const Index threads = GENERATE(2, 3, 8);
  const BarrierKind kind = GENERATE(barrier_omp, barrier_sleeps, barrier_spins);
  CAPTURE(threads, kind.name);
  constexpr Index rounds = 1000;
  dptrain::TeamBarrier barrier(kind.spin.value_or(std::chrono::nanoseconds(0)));
  // Plain (non-atomic) values: only the barrier orders them, which ThreadSanitizer checks.
  std::vector<Index> written(static_cast<std::size_t>(threads), -1);
  std::vector<Index> wrong(static_cast<std::size_t>(threads), 0);
  std::vector<Index> sums(static_cast<std::size_t>(threads), 0);
  std::atomic<int> wrong_size{0};
  dptrain::ThreadTeam(threads).run([&](const dptrain::TeamMember& team) {
    if (team.size != threads) {
      ++wrong_size;
      return;
    }
    const dptrain::TeamMember me{team.rank, team.size, nullptr, kind.spin ? &barrier : nullptr};
    const auto mine = static_cast<std::size_t>(me.rank);
    for (Index round = 0; round < rounds; ++round) {
      written[mine] = round * threads + me.rank;
      me.barrier();  // every thread's write of this round is visible
      for (Index u = 0; u < threads; ++u) {
        const Index seen = written[static_cast<std::size_t>(u)];
        if (seen != round * threads + u) ++wrong[mine];
        sums[mine] += seen;
      }
      me.barrier();  // every thread has read this round before any writes the next
    }
  });
  REQUIRE(wrong_size == 0);
  // Σ over rounds r and threads u of (r·T + u), computed independently of the team.
  const Index expected = threads * threads * (rounds * (rounds - 1) / 2) + rounds * (threads * (threads - 1) / 2);
  for (std::size_t t = 0; t < static_cast<std::size_t>(threads); ++t) {
    CHECK(wrong[t] == 0);
    CHECK(sums[t] == expected);
  }
}

TEST_CASE("TeamBarrier: one barrier serves successive teams of different sizes", "[core][team_barrier]") {
  dptrain::TeamBarrier barrier(std::chrono::microseconds(5));
  for (const Index threads : {4, 2, 3, 1, 5}) {
    std::vector<int> before(static_cast<std::size_t>(threads), 0);
    std::atomic<int> missed{0};
    dptrain::ThreadTeam(threads).run([&](const dptrain::TeamMember& team) {
      const dptrain::TeamMember me{team.rank, team.size, nullptr, &barrier};
      for (int round = 1; round <= 50; ++round) {
        before[static_cast<std::size_t>(me.rank)] = round;
        me.barrier();
        for (const int b : before)
          if (b != round) ++missed;
        me.barrier();
      }
    });
    CHECK(missed == 0);
  }
}

TEST_CASE("TeamBarrier: a team of one never waits, and a negative spin means none", "[core][team_barrier]") {
  dptrain::TeamBarrier barrier(std::chrono::microseconds(-3));
  CHECK(barrier.spin() == std::chrono::nanoseconds(0));
  CHECK(dptrain::TeamBarrier().spin() == std::chrono::microseconds(50));
  for (int i = 0; i < 3; ++i) barrier.arrive_and_wait(1);  // returns: nothing to wait for
  double waited = 0;
  const dptrain::TeamMember alone{0, 1, &waited, &barrier};
  alone.barrier();
  CHECK(waited == 0);  // a team of one does not even read the clock
}

TEST_CASE("TeamBarrier: TeamMember::waited counts the time a member waited for a late one", "[core][team_barrier]") {
  using namespace std::chrono_literals;
  const Index threads = GENERATE(2, 4);
  const BarrierKind kind = GENERATE(barrier_omp, barrier_sleeps, barrier_spins);
  CAPTURE(threads, kind.name);
  constexpr auto late = 20ms;
  dptrain::TeamBarrier barrier(kind.spin.value_or(0ns));
  std::vector<double> waited(static_cast<std::size_t>(threads), 0.0);
  std::atomic<Index> about_to_wait{0};
  dptrain::ThreadTeam(threads).run([&](const dptrain::TeamMember& team) {
    dptrain::TeamBarrier* shared = kind.spin ? &barrier : nullptr;
    const dptrain::TeamMember me{team.rank, team.size, &waited[static_cast<std::size_t>(team.rank)], shared};
    if (me.rank == 0) {
      // Arrives only after every other member is at the barrier, and then `late` later.
      while (about_to_wait.load() < threads - 1) std::this_thread::yield();
      std::this_thread::sleep_for(late);
    } else {
      ++about_to_wait;
    }
    me.barrier();
  });
  // Each other member waited from its arrival to thread 0's: at least `late` (sleeps only
  // overshoot), unless it was itself descheduled between announcing and arriving; the most
  // patient of them certainly waited.
  double longest = 0;
  for (std::size_t t = 1; t < waited.size(); ++t) longest = std::max(longest, waited[t]);
  CHECK(longest >= std::chrono::duration<double>(late).count());
  CHECK(waited[0] >= 0);
}

TEST_CASE("TeamBarrier: long waits in two rounds close together stop the spinning for a while",
          "[core][team_barrier]") {
  using namespace std::chrono_literals;
  using Clock = dptrain::TeamBarrier::Clock;
  const Index threads = GENERATE(2, 4);
  CAPTURE(threads);
  // `rounds` rounds in which thread 0 arrives `late` after every other member is at the barrier.
  const auto late_rounds = [threads](dptrain::TeamBarrier& barrier, int rounds) {
    std::atomic<Index> waiting{0};
    dptrain::ThreadTeam(threads).run([&](const dptrain::TeamMember& team) {
      const dptrain::TeamMember me{team.rank, team.size, nullptr, &barrier};
      for (int round = 0; round < rounds; ++round) {
        if (me.rank == 0) {
          while (waiting.load() < threads - 1) std::this_thread::yield();
          waiting = 0;
          std::this_thread::sleep_for(2ms);
        } else {
          ++waiting;
        }
        me.barrier();                          // the others waited about 2 ms: far more than a spin
        if (round + 1 < rounds) me.barrier();  // every member has left before the next count
      }
    });
  };
  SECTION("one round alone, however many waited in it, holds nothing") {
    dptrain::TeamBarrier barrier(20us);
    late_rounds(barrier, 1);
    CHECK(barrier.spins_held_until() == Clock::time_point{});
  }
  SECTION("two rounds hold the spins") {
    // A member descheduled between announcing itself and arriving waits less; on a loaded
    // machine the rounds may also end too far apart. Either is rare: a few tries suffice.
    bool held = false;
    for (int attempt = 0; attempt < 5 && !held; ++attempt) {
      dptrain::TeamBarrier barrier(20us);
      const Clock::time_point start = Clock::now();
      late_rounds(barrier, 2);
      held = barrier.spins_held_until() > start;
    }
    CHECK(held);
  }
}

TEST_CASE("SpinThenSleep: long waits in two rounds within 10 ms hold the spins, one round alone nothing", "[core]") {
  using namespace std::chrono_literals;
  using Clock = dptrain::detail::SpinThenSleep::Clock;
  const auto a_millisecond_ago = [] { return Clock::now() - 1ms; };
  // How often a wait looks before it sleeps: once where the spins are held, many times otherwise.
  const auto looks = [](const dptrain::detail::SpinThenSleep& rule) {
    int calls = 0;
    CHECK_FALSE(rule.spin_until([&] { return ++calls < 0; }, Clock::now()));
    return calls;
  };
  dptrain::detail::SpinThenSleep rule(20us);
  rule.note_wait(a_millisecond_ago(), 1);
  rule.note_wait(a_millisecond_ago(), 1);  // the same round again (another waiter of it)
  rule.note_wait(Clock::now(), 2);         // a short wait
  CHECK(rule.held_until() == Clock::time_point{});
  CHECK(looks(rule) > 1);
  const Clock::time_point before = Clock::now();
  rule.note_wait(a_millisecond_ago(), 2);
  CHECK(rule.held_until() > before);
  CHECK(looks(rule) == 1);

  SECTION("two long rounds further apart hold nothing") {
    dptrain::detail::SpinThenSleep apart(20us);
    apart.note_wait(a_millisecond_ago(), 1);
    std::this_thread::sleep_for(15ms);
    apart.note_wait(a_millisecond_ago(), 2);
    CHECK(apart.held_until() == Clock::time_point{});
  }
  SECTION("with no spin there is nothing to hold, and a wait looks once") {
    dptrain::detail::SpinThenSleep none(0ns);
    none.note_wait(a_millisecond_ago(), 1);
    none.note_wait(a_millisecond_ago(), 2);
    none.hold(Clock::now());
    CHECK(none.held_until() == Clock::time_point{});
    CHECK(looks(none) == 1);
  }
  SECTION("hold() holds at once") {
    dptrain::detail::SpinThenSleep stalled(20us);
    stalled.hold(Clock::now());
    CHECK(looks(stalled) == 1);
  }
}
