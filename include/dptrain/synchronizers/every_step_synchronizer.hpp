// SPDX-License-Identifier: MIT
// EveryStepSynchronizer: synchronous SGD, the workers' gradients reduced and θ updated every step.
#pragma once

#include <string_view>

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
  /// Its name, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "EveryStepSynchronizer";

  /// One fit()'s loop: it keeps nothing but the step.
  template <class Step>
  struct Loop {
    Step* step;

    /// Every worker: the span's steps, each one collective; see the Synchronizer concept.
    SpanEnd run(const TeamMember& me, const StepSpan& span) const {
      SpanEnd end;
      for (Index k = 0; k < span.count; ++k) {
        step->local_gradient(me, span.first + k, span.epoch_step + k);  // 1–3: θ as it is, my micro-batches
        step->wait_for_workers(me);                                     // 4–6: aggregate, decide, update
        auto shard = step->reduce_gradients(me);
        if (step->reduce_scalars(me, shard)) step->update(me, shard);
        step->publish(me);
        end = {k + 1, step->finish(me, span, k)};
        if (end.last.leave) break;
      }
      return end;
    }
  };

  template <class Step>
  [[nodiscard]] Loop<Step> start(Step& step) const {
    return {&step};
  }
};

}  // namespace dptrain
