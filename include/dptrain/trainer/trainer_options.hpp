// SPDX-License-Identifier: MIT
// TrainerOptions: the hyperparameters of the training loop itself.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/omp.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/// How the local gradients are combined into the minibatch gradient.
enum class Weighting {
  /// g = Σ_i G_i / |B|: each worker weighted by its sample count; exactly the full-batch
  /// gradient whatever the split (the default).
  by_samples,
  /// g = (1/N') Σ_i G_i / |D_i| over the N' workers with samples: the textbook mean of the
  /// workers' mean gradients; differs from by_samples when micro-batch sizes differ.
  equal,
};

/// What fit() does when a step's loss or gradient is not finite.
enum class NonFinitePolicy {
  stop,  ///< throw dptrain::non_finite_error naming the step; θ keeps its last finite value
  skip,  ///< leave θ unchanged for that step, count it in FitReport::skipped_steps, go on
};

/// How a worker waits at the step's barriers for the others (see docs/trainer.md, "Shared and
/// oversubscribed machines").
enum class WaitPolicy {
  /// An `omp barrier`: the OpenMP runtime decides, from OMP_WAIT_POLICY, GOMP_SPINCOUNT (libgomp)
  /// or KMP_BLOCKTIME (libomp) read at program start; by default it spins for up to
  /// milliseconds, which on a busy machine holds the core the awaited thread needs.
  openmp,
  /// dptrain's TeamBarrier (the default): spin for at most `spin_microseconds` (none when the
  /// team has more threads than available cores), then sleep until the last worker arrives.
  /// Chosen by measurement: as fast on a quiet machine, far faster on a shared or oversubscribed
  /// one (benchmarks/RESULTS.md).
  spin_then_sleep,
};

/**
 * @brief Options of DataParallelTrainer, set with designated initialisers.
 *
 * @code
 * dptrain::TrainerOptions options{.threads = 4, .batch_size = 256, .epochs = 10, .seed = 7};
 * @endcode
 */
struct TrainerOptions {
  Index threads = default_threads();  ///< workers (OpenMP threads); default: OpenMP's default, all available cores
  Index batch_size = 32;              ///< global minibatch size |B|, split among the workers
  Index epochs = 1;                   ///< passes over the data
  Index max_steps = 0;                ///< stop after this many optimizer steps (0: no limit)
  bool shuffle = true;                ///< visit samples in a fresh seeded permutation each epoch
  std::uint64_t seed = 0;             ///< seed of the shuffle; same seed and threads → same θ, bit for bit
  bool drop_last = false;             ///< skip the last minibatch of an epoch when it is partial
  Index accumulation_steps = 1;       ///< minibatches whose gradients are summed before one update
  Weighting weighting = Weighting::by_samples;
  double clip_norm = 0;  ///< rescale g to this global L2 norm when larger (0: off)
  NonFinitePolicy on_non_finite = NonFinitePolicy::stop;
  WaitPolicy wait_policy = WaitPolicy::spin_then_sleep;  ///< how workers wait at barriers; the same θ either way
  double spin_microseconds = 50;                         ///< spin_then_sleep: spin this long before sleeping
  /// resume() refuses a state saved by another ranks × threads (whose θ would be rounded
  /// differently), unless the synchronizer's shards are fixed (Reproducible, BackupWorkers{.chunks}). Off: such
  /// a resume goes on, and FitReport::notes says so.
  bool same_workers_on_resume = false;

  /// @throws dptrain::invalid_argument naming the first option out of its range (fit() calls it).
  void validate() const {
    const auto name = [](Index v) { return std::to_string(v); };
    if (threads < 1)
      throw invalid_argument("dptrain::DataParallelTrainer: threads must be at least 1, got " + name(threads));
    if (batch_size < 1)
      throw invalid_argument("dptrain::DataParallelTrainer: batch_size must be at least 1, got " + name(batch_size));
    if (epochs < 1)
      throw invalid_argument("dptrain::DataParallelTrainer: epochs must be at least 1, got " + name(epochs));
    if (max_steps < 0)
      throw invalid_argument("dptrain::DataParallelTrainer: max_steps must be >= 0, got " + name(max_steps));
    if (accumulation_steps < 1)
      throw invalid_argument("dptrain::DataParallelTrainer: accumulation_steps must be at least 1, got " +
                             name(accumulation_steps));
    if (!std::isfinite(clip_norm) || clip_norm < 0)
      throw invalid_argument("dptrain::DataParallelTrainer: clip_norm must be finite and >= 0 (0: off), got " +
                             std::to_string(clip_norm));
    if (!std::isfinite(spin_microseconds) || spin_microseconds < 0 || spin_microseconds > 1e6)
      throw invalid_argument(
          "dptrain::DataParallelTrainer: spin_microseconds must be between 0 and 1e6 (one second), got " +
          std::to_string(spin_microseconds));
    if (wait_policy != WaitPolicy::openmp && wait_policy != WaitPolicy::spin_then_sleep)
      throw invalid_argument(
          "dptrain::DataParallelTrainer: wait_policy must be WaitPolicy::openmp or WaitPolicy::spin_then_sleep, got " +
          std::to_string(static_cast<int>(wait_policy)));
  }
};

}  // namespace dptrain
