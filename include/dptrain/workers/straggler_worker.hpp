// SPDX-License-Identifier: MIT
// StragglerWorker: a Worker decorator that delays chosen ranks, to make the barrier's cost visible.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/detail/seed.hpp"
#include "dptrain/workers/gradient_worker.hpp"

namespace dptrain {

/**
 * @brief A Worker decorator: the workers in `ranks` wait `delay` before each micro-batch, then do
 * their work through the inner policy, then wait `slowdown` times as long as that work took; θ is
 * exactly what `Inner` alone computes and only the timing changes.
 *
 * `ranks` are workers: global worker indices (rank · threads + thread), as current_worker()
 * numbers them, under every synchronizer. Which worker runs is asked at each micro-batch, not
 * fixed when a state is made: under BackupWorkers any thread may take any state of its pool.
 *
 * `delay` is absolute; `slowdown` is relative to the worker's own compute, so `.slowdown = 1`
 * makes a worker take twice as long per micro-batch on any model and machine (how
 * examples/sync_vs_async slows one worker by 20 % or 100 %). They may be combined.
 *
 * With `random`, each delay is drawn uniformly from [0, 2·delay] (mean `delay`) by a per-state
 * std::mt19937_64 seeded from (seed, the state's number): the same sequence of delays for a given
 * seed (under BackupWorkers, the state a worker takes varies). The wait sleeps
 * (std::this_thread::sleep_for) until 200 µs before the deadline and spins for the rest, which
 * keeps sub-millisecond delays accurate without burning a core for long ones. The delay is taken
 * in every accumulate() call with a non-empty batch: once per step, or accumulation_steps times
 * with gradient accumulation.
 *
 * The other workers' `FitReport::workers[t].wait` grows by about the delay per step: the cost
 * of one slow worker in synchronous SGD.
 *
 * @tparam Inner the wrapped Worker policy (GradientWorker)
 *
 * @code
 * using namespace std::chrono_literals;
 * dptrain::StragglerWorker<> slow{.ranks = {1}, .delay = 2ms};
 * dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.1}, slow);
 * static_assert(dptrain::Worker<dptrain::StragglerWorker<>, dptrain::LinearRegression<double>>);
 * @endcode
 */
template <class Inner = GradientWorker>
struct StragglerWorker {
  Inner inner{};                       ///< the policy that does the work
  std::vector<Index> ranks;            ///< the slow workers (global worker indices)
  std::chrono::microseconds delay{0};  ///< the delay per micro-batch (the mean when random)
  double slowdown = 0;                 ///< after each micro-batch, wait this many times its compute
  bool random = false;                 ///< uniform delays in [0, 2·delay] instead of a fixed one
  std::uint64_t seed = 0;              ///< seeds the per-state generators of random delays

  /// Whether `worker` (a global worker index) is slow.
  [[nodiscard]] bool slows(Index worker) const { return listed(ranks, worker); }

  /// A state: the inner state, the slow workers and their delays.
  template <Model M>
  class State {
    using InnerState = decltype(std::declval<const Inner&>().make(std::declval<const M&>(), Index{}, Index{}));

   public:
    using Scalar = typename M::scalar_type;

    State(InnerState inner, const StragglerWorker& policy, std::uint64_t seed)
        : inner_(std::move(inner)),
          slow_(policy.ranks),
          delay_(policy.delay),
          slowdown_(policy.slowdown),
          random_(policy.random),
          rng_(seed) {}

    void zero() { inner_.zero(); }

    /// Forwards to the inner state; a slow worker waits before (delay) and after (slowdown), on
    /// non-empty batches only.
    void accumulate(const M& model, ConstVectorRef<Scalar> theta, const typename M::batch_type& batch) {
      if (batch.size() == 0 || !listed(slow_, current_worker())) return inner_.accumulate(model, theta, batch);
      if (delay_.count() > 0) wait(random_ ? draw() : delay_);
      if (slowdown_ <= 0) return inner_.accumulate(model, theta, batch);
      const auto start = std::chrono::steady_clock::now();
      inner_.accumulate(model, theta, batch);
      const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
      wait(std::chrono::nanoseconds(static_cast<std::int64_t>(slowdown_ * took.count())));
    }

    [[nodiscard]] VectorMap<Scalar> gradient() { return inner_.gradient(); }
    [[nodiscard]] double loss() const { return inner_.loss(); }
    [[nodiscard]] Index samples() const { return inner_.samples(); }

   private:
    // Uniform in [0, 2·delay], from the top 53 bits of the engine (the same on every library).
    std::chrono::nanoseconds draw() {
      const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
      return std::chrono::nanoseconds(static_cast<std::int64_t>(2.0 * u * static_cast<double>(delay_.count())));
    }

    static void wait(std::chrono::nanoseconds how_long) {
      using clock = std::chrono::steady_clock;
      const clock::time_point deadline = clock::now() + how_long;
      constexpr std::chrono::microseconds spin{200};  // sleep_for overshoots by tens of µs
      if (how_long > spin) std::this_thread::sleep_for(how_long - spin);
      while (clock::now() < deadline) {
      }
    }

    InnerState inner_;
    std::vector<Index> slow_;
    std::chrono::nanoseconds delay_;
    double slowdown_;
    bool random_;
    std::mt19937_64 rng_;
  };

  /// Makes state number `id`: the inner policy's, and what slows the workers in `ranks`.
  template <Model M>
  [[nodiscard]] State<M> make(const M& model, Index id, Index max_rows) const {
    return State<M>(inner.make(model, id, max_rows), *this, detail::mix_seed(seed, static_cast<std::uint64_t>(id)));
  }

 private:
  static bool listed(const std::vector<Index>& workers, Index worker) {
    return std::find(workers.begin(), workers.end(), worker) != workers.end();
  }
};

}  // namespace dptrain
