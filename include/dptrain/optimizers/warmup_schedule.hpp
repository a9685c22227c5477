// SPDX-License-Identifier: MIT
// WarmupSchedule: a linear learning-rate warm-up in front of another schedule.
#pragma once

#include <algorithm>
#include <cmath>

#include "dptrain/concepts.hpp"
#include "dptrain/core/run_length.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/optimizer_support.hpp"
#include "dptrain/optimizers/constant_schedule.hpp"

namespace dptrain {

/**
 * @brief Gradual warm-up: scales another schedule by a linear ramp over the first warmup_steps steps.
 *
 * For the 1-based optimizer step t, with W = warmup_steps:
 * @f[ \mathrm{factor}(t) = \mathrm{after.factor}(t)\cdot\min\!\left(1, \frac{t}{W}\right) @f]
 * so the ramp is 1/W, 2/W, …, 1 (W = 0: no warm-up). The inner schedule sees the same step
 * count, not one shifted by W: a CosineSchedule's total_steps counts the warm-up steps too.
 * Without warmup_steps the ramp lasts `warmup_epochs` epochs of the run (fit() fills in the
 * step count), and an inner schedule without a length takes the run's (Cosine, Step).
 * The ramp equals PyTorch's `LinearLR(start_factor = 1/W, total_iters = W − 1)`.
 *
 * Gradual warm-up is from Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in
 * 1 Hour" (arXiv:1706.02677, §2.2): with the large learning rates that linear_scaling() gives
 * for large minibatches, ramping up over the first epochs avoids early divergence.
 *
 * @tparam Inner the schedule applied after (and multiplied into) the warm-up; a dptrain::Schedule.
 *
 * @code
 * dptrain::WarmupSchedule<> ramp{.warmup_steps = 500};   // then constant
 * dptrain::WarmupSchedule<dptrain::CosineSchedule> schedule{.warmup_steps = 500,
 *                                                           .after = {.total_steps = 10000}};
 * // Goyal et al.: 5 epochs of warm-up, then a cosine over the rest of the run.
 * dptrain::WarmupSchedule<dptrain::CosineSchedule> goyal{.warmup_epochs = 5};
 * @endcode
 */
template <class Inner = ConstantSchedule>
struct WarmupSchedule {
  static_assert(Schedule<Inner>,
                "dptrain: WarmupSchedule's Inner must be a Schedule: a copyable type with "
                "double factor(dptrain::Index step) const");

  Index warmup_steps = 0;    ///< length W of the linear ramp in optimizer steps, ≥ 0 (0: warmup_epochs)
  double warmup_epochs = 0;  ///< length of the ramp in epochs of the run when warmup_steps is 0 (0: no warm-up)
  Inner after = {};          ///< the schedule the ramp multiplies

  /// The schedule a fit() of `run`'s length uses: W from warmup_epochs, the inner one's lengths.
  [[nodiscard]] WarmupSchedule for_run(const RunLength& run) const {
    WarmupSchedule fitted = *this;
    if (fitted.warmup_steps == 0)
      fitted.warmup_steps = static_cast<Index>(std::ceil(warmup_epochs * static_cast<double>(run.steps_per_epoch)));
    if constexpr (FitsRun<Inner>) fitted.after = after.for_run(run);
    return fitted;
  }

  /// @return after.factor(step)·min(1, step/W) for the 1-based step.
  [[nodiscard]] double factor(Index step) const noexcept(noexcept(after.factor(step))) {
    const double inner = after.factor(step);
    if (step >= warmup_steps) return inner;
    return inner * (static_cast<double>(step) / static_cast<double>(warmup_steps));
  }

  /// @throws dptrain::invalid_argument if warmup_steps < 0, or whatever after.validate() throws.
  void validate() const {
    if (warmup_steps < 0) {
      detail::throw_bad_hyperparameter("dptrain::WarmupSchedule", "warmup_steps", "be >= 0", warmup_steps);
    }
    if (!(warmup_epochs >= 0.0 && std::isfinite(warmup_epochs))) {
      detail::throw_bad_hyperparameter("dptrain::WarmupSchedule", "warmup_epochs", "be finite and >= 0", warmup_epochs);
    }
    if constexpr (requires { after.validate(); }) after.validate();
  }
};

}  // namespace dptrain
