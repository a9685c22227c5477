// SPDX-License-Identifier: MIT
// The two benchmarked models (softmax regression 784→10, MLP 784-256-10, float) and the FLOP
// count of one gradient evaluation, as template arguments of the benchmarks.
#pragma once

#include <dptrain/concepts.hpp>
#include <dptrain/core/types.hpp>
#include <dptrain/models/mlp.hpp>
#include <dptrain/models/softmax_regression.hpp>

#include <cstddef>
#include <cstdint>
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

/// The same MLP with bf16 products (dptrain::Precision::bf16): the same flops, in bf16.
struct MlpBf16 {
  using Model = dptrain::Mlp<float>;
  static Model make() { return Model({784, 256, 10}, dptrain::Precision::bf16); }
  static double gradient_flops(Index rows) { return Mlp::gradient_flops(rows); }
};

/**
 * The data movement of a model's step without its arithmetic: θ and the gradient have the real
 * model's length, loss_and_gradient() reads all of θ (as a forward pass does) and adds to every
 * gradient entry (as a backward pass does; it writes them instead where the model does, for the
 * first micro-batch of a step), and the batch is not read. Trained by the real trainer, one step
 * is then what synchronous data parallelism adds to the compute: the barriers, the all-reduce of
 * the gradients, the sharded update, and every cache line of θ and of the gradients that moves
 * between cores because another core wrote it last.
 */
template <class Spec>
class ExchangeOnly {
 public:
  using scalar_type = float;
  using batch_type = typename Spec::Model::batch_type;
  struct workspace_type {};

  [[nodiscard]] Index num_parameters() const noexcept { return parameters_; }
  [[nodiscard]] workspace_type make_workspace(Index /*max_rows*/) const { return {}; }
  void validate(const batch_type& /*all*/) const {}
  [[nodiscard]] dptrain::Vector<float> init_parameters(std::uint64_t seed = 0) const {
    return model_.init_parameters(seed);
  }
  float loss_and_gradient(dptrain::ConstVectorRef<float> theta, const batch_type& batch, dptrain::VectorRef<float> grad,
                          workspace_type& ws) const {
    grad.array() += 1e-6f * static_cast<float>(batch.size());
    return loss(theta, batch, ws);
  }
  // Writes every entry, where the real model writes its gradient (dptrain::OverwritesGradient).
  float loss_and_gradient_overwrite(
      dptrain::ConstVectorRef<float> theta, const batch_type& batch, dptrain::VectorRef<float> grad,
      workspace_type& ws) const requires dptrain::OverwritesGradient<typename Spec::Model> {
    grad.setConstant(1e-6f * static_cast<float>(batch.size()));
    return loss(theta, batch, ws);
  }
  float loss(dptrain::ConstVectorRef<float> theta, const batch_type& batch, workspace_type& /*ws*/) const {
    return 1e-6f * static_cast<float>(batch.size()) * theta.sum();
  }

 private:
  typename Spec::Model model_ = Spec::make();
  Index parameters_ = model_.num_parameters();
};

}  // namespace bench
