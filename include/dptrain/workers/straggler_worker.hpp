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
#include "dptrain/detail/seed.hpp"
#include "dptrain/workers/gradient_worker.hpp"

namespace dptrain {

/**
 * @brief A Worker decorator: the workers whose rank is in `ranks` wait `delay` before each
 * micro-batch, then do their work through the inner policy, then wait `slowdown` times as long as
 * that work took; θ is exactly what `Inner` alone computes and only the timing changes.
 *
 * `delay` is absolute; `slowdown` is relative to the worker's own compute, so `.slowdown = 1`
 * makes a worker take twice as long per micro-batch on any model and machine (how
 * examples/sync_vs_async slows one worker by 20 % or 100 %). They may be combined.
 *
 * With `random`, each delay is drawn uniformly from [0, 2·delay] (mean `delay`) by a per-rank
 * std::mt19937_64 seeded from (seed, rank): the same sequence of delays for a given seed. The
 * wait sleeps (std::this_thread::sleep_for) until 200 µs before the deadline and spins for the
 * rest, which keeps sub-millisecond delays accurate without burning a core for long ones. The
 * delay is taken in every accumulate() call with a non-empty batch: once per step, or
 * accumulation_steps times with gradient accumulation.
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
  std::vector<Index> ranks;            ///< the slow workers
  std::chrono::microseconds delay{0};  ///< the delay per micro-batch (the mean when random)
  double slowdown = 0;                 ///< after each micro-batch, wait this many times its compute
  bool random = false;                 ///< uniform delays in [0, 2·delay] instead of a fixed one
  std::uint64_t seed = 0;              ///< seeds the per-rank generators of random delays

  /// One thread's state: the inner state, and the delay of this rank (zero if it is not slow).
  template <Model M>
  class State {
    using InnerState = decltype(std::declval<const Inner&>().make(std::declval<const M&>(), Index{}, Index{}));

   public:
    using Scalar = typename M::scalar_type;

    State(InnerState inner, std::chrono::nanoseconds delay, double slowdown, bool random, std::uint64_t seed)
        : inner_(std::move(inner)), delay_(delay), slowdown_(slowdown), random_(random), rng_(seed) {}

    void zero() { inner_.zero(); }

    /// Forwards to the inner state; a slow rank waits before (delay) and after (slowdown), on
    /// non-empty batches only.
    void accumulate(const M& model, ConstVectorRef<Scalar> theta, const typename M::batch_type& batch) {
      if (batch.size() == 0) return inner_.accumulate(model, theta, batch);
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

    /// The delay per micro-batch of this rank (zero for a rank that is not slow).
    [[nodiscard]] std::chrono::nanoseconds delay() const noexcept { return delay_; }
    /// The relative wait after each micro-batch of this rank (zero for a rank that is not slow).
    [[nodiscard]] double slowdown() const noexcept { return slowdown_; }

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
    std::chrono::nanoseconds delay_;
    double slowdown_;
    bool random_;
    std::mt19937_64 rng_;
  };

  /// Makes worker `rank`'s state: the inner policy's, with the delays if `rank` is in `ranks`.
  template <Model M>
  [[nodiscard]] State<M> make(const M& model, Index rank, Index max_rows) const {
    const bool slow = std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
    return State<M>(inner.make(model, rank, max_rows),
                    slow ? std::chrono::nanoseconds(delay) : std::chrono::nanoseconds(0), slow ? slowdown : 0.0, random,
                    detail::mix_seed(seed, static_cast<std::uint64_t>(rank)));
  }
};

}  // namespace dptrain
