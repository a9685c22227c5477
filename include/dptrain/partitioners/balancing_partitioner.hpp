// SPDX-License-Identifier: MIT
// BalancingPartitioner: micro-batches that follow each worker's measured speed.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/partitioners/even_partitioner.hpp"

namespace dptrain {

/**
 * @brief Splits each minibatch in proportion to each worker's measured speed, so that all
 * workers reach the step's barrier together even when their cores run at different speeds.
 *
 * A synchronous step waits for its slowest worker. On a shared machine the cores are not equal:
 * a virtual CPU whose physical core also runs a neighbour, a core that takes the interrupts, a
 * throttled core. After each step the trainer hands this partitioner every worker's sample count
 * and gradient time (observe()). It keeps a running estimate of each worker's samples per second
 * (an exponential moving average; the newest step weighs `smoothing`) and gives the next steps
 * contiguous micro-batches in proportion to those speeds. Where a worker's time also has a part
 * that does not grow with its samples, the split settles where the gradient times are equal,
 * which is what the barrier needs.
 *
 * Each worker's share stays within [min_factor, max_factor] × the even share 1/N: every worker
 * keeps samples, so its speed stays measured, and the trainer sizes each worker's buffers for
 * max_size() rows, not for the whole minibatch. Boundaries fall on multiples of `granule`
 * samples (fewer when a worker's even share is under 8 granules): micro-batch sizes stay
 * friendly to the models' vector kernels, and speed differences within the noise of a step's
 * timing leave the split where it is (on equal cores, the even split).
 *
 * The step's gradient is the same sum whatever the split (the trainer requires
 * Weighting::by_samples with it), so training follows the same path up to floating-point
 * rounding. But the split depends on timings: runs are not bitwise reproducible, and resume()
 * does not repeat an interrupted run bit for bit. Use EvenPartitioner where that matters. Each
 * fit() trains with its own copy of the policy it was given, which has learned nothing unless you
 * called observe() on it yourself: every run starts from the even split.
 *
 * @code
 * dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 256}, dptrain::Sgd{.lr = 0.1},
 *                                      dptrain::BalancingPartitioner{});
 * dptrain::FitReport report = trainer.fit(model, theta, data);
 * // report.workers[t].samples: how many samples worker t computed; more on the faster core.
 * @endcode
 */
struct BalancingPartitioner {
  double smoothing = 0.2;    ///< weight of the newest step in each speed estimate, in (0, 1]
  double min_factor = 0.25;  ///< smallest share as a multiple of the even share, in (0, 1]
  double max_factor = 2.0;   ///< largest share as a multiple of the even share, ≥ 1
  Index granule = 8;         ///< boundaries are multiples of this many samples, ≥ 1

  /// What observe() has learned, read by range(); empty until the first observe().
  struct Learned {
    std::vector<double> speeds;  ///< samples per second per worker (0: not measured yet)
    std::vector<double> bounds;  ///< worker t gets the fraction [bounds[t], bounds[t + 1]) of a minibatch
  } learned{};

  /// @throws dptrain::invalid_argument if a parameter is outside its range.
  void validate(Index /*workers*/) const {
    const auto check = [](bool ok, const char* what, double value) {
      if (!ok)
        throw invalid_argument(std::string("dptrain::BalancingPartitioner: ") + what + ", got " +
                               std::to_string(value));
    };
    check(smoothing > 0 && smoothing <= 1, "smoothing must be in (0, 1]", smoothing);
    check(min_factor > 0 && min_factor <= 1, "min_factor must be in (0, 1]", min_factor);
    check(max_factor >= 1 && std::isfinite(max_factor), "max_factor must be finite and >= 1", max_factor);
    check(granule >= 1, "granule must be at least 1", static_cast<double>(granule));
  }

  /// Worker `rank`'s contiguous share of a minibatch of `batch` samples: the even split until
  /// observe() has seen `workers` workers, then in proportion to their speeds. Thread-safe
  /// (between observe() calls).
  [[nodiscard]] IndexRange range(Index batch, Index workers, Index rank) const noexcept {
    if (static_cast<Index>(learned.bounds.size()) != workers + 1) return EvenPartitioner{}.range(batch, workers, rank);
    const Index g = granule_of(batch, workers);
    const auto at = [&](Index t) {
      if (t == workers) return batch;
      const auto granules = std::llround(static_cast<double>(batch) * learned.bounds[t] / static_cast<double>(g));
      return std::min(batch, static_cast<Index>(granules) * g);
    };
    const Index begin = at(rank);
    return {begin, at(rank + 1) - begin};
  }

  /// The most samples range() gives one worker of a minibatch of `batch`: rounding its two
  /// boundaries to granules adds at most one granule to a share of batch·max_factor/workers.
  [[nodiscard]] Index max_size(Index batch, Index workers) const noexcept {
    const auto share =
        static_cast<Index>(std::floor(static_cast<double>(batch) * max_factor / static_cast<double>(workers)));
    return std::min(batch, std::max(share + granule_of(batch, workers), (batch + workers - 1) / workers));
  }

  /// One step's measurements, one per worker by rank: updates the speeds and the split of the
  /// next steps. Called by the trainer on one thread while no worker calls range().
  void observe(std::span<const WorkerLoad> loads) {
    std::vector<double>& speeds = learned.speeds;
    std::vector<double>& bounds = learned.bounds;
    const std::size_t workers = loads.size();
    if (speeds.size() != workers) {  // the first step of a fit(), or another team size
      speeds.assign(workers, 0.0);
      bounds.clear();
    }
    double known = 0;
    std::size_t measured = 0;
    for (std::size_t t = 0; t < workers; ++t) {
      if (loads[t].samples > 0 && loads[t].seconds > 0) {
        const double now = static_cast<double>(loads[t].samples) / loads[t].seconds;
        speeds[t] = speeds[t] > 0 ? speeds[t] + smoothing * (now - speeds[t]) : now;
      }
      if (speeds[t] > 0) {
        known += speeds[t];
        ++measured;
      }
    }
    if (measured == 0) return;
    // A worker not measured yet (no samples so far) counts as the mean of the others.
    const double mean = known / static_cast<double>(measured);
    const auto speed = [&](std::size_t t) { return speeds[t] > 0 ? speeds[t] : mean; };
    // Shares proportional to speed within [lo, hi]: share_t = clamp(λ·speed_t, lo, hi), with λ
    // found by bisection so that the shares add up to 1 (their sum grows with λ, from
    // N·lo ≤ 1 at λ = 0 to N·hi ≥ 1 once every share is clamped to hi).
    const double n = static_cast<double>(workers), lo = min_factor / n, hi = max_factor / n;
    const auto share = [&](std::size_t t, double lambda) { return std::clamp(lambda * speed(t), lo, hi); };
    const auto total = [&](double lambda) {
      double sum = 0;
      for (std::size_t t = 0; t < workers; ++t) sum += share(t, lambda);
      return sum;
    };
    double slowest = speed(0);
    for (std::size_t t = 1; t < workers; ++t) slowest = std::min(slowest, speed(t));
    double below = 0, above = hi / slowest;
    for (int i = 0; i < 64; ++i) {  // 2⁻⁶⁴ of the initial interval: below double's precision
      const double middle = 0.5 * (below + above);
      (total(middle) < 1 ? below : above) = middle;
    }
    const double scale = 1 / total(above);  // removes the bisection's last rounding
    bounds.resize(workers + 1);
    bounds[0] = 0;
    for (std::size_t t = 0; t < workers; ++t) bounds[t + 1] = bounds[t] + share(t, above) * scale;
    bounds[workers] = 1;
  }

  /// The granule of a minibatch of `batch` samples: `granule`, or less so that the even share
  /// spans at least 8 of them.
  [[nodiscard]] Index granule_of(Index batch, Index workers) const noexcept {
    return std::clamp<Index>(batch / (8 * workers), 1, granule);
  }

  /// Each worker's current fraction of a minibatch, by rank (adds up to 1); empty until the
  /// first observe().
  [[nodiscard]] std::vector<double> shares() const {
    std::vector<double> out;
    for (std::size_t t = 0; t + 1 < learned.bounds.size(); ++t)
      out.push_back(learned.bounds[t + 1] - learned.bounds[t]);
    return out;
  }
};

}  // namespace dptrain
