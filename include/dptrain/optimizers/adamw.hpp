// SPDX-License-Identifier: MIT
// AdamW: Adam with decoupled weight decay (Loshchilov & Hutter).
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
 * @brief AdamW: Adam whose weight decay shrinks θ directly instead of entering the gradient.
 *
 * Per element, with g the averaged minibatch gradient, λ = weight_decay, t = StepInfo::step
 * (1-based), m and v the moments (state slots 0 and 1, zero before the first step):
 * @f[ \theta \leftarrow \theta\,(1 - \mathrm{lr}\cdot\lambda), \qquad
 *     m \leftarrow \beta_1 m + (1-\beta_1)\,g, \qquad
 *     v \leftarrow \beta_2 v + (1-\beta_2)\,g^2, @f]
 * @f[ \theta \leftarrow \theta - \mathrm{lr}\cdot
 *     \frac{m/(1-\beta_1^t)}{\sqrt{v/(1-\beta_2^t)} + \epsilon} @f]
 *
 * Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019 (arXiv:1711.05101),
 * as in PyTorch's `torch.optim.AdamW` (https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html):
 * the decay uses the scheduled lr of the step (PyTorch's `param.mul_(1 - lr * weight_decay)`),
 * and the Adam part is evaluated exactly as in dptrain::Adam. With weight_decay = 0 the result
 * is bitwise that of Adam. PyTorch's `amsgrad` and `maximize` are left out.
 *
 * With decay_biases = false, the elements the model declares as biases (its bias_ranges(), see
 * DeclaresBiases; UpdateSlice::biases) are not shrunk: they take the step of weight_decay = 0,
 * bitwise Adam's, as PyTorch users get with a parameter group of weight_decay = 0 for the
 * biases. The default, true, decays every element, as before.
 *
 * @code
 * dptrain::AdamW adamw{.lr = 3e-4, .weight_decay = 0.05};
 * @endcode
 */
struct AdamW {
  double lr = 1e-3;            ///< learning rate, finite and > 0
  double beta1 = 0.9;          ///< decay of the first moment m, in [0, 1)
  double beta2 = 0.999;        ///< decay of the second moment v, in [0, 1)
  double epsilon = 1e-8;       ///< added to the denominator, finite and > 0
  double weight_decay = 0.01;  ///< decoupled decay λ ≥ 0: θ ← θ(1 − lr·λ), with lr·λ < 1
  bool decay_biases = true;    ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// Two state vectors: m (slot 0) and v (slot 1).
  static constexpr int state_slots = 2;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "AdamW";
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
    VectorMap<Scalar> theta = s.theta;
    VectorMap<Scalar> m = s.state[0];
    VectorMap<Scalar> v = s.state[1];
    const auto t = static_cast<double>(info.step);
    const auto decay = static_cast<Scalar>(1.0 - info.lr * weight_decay);
    const auto b1 = static_cast<Scalar>(beta1);
    const auto b2 = static_cast<Scalar>(beta2);
    const auto one_minus_b1 = static_cast<Scalar>(1.0 - beta1);
    const auto one_minus_b2 = static_cast<Scalar>(1.0 - beta2);
    const auto step_size = static_cast<Scalar>(info.lr / (1.0 - std::pow(beta1, t)));
    const auto sqrt_bias2 = static_cast<Scalar>(std::sqrt(1.0 - std::pow(beta2, t)));
    const auto eps = static_cast<Scalar>(epsilon);

    m.array() = b1 * m.array() + one_minus_b1 * s.grad.array();
    v.array() = b2 * v.array() + one_minus_b2 * s.grad.array().square();
    // (θ·decay) is rounded before the Adam step is subtracted, as PyTorch's two in-place ops.
    theta.array() = theta.array() * decay -
                    (step_size * m.array()) / (v.array().unaryExpr(detail::ExactSqrt<Scalar>{}) / sqrt_bias2 + eps);
  }

  /// @throws dptrain::invalid_argument on lr or epsilon not finite and > 0, a beta outside
  /// [0, 1), a negative weight_decay, or lr·weight_decay ≥ 1 (θ would not shrink but flip sign).
  void validate() const {
    detail::check_positive("dptrain::AdamW", "lr", lr);
    detail::check_unit_interval("dptrain::AdamW", "beta1", beta1);
    detail::check_unit_interval("dptrain::AdamW", "beta2", beta2);
    detail::check_positive("dptrain::AdamW", "epsilon", epsilon);
    detail::check_non_negative("dptrain::AdamW", "weight_decay", weight_decay);
    if (!(lr * weight_decay < 1.0)) {
      detail::throw_bad_hyperparameter("dptrain::AdamW", "lr * weight_decay", "be < 1", lr * weight_decay);
    }
  }
};

}  // namespace dptrain
