// SPDX-License-Identifier: MIT
// AdaGrad: per-parameter steps scaled by the root of the summed squared gradients.
#pragma once

#include <string_view>
#include <vector>

#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief AdaGrad: divides each step by the root of that parameter's summed squared gradients.
 *
 * Per element, with g the averaged minibatch gradient, λ = weight_decay and s the running
 * sum of squares (state slot 0, zero before the first step):
 * @f[ g \leftarrow g + \lambda\theta, \qquad s \leftarrow s + g^2, \qquad
 *     \theta \leftarrow \theta - \mathrm{lr}\cdot\frac{g}{\sqrt{s} + \epsilon} @f]
 *
 * Duchi, Hazan & Singer, "Adaptive Subgradient Methods for Online Learning and Stochastic
 * Optimization", JMLR 12 (2011), as in PyTorch's `torch.optim.Adagrad`
 * (https://pytorch.org/docs/stable/generated/torch.optim.Adagrad.html) with lr_decay = 0 and
 * initial_accumulator_value = 0. PyTorch's `lr_decay` (lr/(1 + (t−1)·lr_decay)) is left out:
 * use a schedule instead. `initial_accumulator_value` is left out because the trainer
 * zero-initialises state. The square root is correctly rounded (see detail::ExactSqrt), so the
 * result does not depend on how θ is sliced.
 *
 * With decay_biases = false, the elements the model declares as biases (its bias_ranges(), see
 * DeclaresBiases; UpdateSlice::biases) take the step of weight_decay = 0, as scikit-learn leaves
 * the intercept unpenalised. The default, true, decays every element, as before.
 *
 * @code
 * dptrain::AdaGrad adagrad{.lr = 0.05};
 * @endcode
 */
struct AdaGrad {
  double lr = 0.01;           ///< learning rate, finite and > 0
  double epsilon = 1e-10;     ///< added to the denominator, finite and > 0
  double weight_decay = 0.0;  ///< L2 coefficient λ ≥ 0, added to the gradient as λθ
  bool decay_biases = true;   ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// One state vector: the sum of squared gradients s.
  static constexpr int state_slots = 1;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Adagrad";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {
        {"lr", lr}, {"epsilon", epsilon}, {"weight_decay", weight_decay}, {"decay_biases", decay_biases ? 1.0 : 0.0}};
  }

  /**
   * @brief Applies one step to a slice; s.state[0] holds the sum of squares.
   * @param s    this thread's slice of θ, the gradient and the sum of squares
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

  /// @throws dptrain::invalid_argument on lr or epsilon not finite and > 0, or a negative weight_decay.
  void validate() const {
    detail::check_positive("dptrain::AdaGrad", "lr", lr);
    detail::check_positive("dptrain::AdaGrad", "epsilon", epsilon);
    detail::check_non_negative("dptrain::AdaGrad", "weight_decay", weight_decay);
  }

 private:
  // `g` reads θ, which only the last assignment writes, so both passes see the same g.
  template <class Scalar, class Grad>
  void apply(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info, const Grad& g) const {
    VectorMap<Scalar> theta = s.theta;
    VectorMap<Scalar> sum = s.state[0];
    const auto lr_s = static_cast<Scalar>(info.lr);
    const auto eps = static_cast<Scalar>(epsilon);
    sum.array() += g.square();
    theta.array() -= (lr_s * g) / (sum.array().unaryExpr(detail::ExactSqrt<Scalar>{}) + eps);
  }
};

}  // namespace dptrain
