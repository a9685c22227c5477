// SPDX-License-Identifier: MIT
// The two benchmarked models (softmax regression 784→10, MLP 784-256-10, float) and the FLOP
// count of one gradient evaluation, as template arguments of the benchmarks.
#pragma once

#include <dptrain/core/types.hpp>
#include <dptrain/models/mlp.hpp>
#include <dptrain/models/softmax_regression.hpp>

#include <cstddef>
#include <vector>

namespace bench {

using dptrain::Index;

/**
 * FLOPs of one forward + backward pass over m rows through dense layers n_0 … n_L, counting the
 * matrix products only (2 FLOPs per multiply-add; bias, ReLU and softmax are O(m·n) and left out):
 *
 *   forward     Z_l = A_l W_l              2·m·n_l·n_{l+1}   every layer l
 *   weights     ∇W_l += A_lᵀ Δ_{l+1}       2·m·n_l·n_{l+1}   every layer l
 *   inputs      Δ_l = Δ_{l+1} W_lᵀ         2·m·n_l·n_{l+1}   layers l ≥ 1 (the input's δ is not formed)
 *
 *   F(m) = Σ_l 4·m·n_l·n_{l+1} + Σ_{l≥1} 2·m·n_l·n_{l+1}
 *
 * Softmax regression 784→10 is one layer: F = 4·m·784·10 = 8.03 MFLOP at m = 256.
 * MLP 784-256-10: F = 4·m·(784·256 + 256·10) + 2·m·256·10 = 209.5 MFLOP at m = 256.
 */
inline double dense_gradient_flops(const std::vector<Index>& widths, Index rows) {
  double flops = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const double layer = 2.0 * static_cast<double>(rows) * static_cast<double>(widths[l] * widths[l + 1]);
    flops += (l == 0 ? 2.0 : 3.0) * layer;
  }
  return flops;
}

/// Softmax regression on Fashion-MNIST's shape: 784 features, 10 classes.
struct Softmax {
  using Model = dptrain::SoftmaxRegression<float>;
  static Model make() { return Model(784, 10); }
  static double gradient_flops(Index rows) { return dense_gradient_flops({784, 10}, rows); }
};

/// The MLP 784-256-10 (ReLU, softmax cross-entropy).
struct Mlp {
  using Model = dptrain::Mlp<float>;
  static Model make() { return Model({784, 256, 10}); }
  static double gradient_flops(Index rows) { return dense_gradient_flops({784, 256, 10}, rows); }
};

}  // namespace bench
