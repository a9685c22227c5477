// SPDX-License-Identifier: MIT
// Sag and Saga: the updates of the stochastic average gradient methods, whose state is the mean
// of a table of per-sample gradients that a GradientTable's workers keep.
#pragma once

#include <string_view>
#include <vector>

#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

namespace detail {

// What Sag and Saga share: ᾱ, the mean of the table, moves by (|B|/n)·d each step, where d is the
// step's mean of ∇ℓⱼ(θ) − αⱼ over its samples (what a GradientTable's workers sum).
template <class Scalar>
[[nodiscard]] Scalar table_share(const StepInfo& info) {
  return static_cast<Scalar>(static_cast<double>(info.samples) / static_cast<double>(info.epoch_samples));
}

}  // namespace detail

/**
 * @brief SAGA (Defazio, Bach and Lacoste-Julien, 2014), data-parallel: each step moves θ along
 * v = d + ᾱ, then updates ᾱ ← ᾱ + (|B|/n)·d, where d = (1/|B|) Σⱼ∈B (∇ℓⱼ(θ) − αⱼ) is the step's
 * gradient as a GradientTable's workers compute it (each sample's gradient minus the one stored
 * for it at its last visit, which they then replace), |B| the step's samples and n the data set's.
 *
 * v is an unbiased estimate of the full gradient whose variance vanishes at the optimum, so a
 * constant learning rate converges linearly on strongly convex problems (lr ≈ 1/(3L), L the
 * largest curvature of one sample's loss). The state is ᾱ (one vector of θ's length), the table
 * is the GradientTable's; it needs GradientTable::worker() (fit() refuses other workers) and
 * Weighting::by_samples with no clipping (the mean must be the samples' exact mean).
 *
 * ```
 * v ← g + ᾱ;   ᾱ ← ᾱ + (|B|/n)·g;   θ ← θ − lr·(v + λθ)
 * ```
 *
 * @code
 * dptrain::GradientTable table(model, data);
 * dptrain::DataParallelTrainer(options, dptrain::Saga{.lr = 0.1}, table.worker()).fit(model, theta, data, table);
 * @endcode
 */
struct Saga {
  double lr = 0.01;           ///< learning rate, finite and > 0
  double weight_decay = 0.0;  ///< L2 coefficient λ ≥ 0, added to v as λθ
  bool decay_biases = true;   ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// ᾱ, the mean of the table of per-sample gradients.
  static constexpr int state_slots = 1;
  /// Its gradient is a GradientTable's (each sample's gradient less the one stored for it).
  static constexpr bool reads_gradient_table = true;

  static constexpr std::string_view name = "Saga";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"lr", lr}, {"weight_decay", weight_decay}, {"decay_biases", decay_biases ? 1.0 : 0.0}};
  }

  /// One step on a slice (info.samples and info.epoch_samples give |B|/n).
  template <class Scalar>
  void update(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info) const {
    if (!decay_biases && weight_decay != 0.0 && !s.biases.empty()) [[unlikely]] {
      detail::update_sparing_biases(*this, s, info);
      return;
    }
    VectorMap<Scalar> theta = s.theta, mean = s.state[0];
    const auto lr_s = static_cast<Scalar>(info.lr), wd = static_cast<Scalar>(weight_decay);
    const Scalar share = detail::table_share<Scalar>(info);
    for (Index i = 0; i < theta.size(); ++i) {
      const Scalar g = s.grad[i], v = g + mean[i];
      mean[i] += share * g;
      theta[i] -= lr_s * (v + wd * theta[i]);
    }
  }

  /// @throws dptrain::invalid_argument if lr is not finite and > 0 or weight_decay is negative or not finite.
  void validate() const {
    detail::check_positive("dptrain::Saga", "lr", lr);
    detail::check_non_negative("dptrain::Saga", "weight_decay", weight_decay);
  }
};

/**
 * @brief SAG (Schmidt, Le Roux and Bach, 2017), data-parallel: each step first updates the mean
 * of the table, ᾱ ← ᾱ + (|B|/n)·d, and moves θ along ᾱ itself (d as for Saga). A biased
 * estimate with a lower variance than SAGA's; it converges linearly at a constant step as well
 * (lr ≈ 1/(16L) in the paper's analysis, larger in practice). Its table starts at zero, so the
 * first epoch's steps are short: ᾱ sums the gradients seen so far over all n samples.
 *
 * ```
 * ᾱ ← ᾱ + (|B|/n)·g;   θ ← θ − lr·(ᾱ + λθ)
 * ```
 *
 * Needs, as Saga does, GradientTable::worker(), Weighting::by_samples and no clipping.
 */
struct Sag {
  double lr = 0.01;           ///< learning rate, finite and > 0
  double weight_decay = 0.0;  ///< L2 coefficient λ ≥ 0, added to ᾱ as λθ
  bool decay_biases = true;   ///< false: no weight decay on the model's biases (DeclaresBiases)

  /// ᾱ, the mean of the table of per-sample gradients.
  static constexpr int state_slots = 1;
  /// Its gradient is a GradientTable's (each sample's gradient less the one stored for it).
  static constexpr bool reads_gradient_table = true;

  static constexpr std::string_view name = "Sag";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"lr", lr}, {"weight_decay", weight_decay}, {"decay_biases", decay_biases ? 1.0 : 0.0}};
  }

  /// One step on a slice (info.samples and info.epoch_samples give |B|/n).
  template <class Scalar>
  void update(const UpdateSlice<Scalar, state_slots>& s, const StepInfo& info) const {
    if (!decay_biases && weight_decay != 0.0 && !s.biases.empty()) [[unlikely]] {
      detail::update_sparing_biases(*this, s, info);
      return;
    }
    VectorMap<Scalar> theta = s.theta, mean = s.state[0];
    const auto lr_s = static_cast<Scalar>(info.lr), wd = static_cast<Scalar>(weight_decay);
    const Scalar share = detail::table_share<Scalar>(info);
    for (Index i = 0; i < theta.size(); ++i) {
      mean[i] += share * s.grad[i];
      theta[i] -= lr_s * (mean[i] + wd * theta[i]);
    }
  }

  /// @throws dptrain::invalid_argument if lr is not finite and > 0 or weight_decay is negative or not finite.
  void validate() const {
    detail::check_positive("dptrain::Sag", "lr", lr);
    detail::check_non_negative("dptrain::Sag", "weight_decay", weight_decay);
  }
};

}  // namespace dptrain
