// SPDX-License-Identifier: MIT
// EveryStepSynchronizer: synchronous SGD, the workers' gradients reduced and θ updated every step.
#pragma once

#include "dptrain/concepts.hpp"

namespace dptrain {

/**
 * @brief Synchronous data-parallel SGD: every step reduces all local gradients and updates θ
 * once, so the step equals one worker's step on the whole minibatch (the default Synchronizer).
 *
 * Three barriers a step, the minimum for this design: one before the reduction (it reads every
 * worker's buffer), one inside the scalar reduction (clipping and the non-finite check need the
 * global ‖g‖ before any thread updates), one after the update (the next step reads θ). The
 * aggregator may add its own.
 *
 * @code
 * static_assert(dptrain::Synchronizer<dptrain::EveryStepSynchronizer>);
 * @endcode
 */
struct EveryStepSynchronizer {
  /// Called by every worker after its local gradient; see the Synchronizer concept.
  template <class Step>
  void synchronize(Step& step, const TeamMember& me) const {
    step.wait_for_workers(me);
    auto shard = step.reduce_gradients(me);
    if (step.reduce_scalars(me, shard)) step.update(me, shard);
    step.publish(me);
  }
};

}  // namespace dptrain
