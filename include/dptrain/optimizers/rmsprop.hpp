// SPDX-License-Identifier: MIT
// RMSProp: steps scaled by a running root-mean-square of the gradients, optional momentum.
#pragma once

#include <string_view>
#include <vector>

#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief RMSProp: divides each step by a running root-mean-square of that parameter's gradient.
 *
 * Per element, with g the averaged minibatch gradient, λ = weight_decay, v the running mean
 * square (state slot 0) and b the momentum buffer (state slot 1), both zero before the first step:
 * @f[ g \leftarrow g + \lambda\theta, \qquad v \leftarrow \alpha v + (1-\alpha)\,g^2, @f]
 * @f[ \text{momentum } \mu > 0:\quad b \leftarrow \mu b + \frac{g}{\sqrt{v} + \epsilon},\quad
 *     \theta \leftarrow \theta - \mathrm{lr}\cdot b; \qquad
 *     \text{otherwise}\quad \theta \leftarrow \theta - \mathrm{lr}\cdot\frac{g}{\sqrt{v} + \epsilon} @f]
 *
 * Hinton, Srivastava & Swersky, "Neural Networks for Machine Learning", lecture 6e (2012),
 * as in PyTorch's `torch.optim.RMSprop` (https://pytorch.org/docs/stable/generated/torch.optim.RMSprop.html)
 * with centered = false. Note ε is added outside the root, and the defaults (lr = 0.01,
 * α = 0.99, ε = 1e-8) are PyTorch's, not Keras's. The momentum buffer b always takes a state
 * slot (state_slots is a compile-time constant) and is left at zero when momentum = 0.
 * PyTorch's `centered` variant (which would need a third slot) and `maximize` are left out.
 * The square root is correctly rounded (see detail::ExactSqrt), so the result does not depend
 * on how θ is sliced.
 *
 * With decay_biases = false, the elements the model declares as biases (its bias_ranges(), see
 * DeclaresBiases; UpdateSlice::biases) take the step of weight_decay = 0, as scikit-learn leaves
 * the intercept unpenalised. The default, true, decays every element, as before.
 *
 * @code
 * dptrain::RMSProp rmsprop{.lr = 1e-3, .alpha = 0.9, .momentum = 0.9};
 * @endcode
 */
struct RMSProp {
  double lr = 0.01;           ///< learning rate, finite and > 0
  double alpha = 0.99;        ///< decay α of the running mean square, in [0, 1)
  double epsilon = 1e-8;      ///< added to √v, finite and > 0
  double weight_decay = 0.0;  ///< L2 coefficient λ ≥ 0, added to the gradient as λθ
  double momentum = 0.0;      ///< μ in [0, 1); 0 turns the momentum buffer off
  bool decay_biases = true;   ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// Two state vectors: the mean square v (slot 0) and the momentum buffer b (slot 1).
  static constexpr int state_slots = 2;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "RMSProp";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"lr", lr},
            {"alpha", alpha},
            {"epsilon", epsilon},
            {"weight_decay", weight_decay},
            {"momentum", momentum},
            {"decay_biases", decay_biases ? 1.0 : 0.0}};
  }

  /**
   * @brief Applies one step to a slice; s.state[0] is v, s.state[1] is b.
   * @param s    this thread's slice of θ, the gradient, v and b
   * @param info the step's learning rate (info.step is not used)
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

  /// @throws dptrain::invalid_argument on lr or epsilon not finite and > 0, alpha or momentum
  /// outside [0, 1), or a negative weight_decay.
  void validate() const {
    detail::check_positive("dptrain::RMSProp", "lr", lr);
    detail::check_unit_interval("dptrain::RMSProp", "alpha", alpha);
    detail::check_positive("dptrain::RMSProp", "epsilon", epsilon);
    detail::check_non_negative("dptrain::RMSProp", "weight_decay", weight_decay);
    detail::check_unit_interval("dptrain::RMSProp", "momentum", momentum);
  }

 private:
  // `g` reads θ, which only the last assignment writes, so every pass sees the same g.
  template <class Scalar, class Grad>
  void apply(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info, const Grad& g) const {
    VectorMap<Scalar> theta = s.theta;
    VectorMap<Scalar> v = s.state[0];
    const auto lr_s = static_cast<Scalar>(info.lr);
    const auto a = static_cast<Scalar>(alpha);
    const auto one_minus_a = static_cast<Scalar>(1.0 - alpha);
    const auto eps = static_cast<Scalar>(epsilon);
    v.array() = a * v.array() + one_minus_a * g.square();
    if (momentum > 0.0) {
      VectorMap<Scalar> b = s.state[1];
      b.array() =
          static_cast<Scalar>(momentum) * b.array() + g / (v.array().unaryExpr(detail::ExactSqrt<Scalar>{}) + eps);
      theta.array() -= lr_s * b.array();
    } else {
      theta.array() -= (lr_s * g) / (v.array().unaryExpr(detail::ExactSqrt<Scalar>{}) + eps);
    }
  }
};

}  // namespace dptrain
