// SPDX-License-Identifier: MIT
// FitReport: what fit() returns (steps, losses, wall time, per-worker phase timings).
#pragma once

#include <vector>

#include "dptrain/core/types.hpp"

namespace dptrain {

/// Seconds one worker spent in each phase of the training steps, summed over fit(), and the
/// samples it computed.
struct WorkerTimes {
  double compute = 0;    ///< local gradient: gathering its micro-batch and running the model
  double wait = 0;       ///< at barriers: waiting for slower workers (the straggler cost)
  double aggregate = 0;  ///< all-reducing gradients and the step's loss and gradient norm
  double update = 0;     ///< scaling, clipping and the optimizer update of its slice of θ
  Index samples = 0;     ///< samples whose gradient it computed (its micro-batches)
};

/**
 * @brief The result of DataParallelTrainer::fit().
 *
 * `epoch_loss[e]` is the mean training loss over the samples of epoch e, each measured at θ
 * before the step that used it (like the running loss a PyTorch loop prints). The last epoch
 * may be partial when max_steps or a callback ended training.
 */
struct FitReport {
  Index threads = 0;                 ///< workers in the team
  Index steps = 0;                   ///< optimizer steps taken, skipped ones included
  Index skipped_steps = 0;           ///< non-finite steps skipped (NonFinitePolicy::skip)
  Index epochs = 0;                  ///< epochs run; epoch_loss.size()
  Index samples = 0;                 ///< samples whose gradient was computed
  bool stopped_by_callback = false;  ///< a hook returned true
  std::vector<double> epoch_loss;    ///< mean training loss of each epoch
  double final_loss = 0;             ///< mean loss of the last step's minibatch
  double seconds = 0;                ///< wall time of fit()
  std::vector<WorkerTimes> workers;  ///< per-worker phase times, indexed by rank

  /// Training throughput over the whole fit().
  [[nodiscard]] double samples_per_second() const noexcept {
    return seconds > 0 ? static_cast<double>(samples) / seconds : 0.0;
  }
};

}  // namespace dptrain
