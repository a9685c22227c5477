// SPDX-License-Identifier: MIT
// Sgd: plain stochastic gradient descent with optional L2 weight decay.
#pragma once

#include <string_view>
#include <vector>

#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief Plain stochastic gradient descent: θ ← θ − lr·(g + λθ).
 *
 * Per element, with g the averaged minibatch gradient, λ = weight_decay and lr the
 * step's scheduled learning rate (StepInfo::lr):
 * @f[ g \leftarrow g + \lambda\theta, \qquad \theta \leftarrow \theta - \mathrm{lr}\cdot g @f]
 *
 * This is PyTorch's `torch.optim.SGD` with momentum = 0
 * (https://pytorch.org/docs/stable/generated/torch.optim.SGD.html); the method is
 * Robbins & Monro, "A Stochastic Approximation Method", Ann. Math. Statist. 22 (1951).
 * Weight decay is the L2 penalty λ/2·‖θ‖² added to the loss, i.e. λθ added to the gradient
 * (the term is skipped entirely when λ = 0). Keeps no state.
 *
 * With decay_biases = false, the elements the model declares as biases (its bias_ranges(), see
 * DeclaresBiases; UpdateSlice::biases) take the step of weight_decay = 0, as scikit-learn leaves
 * the intercept unpenalised. The default, true, decays every element, as before.
 *
 * A small copyable value; update() is const, allocates nothing and may be called
 * concurrently on disjoint slices.
 *
 * @code
 * dptrain::Sgd sgd{.lr = 0.1, .weight_decay = 1e-4};
 * sgd.validate();   // throws dptrain::invalid_argument on a bad value
 * @endcode
 */
struct Sgd {
  double lr = 0.01;           ///< learning rate, finite and > 0
  double weight_decay = 0.0;  ///< L2 coefficient λ ≥ 0, added to the gradient as λθ
  bool decay_biases = true;   ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// Sgd keeps no state vectors.
  static constexpr int state_slots = 0;

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Sgd";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"lr", lr}, {"weight_decay", weight_decay}, {"decay_biases", decay_biases ? 1.0 : 0.0}};
  }

  /**
   * @brief Applies one step to a slice: θ ← θ − info.lr·(g + λθ).
   * @param s    this thread's slice of θ and of the gradient, and its biases
   * @param info the step's learning rate (info.step is not used)
   */
  template <class Scalar>
  void update(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info) const {
    if (!decay_biases && weight_decay != 0.0 && !s.biases.empty()) [[unlikely]] {
      detail::update_sparing_biases(*this, s, info);
      return;
    }
    VectorMap<Scalar> theta = s.theta;  // a copy of the view, writable (s is const)
    const auto lr_s = static_cast<Scalar>(info.lr);
    if (weight_decay != 0.0) {
      const auto wd = static_cast<Scalar>(weight_decay);
      theta.array() -= lr_s * (s.grad.array() + wd * theta.array());
    } else {
      theta.array() -= lr_s * s.grad.array();
    }
  }

  /// @throws dptrain::invalid_argument if lr is not finite and > 0 or weight_decay is negative or not finite.
  void validate() const {
    detail::check_positive("dptrain::Sgd", "lr", lr);
    detail::check_non_negative("dptrain::Sgd", "weight_decay", weight_decay);
  }
};

}  // namespace dptrain
