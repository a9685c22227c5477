// SPDX-License-Identifier: MIT
// CosineSchedule: cosine annealing of the learning rate to a floor, over the whole run by default.
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>

#include "dptrain/core/run_length.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief Cosine annealing: the factor falls from 1 to min_factor along half a cosine over
 * total_steps steps (by default the whole run: fit() fills in its own length), then stays at
 * min_factor.
 *
 * For the 1-based optimizer step t, with T = total_steps and m = min_factor:
 * @f[ \mathrm{factor}(t) = m + (1-m)\cdot\tfrac12\left(1 + \cos\frac{\pi\,\min(t-1,\,T)}{T}\right) @f]
 * so factor(1) = 1 and factor(t) = m for t ≥ T + 1. Loshchilov & Hutter, "SGDR: Stochastic
 * Gradient Descent with Warm Restarts", ICLR 2017 (arXiv:1608.03983), without restarts; as
 * PyTorch's `torch.optim.lr_scheduler.CosineAnnealingLR` with T_max = T and
 * eta_min = m·lr (https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.CosineAnnealingLR.html),
 * except that PyTorch's factor rises again after T_max while this one stays at the floor.
 *
 * @code
 * dptrain::CosineSchedule over_the_run{.min_factor = 0.01};  // T = the fit()'s total steps
 * dptrain::CosineSchedule fixed{.total_steps = 10000};
 * @endcode
 */
struct CosineSchedule {
  Index total_steps = 0;    ///< length T of the decay in optimizer steps (0: the run's total steps)
  double min_factor = 0.0;  ///< floor m of the factor, in [0, 1]

  /// @return m + (1 − m)·½(1 + cos(π·min(step − 1, T)/T)) for the 1-based step.
  [[nodiscard]] double factor(Index step) const noexcept {
    if (total_steps == 0) return 1.0;  // not yet given a length (fit() gives it one)
    const Index elapsed = std::min(step - 1, total_steps);
    const double phase = std::numbers::pi * static_cast<double>(elapsed) / static_cast<double>(total_steps);
    return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + std::cos(phase));
  }

  /// The schedule a fit() of `run`'s length uses: T defaults to the run's total steps.
  [[nodiscard]] CosineSchedule for_run(const RunLength& run) const noexcept {
    CosineSchedule fitted = *this;
    if (fitted.total_steps == 0) fitted.total_steps = run.total_steps;
    return fitted;
  }

  /// @throws dptrain::invalid_argument if total_steps < 0 or min_factor is not in [0, 1].
  void validate() const {
    if (total_steps < 0) {
      detail::throw_bad_hyperparameter("dptrain::CosineSchedule", "total_steps", "be >= 0 (0: the run's length)",
                                       total_steps);
    }
    if (!(min_factor >= 0.0 && min_factor <= 1.0)) {
      detail::throw_bad_hyperparameter("dptrain::CosineSchedule", "min_factor", "be in [0, 1]", min_factor);
    }
  }
};

}  // namespace dptrain
