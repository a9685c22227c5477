// SPDX-License-Identifier: MIT
// StepSchedule: multiply the learning rate by gamma every step_size steps.
#pragma once

#include <cmath>

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
 * counted in optimizer steps rather than epochs (for epochs, use step_size = epochs × steps per
 * epoch); the schedule of He et al., "Deep Residual Learning for Image Recognition", CVPR 2016.
 *
 * @code
 * dptrain::StepSchedule schedule{.step_size = 1000, .gamma = 0.5};   // halve every 1000 steps
 * @endcode
 */
struct StepSchedule {
  Index step_size = 0;  ///< steps between decays, > 0 (no default: it depends on the run)
  double gamma = 0.1;   ///< multiplier per decay, in (0, 1]

  /// @return γ^floor((step − 1)/step_size) for the 1-based step.
  [[nodiscard]] double factor(Index step) const noexcept {
    return std::pow(gamma, static_cast<double>((step - 1) / step_size));
  }

  /// @throws dptrain::invalid_argument if step_size ≤ 0 or gamma is not in (0, 1].
  void validate() const {
    if (step_size <= 0) detail::throw_bad_hyperparameter("dptrain::StepSchedule", "step_size", "be > 0", step_size);
    if (!(gamma > 0.0 && gamma <= 1.0)) {
      detail::throw_bad_hyperparameter("dptrain::StepSchedule", "gamma", "be in (0, 1]", gamma);
    }
  }
};

}  // namespace dptrain
