// SPDX-License-Identifier: MIT
// ConstantSchedule: the learning rate stays at the optimizer's lr.
#pragma once

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The identity schedule: factor(step) = 1, so every step uses the optimizer's lr.
 *
 * The default schedule, and the default `after` of WarmupSchedule.
 *
 * @code
 * static_assert(dptrain::Schedule<dptrain::ConstantSchedule>);
 * double f = dptrain::ConstantSchedule{}.factor(1000);   // 1
 * @endcode
 */
struct ConstantSchedule {
  /// @return 1 for every 1-based step.
  [[nodiscard]] constexpr double factor(Index /*step*/) const noexcept { return 1.0; }

  /// Nothing to check.
  constexpr void validate() const noexcept {}
};

}  // namespace dptrain
