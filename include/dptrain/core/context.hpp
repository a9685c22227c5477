// SPDX-License-Identifier: MIT
// TrainContext: what a callback's hooks receive.
#pragma once

#include "dptrain/core/report.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The state of training as a callback sees it.
 *
 * Every hook runs on the thread that called fit() while the other workers wait, so a hook may
 * read and write θ (e.g. to restore the best parameters) and read the report without locks.
 * A hook that returns `true` asks training to stop after the current step; the request travels in
 * the next step's reduction of scalars, so every worker leaves at the same step. Work a hook
 * wants done in parallel goes to `team`, the trainer's own threads (e.g. Evaluate's validation
 * pass); its time counts as WorkerReport::hooks.
 */
template <class Scalar>
struct TrainContext {
  VectorMap<Scalar> theta;  ///< the parameters being trained
  const FitReport& report;  ///< progress so far (steps, epoch losses, timings)
  Index epoch = 0;          ///< 0-based epoch in progress (on_fit_end: epochs started)
  Index step = 0;           ///< optimizer steps taken since training began (resume() goes on counting)
  double loss = 0;          ///< on_step_end: the step's mean loss; on_epoch_end/on_fit_end: the epoch's
  double lr = 0;            ///< learning rate of the last step
  // The plan of this fit(), fixed before on_fit_begin (for progress bars and ETAs):
  Index steps_per_epoch = 0;  ///< optimizer steps in a full epoch
  Index total_steps = 0;      ///< the step training ends at unless a hook stops it (epochs and max_steps)
  Index total_epochs = 0;     ///< epochs started by then (the last may be partial)
  ThreadTeam team{1};         ///< the trainer's threads, for data-parallel work inside the hook
  /// Where a resumed run would start (see DataParallelTrainer::resume): after a complete epoch
  /// already the next one. What save_checkpoint writes besides θ.
  const TrainingState<Scalar>& state;
  // The processes of the run (MPI ranks; one process: 0 of 1). Every process runs the hooks at
  // the same steps with the same θ and loss; ProgressBar, MetricsLog and Checkpoint act on rank 0.
  Index rank = 0;   ///< this process's rank in the run
  Index ranks = 1;  ///< the run's processes
};

}  // namespace dptrain
