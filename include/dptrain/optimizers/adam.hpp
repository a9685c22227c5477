// SPDX-License-Identifier: MIT
// Adam: adaptive moment estimation with bias correction and optional L2 weight decay.
#pragma once

#include <cmath>
#include <string_view>
#include <vector>

#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief Adam: per-parameter steps from bias-corrected first and second moment estimates.
 *
 * Per element, with g the averaged minibatch gradient, λ = weight_decay, t = StepInfo::step
 * (1-based), m and v the moments (state slots 0 and 1, zero before the first step):
 * @f[ g \leftarrow g + \lambda\theta, \qquad
 *     m \leftarrow \beta_1 m + (1-\beta_1)\,g, \qquad
 *     v \leftarrow \beta_2 v + (1-\beta_2)\,g^2, @f]
 * @f[ \theta \leftarrow \theta - \mathrm{lr}\cdot
 *     \frac{m/(1-\beta_1^t)}{\sqrt{v/(1-\beta_2^t)} + \epsilon} @f]
 *
 * Kingma & Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015 (arXiv:1412.6980),
 * as in PyTorch's `torch.optim.Adam` (https://pytorch.org/docs/stable/generated/torch.optim.Adam.html).
 * Like PyTorch, the last line is evaluated as θ − (lr/(1−β1^t))·m / (√v/√(1−β2^t) + ε), with
 * both bias corrections computed in double once per call, so ε is added to the
 * bias-corrected √v̂ (not to √v as in the paper's "efficient" form). weight_decay is an L2
 * penalty added to the gradient (PyTorch's Adam, not AdamW); for decoupled decay use AdamW.
 * PyTorch's `amsgrad`, `maximize` and `foreach`/`fused` variants are left out.
 *
 * With decay_biases = false, the elements the model declares as biases (its bias_ranges(), see
 * DeclaresBiases; UpdateSlice::biases) take the step of weight_decay = 0, as scikit-learn leaves
 * the intercept unpenalised. The default, true, decays every element, as before.
 *
 * The square root is correctly rounded for every element (see detail::ExactSqrt), so any
 * split of θ into slices gives bitwise the same result; the θ line is therefore evaluated
 * element by element rather than with SIMD packets.
 *
 * @code
 * dptrain::Adam adam{.lr = 1e-3, .beta2 = 0.99};
 * @endcode
 */
struct Adam {
  double lr = 1e-3;           ///< learning rate, finite and > 0
  double beta1 = 0.9;         ///< decay of the first moment m, in [0, 1)
  double beta2 = 0.999;       ///< decay of the second moment v, in [0, 1)
  double epsilon = 1e-8;      ///< added to the denominator, finite and > 0
  double weight_decay = 0.0;  ///< L2 coefficient λ ≥ 0, added to the gradient as λθ
  bool decay_biases = true;   ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// Two state vectors: m (slot 0) and v (slot 1).
  static constexpr int state_slots = 2;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Adam";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"lr", lr},
            {"beta1", beta1},
            {"beta2", beta2},
            {"epsilon", epsilon},
            {"weight_decay", weight_decay},
            {"decay_biases", decay_biases ? 1.0 : 0.0}};
  }

  /**
   * @brief Applies step info.step (1-based) to a slice; s.state[0] is m, s.state[1] is v.
   * @param s    this thread's slice of θ, the gradient, m and v
   * @param info the 1-based step (for the bias corrections) and its learning rate
   */
  template <class Scalar>
  void update(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info) const {
    if (!decay_biases && weight_decay != 0.0 && !s.biases.empty()) [[unlikely]] {
      detail::update_sparing_biases(*this, s, info);
      return;
    }
    if (weight_decay != 0.0) {
      apply(s, info, s.grad.array() + static_cast<Scalar>(weight_decay) * s.theta.array());
    } else {
      apply(s, info, s.grad.array());
    }
  }

  /// @throws dptrain::invalid_argument on lr or epsilon not finite and > 0, a beta outside
  /// [0, 1), or a negative weight_decay.
  void validate() const {
    detail::check_positive("dptrain::Adam", "lr", lr);
    detail::check_unit_interval("dptrain::Adam", "beta1", beta1);
    detail::check_unit_interval("dptrain::Adam", "beta2", beta2);
    detail::check_positive("dptrain::Adam", "epsilon", epsilon);
    detail::check_non_negative("dptrain::Adam", "weight_decay", weight_decay);
  }

 private:
  // `g` reads θ, which only the last assignment writes, so the m and v passes see the same g.
  template <class Scalar, class Grad>
  void apply(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info, const Grad& g) const {
    VectorMap<Scalar> theta = s.theta;
    VectorMap<Scalar> m = s.state[0];
    VectorMap<Scalar> v = s.state[1];
    const auto t = static_cast<double>(info.step);
    const auto b1 = static_cast<Scalar>(beta1);
    const auto b2 = static_cast<Scalar>(beta2);
    const auto one_minus_b1 = static_cast<Scalar>(1.0 - beta1);
    const auto one_minus_b2 = static_cast<Scalar>(1.0 - beta2);
    const auto step_size = static_cast<Scalar>(info.lr / (1.0 - std::pow(beta1, t)));
    const auto sqrt_bias2 = static_cast<Scalar>(std::sqrt(1.0 - std::pow(beta2, t)));
    const auto eps = static_cast<Scalar>(epsilon);

    m.array() = b1 * m.array() + one_minus_b1 * g;
    v.array() = b2 * v.array() + one_minus_b2 * g.square();
    theta.array() -= (step_size * m.array()) / (v.array().unaryExpr(detail::ExactSqrt<Scalar>{}) / sqrt_bias2 + eps);
  }
};

}  // namespace dptrain
