// SPDX-License-Identifier: MIT
// Lars: momentum SGD whose step each parameter group (layer) scales by its own trust ratio.
#pragma once

#include <cmath>
#include <span>
#include <string_view>
#include <vector>

#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief LARS, layer-wise adaptive rate scaling (You, Gitman and Ginsburg, "Large Batch Training
 * of Convolutional Networks", 2017, Algorithm 1): momentum SGD whose learning rate each parameter
 * group l (a layer's W or b: the model's parameter_groups(), see DeclaresParameterGroups) scales by
 * its trust ratio, so that no layer's step outgrows its weights when the batch, and with it the
 * learning rate, grows.
 *
 * Per group, with w and g its parameters and averaged gradient, η = trust_coefficient,
 * β = weight_decay, μ = momentum and v the velocity (state slot 0, zero before the first step):
 * @f[ \rho_l = \eta\,\frac{\lVert w\rVert}{\lVert g\rVert + \beta\lVert w\rVert}, \qquad
 *     v \leftarrow \mu v + \mathrm{lr}\cdot\rho_l\,(g + \beta w), \qquad w \leftarrow w - v @f]
 * ρ_l = 1 where ‖w‖ = 0 or the denominator is 0 (a layer of zeros, such as biases at their
 * start, takes the plain step), as in the common implementations. As in the paper, lr is inside
 * the velocity. A model that names no groups is one group, all of θ.
 *
 * The norms are sums over whole groups, across the threads' slices and the processes: the trainer
 * totals them between add_group_sums and update (SumsOverGroups), in double. Only the synchronous
 * step can do that (BackupWorkers, Reproducible, LocalSgd, BoundedStaleness and Hogwild refuse it).
 *
 * @code
 * dptrain::Lars lars{.lr = 0.8, .momentum = 0.9, .weight_decay = 5e-4, .trust_coefficient = 0.001};
 * @endcode
 */
struct Lars {
  double lr = 0.1;                   ///< learning rate, finite and > 0 (scaled by each group's trust ratio)
  double momentum = 0.9;             ///< μ in [0, 1)
  double weight_decay = 0.0;         ///< β ≥ 0, added to the gradient as βw and to the ratio's denominator
  double trust_coefficient = 0.001;  ///< η, finite and > 0

  /// One state vector: the velocity v.
  static constexpr int state_slots = 1;
  /// Two sums per group: ‖w‖² and ‖g‖².
  static constexpr int group_sums = 2;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Lars";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {
        {"lr", lr}, {"momentum", momentum}, {"weight_decay", weight_decay}, {"trust_coefficient", trust_coefficient}};
  }

  /// Adds the slice's ‖w‖² and ‖g‖² to its group's sums.
  template <class Scalar>
  void add_group_sums(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& /*info*/,
                      std::span<double> sums) const {
    sums[0] += detail::squared_norm(ConstVectorMap<Scalar>(s.theta.data(), s.theta.size()));
    sums[1] += detail::squared_norm(s.grad);
  }

  /// The trust ratio ρ of a group whose sums are `group` (‖w‖², ‖g‖²).
  [[nodiscard]] double trust_ratio(std::span<const double> group) const {
    const double w = std::sqrt(group[0]), denominator = std::sqrt(group[1]) + weight_decay * w;
    return w > 0 && denominator > 0 ? trust_coefficient * w / denominator : 1.0;
  }

  /**
   * @brief Applies one step to a slice of one group; s.state[0] holds v.
   * @param info the step's learning rate, and in info.group its group's ‖w‖² and ‖g‖²
   */
  template <class Scalar>
  void update(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info) const {
    VectorMap<Scalar> theta = s.theta;
    VectorMap<Scalar> v = s.state[0];
    const auto mu = static_cast<Scalar>(momentum);
    const auto step = static_cast<Scalar>(info.lr * trust_ratio(info.group));
    const auto beta = static_cast<Scalar>(weight_decay);
    if (weight_decay != 0.0) {
      v.array() = mu * v.array() + step * (s.grad.array() + beta * theta.array());
    } else {
      v.array() = mu * v.array() + step * s.grad.array();
    }
    theta -= v;
  }

  /// @throws dptrain::invalid_argument on lr or trust_coefficient not finite and > 0, momentum
  /// outside [0, 1), or a negative weight_decay.
  void validate() const {
    detail::check_positive("dptrain::Lars", "lr", lr);
    detail::check_unit_interval("dptrain::Lars", "momentum", momentum);
    detail::check_non_negative("dptrain::Lars", "weight_decay", weight_decay);
    detail::check_positive("dptrain::Lars", "trust_coefficient", trust_coefficient);
  }
};

}  // namespace dptrain
