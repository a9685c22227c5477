// SPDX-License-Identifier: MIT
// Lamb: Adam's direction, each parameter group's (layer's) step scaled by its own trust ratio.
#pragma once

#include <algorithm>
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
 * @brief LAMB, layer-wise adaptive moments (You et al., "Large Batch Optimization for Deep
 * Learning: Training BERT in 76 minutes", ICLR 2020, Algorithm 2): Adam's bias-corrected direction
 * plus decoupled weight decay, each parameter group's step (a layer's W or b: the model's
 * parameter_groups(), see DeclaresParameterGroups) scaled by the ratio of its weights' norm to its
 * direction's.
 *
 * Per group, with w and g its parameters and averaged gradient, t = StepInfo::step (1-based),
 * λ = weight_decay, m and v the moments (state slots 0 and 1, zero before the first step):
 * @f[ m \leftarrow \beta_1 m + (1-\beta_1)\,g, \qquad v \leftarrow \beta_2 v + (1-\beta_2)\,g^2, \qquad
 *     r = \frac{m/(1-\beta_1^t)}{\sqrt{v/(1-\beta_2^t)} + \epsilon} + \lambda w, @f]
 * @f[ w \leftarrow w - \mathrm{lr}\cdot\frac{\lVert w\rVert}{\lVert r\rVert}\,r @f]
 * with the ratio 1 where ‖w‖ or ‖r‖ is 0 (a layer of zeros, such as biases at their start). As in
 * Adam, √v̂ is evaluated as √v/√(1−β₂ᵗ) with a correctly rounded square root (detail::ExactSqrt),
 * so any split of θ gives the same r.
 *
 * The norms are sums over whole groups, across the threads' slices and the processes: the trainer
 * totals them between add_group_sums (which updates m and v and sums ‖w‖² and ‖r‖²) and update
 * (which computes r again from them), in double (SumsOverGroups). Only the synchronous step can do
 * that (BackupWorkers, Reproducible, LocalSgd, BoundedStaleness and Hogwild refuse it).
 *
 * @code
 * dptrain::Lamb lamb{.lr = 0.01, .weight_decay = 0.01};
 * @endcode
 */
struct Lamb {
  double lr = 1e-3;           ///< learning rate, finite and > 0 (scaled by each group's trust ratio)
  double beta1 = 0.9;         ///< decay of the first moment m, in [0, 1)
  double beta2 = 0.999;       ///< decay of the second moment v, in [0, 1)
  double epsilon = 1e-6;      ///< added to the denominator, finite and > 0
  double weight_decay = 0.0;  ///< λ ≥ 0, decoupled: added to the direction as λw

  /// Two state vectors: m (slot 0) and v (slot 1).
  static constexpr int state_slots = 2;
  /// Two sums per group: ‖w‖² and ‖r‖².
  static constexpr int group_sums = 2;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Lamb";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"lr", lr}, {"beta1", beta1}, {"beta2", beta2}, {"epsilon", epsilon}, {"weight_decay", weight_decay}};
  }

  /// Updates the slice's m and v, and adds its ‖w‖² and ‖r‖² to its group's sums.
  template <class Scalar>
  void add_group_sums(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info, std::span<double> sums) const {
    VectorMap<Scalar> m = s.state[0];
    VectorMap<Scalar> v = s.state[1];
    m.array() = static_cast<Scalar>(beta1) * m.array() + static_cast<Scalar>(1.0 - beta1) * s.grad.array();
    v.array() = static_cast<Scalar>(beta2) * v.array() + static_cast<Scalar>(1.0 - beta2) * s.grad.array().square();
    // r in blocks on the stack (vectorised, nothing allocated), each block's ‖r‖² summed as ‖w‖² is.
    const Direction<Scalar> r(*this, info);
    constexpr Index block = 1024;
    alignas(64) Scalar buffer[block];
    double rr = 0;
    for (Index begin = 0; begin < s.theta.size(); begin += block) {
      const Index size = std::min(block, s.theta.size() - begin);
      VectorMap<Scalar>(buffer, size).array() =
          r(m.segment(begin, size).array(), v.segment(begin, size).array(), s.theta.segment(begin, size).array());
      rr += detail::squared_norm(ConstVectorMap<Scalar>(buffer, size));
    }
    sums[0] += detail::squared_norm(ConstVectorMap<Scalar>(s.theta.data(), s.theta.size()));
    sums[1] += rr;
  }

  /// The trust ratio of a group whose sums are `group` (‖w‖², ‖r‖²).
  [[nodiscard]] static double trust_ratio(std::span<const double> group) {
    const double w = std::sqrt(group[0]), r = std::sqrt(group[1]);
    return w > 0 && r > 0 ? w / r : 1.0;
  }

  /**
   * @brief Applies step info.step (1-based) to a slice of one group, from the m and v that
   * add_group_sums left; s.state[0] is m, s.state[1] is v.
   * @param info the step, its learning rate, and in info.group its group's ‖w‖² and ‖r‖²
   */
  template <class Scalar>
  void update(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info) const {
    const Direction<Scalar> r(*this, info);
    const auto step = static_cast<Scalar>(info.lr * trust_ratio(info.group));
    VectorMap<Scalar> theta = s.theta;  // a writable copy of the view (s is const)
    theta.array() -= step * r(s.state[0].array(), s.state[1].array(), theta.array());
  }

  /// @throws dptrain::invalid_argument on lr or epsilon not finite and > 0, a beta outside
  /// [0, 1), or a negative weight_decay.
  void validate() const {
    detail::check_positive("dptrain::Lamb", "lr", lr);
    detail::check_unit_interval("dptrain::Lamb", "beta1", beta1);
    detail::check_unit_interval("dptrain::Lamb", "beta2", beta2);
    detail::check_positive("dptrain::Lamb", "epsilon", epsilon);
    detail::check_non_negative("dptrain::Lamb", "weight_decay", weight_decay);
  }

 private:
  // r of a slice's elements (Eigen arrays) from their m, v and w: the same expression in both
  // halves, so the same bits.
  template <class Scalar>
  struct Direction {
    Direction(const Lamb& o, const StepInfo& info)
        : first(static_cast<Scalar>(1.0 / (1.0 - std::pow(o.beta1, static_cast<double>(info.step))))),
          sqrt_second(static_cast<Scalar>(std::sqrt(1.0 - std::pow(o.beta2, static_cast<double>(info.step))))),
          epsilon(static_cast<Scalar>(o.epsilon)),
          decay(static_cast<Scalar>(o.weight_decay)) {}
    template <class M, class V, class W>
    auto operator()(const M& m, const V& v, const W& w) const {
      return (first * m) / (v.unaryExpr(detail::ExactSqrt<Scalar>{}) / sqrt_second + epsilon) + decay * w;
    }
    Scalar first, sqrt_second, epsilon, decay;
  };
};

}  // namespace dptrain
