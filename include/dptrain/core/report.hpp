// SPDX-License-Identifier: MIT
// FitReport and WorkerReport: what fit() returns (steps, losses, wall time, per-worker phase times).
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief One worker's part of a FitReport: where its time went, phase by phase, and the samples
 * whose gradient it computed.
 *
 * The five phases partition the worker's wall time: for every worker
 * compute + wait + aggregate + update + hooks = FitReport::seconds (up to clock rounding). Every
 * barrier's wait is counted as wait, wherever the barrier is (a slow worker's compute shows as
 * the others' wait: the cost of a synchronous step).
 */
struct WorkerReport {
  double compute = 0;    ///< local gradient: gathering its micro-batches and running the model
  double wait = 0;       ///< at barriers: waiting for the other workers (and for the team to start or end)
  double aggregate = 0;  ///< reducing gradients and the step's scalars, less the waits inside
  double update = 0;     ///< scaling, clipping and the optimizer update of its slice of θ
  double hooks = 0;      ///< callbacks (thread 0), the work they hand to ctx.team, shuffling
  Index samples = 0;     ///< samples whose gradient it computed (its micro-batches)
  Index recomputed = 0;  ///< BackupWorkers: chunks it computed again because another worker held them too long
  /// BoundedStaleness: over its gradients that went into updates, the updates that θ had missed
  /// when each was taken (step t's gradient at θ after update v missed t − 1 − v), summed…
  Index staleness = 0;
  Index largest_staleness = 0;  ///< … and the largest

  /// compute + wait + aggregate + update + hooks: the worker's wall time in fit().
  [[nodiscard]] double seconds() const noexcept { return compute + wait + aggregate + update + hooks; }
};

/**
 * @brief The result of DataParallelTrainer::fit().
 *
 * `epoch_loss[e]` is the mean training loss over the samples of epoch e, each measured at θ
 * before the step that used it (like the running loss a PyTorch loop prints). The last epoch
 * may be partial when max_steps or a callback ended training.
 */
struct FitReport {
  Index threads = 0;                  ///< workers in the team
  Index cores = 0;                    ///< CPUs the team may run on (available_cores())
  Index steps = 0;                    ///< optimizer steps taken, skipped ones included
  Index skipped_steps = 0;            ///< non-finite steps skipped (NonFinitePolicy::skip)
  Index epochs = 0;                   ///< epochs run; epoch_loss.size()
  Index samples = 0;                  ///< samples whose gradient was computed
  bool stopped_by_callback = false;   ///< a hook returned true
  std::vector<double> epoch_loss;     ///< mean training loss of each epoch
  double final_loss = 0;              ///< mean loss of the last step's minibatch
  double seconds = 0;                 ///< wall time of fit()
  std::vector<WorkerReport> workers;  ///< per-worker phase times and samples, indexed by rank
  /// Cores' worth of CPU time that other work used on the team's CPUs during fit() (other_load():
  /// about 0 on a machine of its own, about 1 beside one busy process; other ranks on the same
  /// machine count too). Set at the end of fit(); NaN before, and where it cannot be measured.
  double other_load = std::numeric_limits<double>::quiet_NaN();
  /// What resume() found changed since the state was saved and went on with, one sentence each:
  /// other optimizer settings, another synchronizer, another worker count (docs/checkpoints.md).
  std::vector<std::string> notes;

  /**
   * @brief More threads than cores: some worker always waits for one that is not running, and
   * every step's barriers cost a time slice (docs/trainer.md, "Shared and oversubscribed
   * machines"). Not seen: other processes that keep the cores busy (other_load tells), CPU
   * quotas, and with several processes (MPI) the ranks that share this machine.
   */
  [[nodiscard]] bool oversubscribed() const noexcept { return cores > 0 && threads > cores; }

  /// Training throughput over the whole fit().
  [[nodiscard]] double samples_per_second() const noexcept {
    return seconds > 0 ? static_cast<double>(samples) / seconds : 0.0;
  }

  /// BoundedStaleness: the most updates a gradient's θ had missed when it went into an update
  /// (0 under the synchronous modes).
  [[nodiscard]] Index largest_staleness() const noexcept {
    Index largest = 0;
    for (const WorkerReport& w : workers) largest = std::max(largest, w.largest_staleness);
    return largest;
  }

  /// BoundedStaleness: the mean, over every worker's gradient of every step, of the updates its θ
  /// had missed (0 under the synchronous modes).
  [[nodiscard]] double mean_staleness() const noexcept {
    double missed = 0;
    for (const WorkerReport& w : workers) missed += static_cast<double>(w.staleness);
    const auto gradients = static_cast<double>(steps) * static_cast<double>(workers.size());
    return gradients > 0 ? missed / gradients : 0.0;
  }
};

}  // namespace dptrain
