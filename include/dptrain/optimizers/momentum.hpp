// SPDX-License-Identifier: MIT
// Momentum: SGD with heavy-ball or Nesterov momentum, as PyTorch's torch.optim.SGD.
#pragma once

#include <string_view>
#include <vector>

#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief SGD with heavy-ball (Polyak) or Nesterov momentum: v ← μv + g, θ ← θ − lr·v.
 *
 * Per element, with g the averaged minibatch gradient, λ = weight_decay, μ = momentum and
 * v the velocity (state slot 0, zero before the first step):
 * @f[ g \leftarrow g + \lambda\theta, \qquad v \leftarrow \mu v + g, \qquad
 *     \theta \leftarrow \theta - \mathrm{lr}\cdot\begin{cases} g + \mu v & \text{nesterov} \\
 *                                                           v & \text{otherwise} \end{cases} @f]
 *
 * This is PyTorch's `torch.optim.SGD` with momentum > 0 and dampening = 0
 * (https://pytorch.org/docs/stable/generated/torch.optim.SGD.html). PyTorch sets v = g at
 * its first step, which is what μ·0 + g gives here. Heavy ball: Polyak, "Some methods of
 * speeding up the convergence of iteration methods", USSR Comput. Math. Math. Phys. 4 (1964);
 * the Nesterov form is Sutskever, Martens, Dahl & Hinton, "On the importance of
 * initialization and momentum in deep learning", ICML 2013. Note that PyTorch's (and so this)
 * velocity is not scaled by lr, so changing lr mid-run (a schedule) rescales the whole step.
 *
 * PyTorch's `dampening` (v ← μv + (1 − dampening)·g) is left out: it is almost never used,
 * and it would change PyTorch's special first step. PyTorch's `maximize` is left out too.
 *
 * With decay_biases = false, the elements the model declares as biases (its bias_ranges(), see
 * DeclaresBiases; UpdateSlice::biases) take the step of weight_decay = 0, as scikit-learn leaves
 * the intercept unpenalised. The default, true, decays every element, as before.
 *
 * @code
 * dptrain::Momentum heavy_ball{.lr = 0.1, .momentum = 0.9};
 * dptrain::Momentum nesterov{.lr = 0.1, .momentum = 0.9, .nesterov = true, .weight_decay = 5e-4};
 * @endcode
 */
struct Momentum {
  double lr = 0.01;           ///< learning rate, finite and > 0
  double momentum = 0.9;      ///< μ in [0, 1)
  bool nesterov = false;      ///< Nesterov's look-ahead form (requires momentum > 0)
  double weight_decay = 0.0;  ///< L2 coefficient λ ≥ 0, added to the gradient as λθ
  bool decay_biases = true;   ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// One state vector: the velocity v.
  static constexpr int state_slots = 1;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Momentum";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"lr", lr},
            {"momentum", momentum},
            {"nesterov", nesterov ? 1.0 : 0.0},
            {"weight_decay", weight_decay},
            {"decay_biases", decay_biases ? 1.0 : 0.0}};
  }

  /**
   * @brief Applies one step to a slice; s.state[0] holds v.
   * @param s    this thread's slice of θ, the gradient and v
   * @param info the step's learning rate (info.step is not used: v starts at zero)
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

  /// @throws dptrain::invalid_argument on lr not finite and > 0, momentum outside [0, 1),
  /// negative weight_decay, or nesterov with momentum = 0.
  void validate() const {
    detail::check_positive("dptrain::Momentum", "lr", lr);
    detail::check_unit_interval("dptrain::Momentum", "momentum", momentum);
    detail::check_non_negative("dptrain::Momentum", "weight_decay", weight_decay);
    if (nesterov && momentum == 0.0) {
      detail::throw_bad_hyperparameter("dptrain::Momentum", "momentum", "be > 0 when nesterov is true", momentum);
    }
  }

 private:
  // `g` is the (possibly weight-decayed) gradient expression; it reads θ, which is written
  // only by the last assignment, so both passes see the same g.
  template <class Scalar, class Grad>
  void apply(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info, const Grad& g) const {
    VectorMap<Scalar> theta = s.theta;
    VectorMap<Scalar> v = s.state[0];
    const auto lr_s = static_cast<Scalar>(info.lr);
    const auto mu = static_cast<Scalar>(momentum);
    v.array() = mu * v.array() + g;
    if (nesterov) {
      theta.array() -= lr_s * (g + mu * v.array());
    } else {
      theta.array() -= lr_s * v.array();
    }
  }
};

}  // namespace dptrain
