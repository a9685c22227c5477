// SPDX-License-Identifier: MIT
// RunLength: how long a fit() runs, which schedules take their lengths from unless given one.
#pragma once

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The length of one fit() in optimizer steps, known once the data and options are: what a
 * schedule's `for_run(RunLength)` fills its unset lengths from (a CosineSchedule without
 * total_steps decays over the whole run; a StepSchedule without step_size decays every epoch; a
 * LinearScalingSchedule scales to the run's minibatch).
 */
struct RunLength {
  Index total_steps = 0;      ///< the step training ends at unless a hook stops it (epochs and max_steps)
  Index steps_per_epoch = 0;  ///< optimizer steps in a full epoch
  Index batch = 0;            ///< samples per optimizer step: batch_size × accumulation_steps (all workers)
};

}  // namespace dptrain
