// SPDX-License-Identifier: MIT
// linear_scaling: the linear learning-rate scaling rule for large minibatches.
#pragma once

#include <limits>

#include "dptrain/core/types.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain {

/**
 * @brief The linear scaling rule: the learning rate for a minibatch of `batch` samples,
 * given one tuned for `base_batch`.
 *
 * @f[ \mathrm{lr} = \mathrm{base\_lr}\cdot\frac{\mathrm{batch}}{\mathrm{base\_batch}} @f]
 *
 * Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour"
 * (arXiv:1706.02677, §2.1): "When the minibatch size is multiplied by k, multiply the
 * learning rate by k." The rule is meant to be paired with a WarmupSchedule (§2.2): the
 * scaled rate is too large for the first steps, when θ changes fast, so ramp up to it.
 *
 * @param base_lr    learning rate tuned at base_batch, finite and > 0
 * @param base_batch minibatch size base_lr was tuned for, > 0
 * @param batch      minibatch size to train with (all threads and ranks together), > 0
 * @return base_lr · batch / base_batch
 * @throws dptrain::invalid_argument on a non-positive (or non-finite) argument.
 *
 * @code
 * // 0.1 was tuned at batch 256; train at 8192 (k = 32): lr = 3.2, ramped up over 5 epochs.
 * const dptrain::Sgd sgd{.lr = dptrain::linear_scaling(0.1, 256, 8192)};
 * const dptrain::WarmupSchedule<> warmup{.warmup_epochs = 5};
 * @endcode
 */
[[nodiscard]] constexpr double linear_scaling(double base_lr, Index base_batch, Index batch) {
  // Written with comparisons rather than std::isfinite so that it stays constexpr (C++20).
  if (!(base_lr > 0.0 && base_lr <= std::numeric_limits<double>::max())) {
    detail::throw_bad_hyperparameter("dptrain::linear_scaling", "base_lr", "be finite and > 0", base_lr);
  }
  if (base_batch <= 0) detail::throw_bad_hyperparameter("dptrain::linear_scaling", "base_batch", "be > 0", base_batch);
  if (batch <= 0) detail::throw_bad_hyperparameter("dptrain::linear_scaling", "batch", "be > 0", batch);
  return base_lr * static_cast<double>(batch) / static_cast<double>(base_batch);
}

}  // namespace dptrain
