// SPDX-License-Identifier: MIT
// StepSchedule: multiply the learning rate by gamma every step_size steps.
#pragma once

#include <cmath>

#include "dptrain/core/run_length.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief Step decay: the learning rate is multiplied by gamma every step_size optimizer steps.
 *
 * For the 1-based optimizer step t:
 * @f[ \mathrm{factor}(t) = \gamma^{\lfloor (t-1)/\mathrm{step\_size} \rfloor} @f]
 * so steps 1 … step_size use lr, the next step_size steps lr·γ, and so on. This is PyTorch's
 * `torch.optim.lr_scheduler.StepLR` (https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.StepLR.html)
 * counted in optimizer steps; without a step_size it decays every `step_epochs` epochs of the
 * run it is used in (fit() fills in the step count). The schedule of He et al., "Deep Residual
 * Learning for Image Recognition", CVPR 2016.
 *
 * @code
 * dptrain::StepSchedule schedule{.step_size = 1000, .gamma = 0.5};   // halve every 1000 steps
 * dptrain::StepSchedule per_epochs{.step_epochs = 30};              // × 0.1 every 30 epochs
 * @endcode
 */
struct StepSchedule {
  Index step_size = 0;    ///< steps between decays (0: step_epochs epochs of the run)
  Index step_epochs = 1;  ///< epochs between decays when step_size is 0, > 0
  double gamma = 0.1;     ///< multiplier per decay, in (0, 1]

  /// @return γ^floor((step − 1)/step_size) for the 1-based step.
  [[nodiscard]] double factor(Index step) const noexcept {
    if (step_size == 0) return 1.0;  // not yet given a length (fit() gives it one)
    return std::pow(gamma, static_cast<double>((step - 1) / step_size));
  }

  /// The schedule a fit() of `run`'s length uses: step_size defaults to step_epochs epochs.
  [[nodiscard]] StepSchedule for_run(const RunLength& run) const noexcept {
    StepSchedule fitted = *this;
    if (fitted.step_size == 0) fitted.step_size = step_epochs * run.steps_per_epoch;
    return fitted;
  }

  /// @throws dptrain::invalid_argument if step_size < 0, step_epochs ≤ 0 or gamma is not in (0, 1].
  void validate() const {
    if (step_size < 0) {
      detail::throw_bad_hyperparameter("dptrain::StepSchedule", "step_size", "be >= 0 (0: step_epochs epochs)",
                                       step_size);
    }
    if (step_epochs <= 0)
      detail::throw_bad_hyperparameter("dptrain::StepSchedule", "step_epochs", "be > 0", step_epochs);
    if (!(gamma > 0.0 && gamma <= 1.0)) {
      detail::throw_bad_hyperparameter("dptrain::StepSchedule", "gamma", "be in (0, 1]", gamma);
    }
  }
};

}  // namespace dptrain
