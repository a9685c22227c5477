// SPDX-License-Identifier: MIT
// SoftmaxRegression: multinomial logistic regression (softmax cross-entropy) on dense samples.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/gemm.hpp"
#include "dptrain/detail/model_support.hpp"
#include "dptrain/detail/narrow_product.hpp"

namespace dptrain {

/**
 * @brief Multinomial logistic regression: P(y = c | x) = softmax(Wᵀx + b)_c over k classes.
 *
 * Per-sample loss (the cross-entropy), with scores z = Wᵀx + b ∈ ℝᵏ and label y ∈ [0, k):
 * @f[ \ell(x, y; \theta) = \log \textstyle\sum_c e^{z_c} - z_y, \qquad
 *     \nabla_W \ell = x\,(p - e_y)^\top, \quad \nabla_b \ell = p - e_y, \quad p = \mathrm{softmax}(z). @f]
 * The log-sum-exp subtracts max_c z_c first, so it never overflows.
 *
 * θ layout (length d·k + k): W row-major, d × k, so `θ[i·k + c]` = W(i, c), the weight of
 * feature i for class c; then b, `θ[d·k + c]` = b_c.
 *
 * For a batch X (m × d) the work is two matrix products, Z = XW + 1bᵀ and ∇W += Xᵀ(P − Y),
 * plus one pass of softmax over Z, done in the workspace (m × k). With at most
 * detail::narrow::max_columns classes (16 with AVX-512 or AArch64 NEON, 12 with AVX or SSE on
 * x86-64) both run on register tiles of our own, fused
 * block by block of rows so that each block of X is read from memory once; with more classes
 * they run on Eigen's GEMM. All methods are const and thread-safe; concurrent calls need
 * distinct workspaces and gradient buffers.
 *
 * @tparam Scalar float or double.
 *
 * @code
 * dptrain::SoftmaxRegression<float> model(784, 10);          // MNIST: 784 pixels, 10 digits
 * dptrain::DenseDataset<float, dptrain::Label> data{.features = X, .targets = labels};
 * model.validate(data.rows(0, data.size()));
 * dptrain::Vector<float> theta = model.init_parameters();    // zeros
 * auto ws = model.make_workspace(256);
 * dptrain::Vector<float> grad = dptrain::Vector<float>::Zero(model.num_parameters());
 * float loss = model.loss_and_gradient(theta, data.rows(0, 256), grad, ws);  // 256 · log 10
 * @endcode
 */
template <class Scalar>
class SoftmaxRegression {
 public:
  using scalar_type = Scalar;
  using target_type = Label;
  using batch_type = DenseBatch<Scalar, target_type>;

  /// Scratch memory for batches of up to `scores.rows()` rows; contents are unspecified.
  struct Workspace {
    RowMatrix<Scalar> scores;            ///< Z = XW + 1bᵀ (max_rows × k), then P − Y
    RowMatrix<Scalar> weights_t;         ///< Wᵀ (k × d), class-major, for the narrow kernels
    RowMatrix<Scalar> gradient_t;        ///< the call's ∇Wᵀ (k × d), for the narrow kernels
    detail::gemm::Buffers<Scalar> gemm;  ///< packing buffers of the two GEMMs (more classes)
    detail::gemm::Plan forward;          ///< blocking of XW
    detail::gemm::Plan backward;         ///< blocking of Xᵀ(P − Y)
  };
  using workspace_type = Workspace;

  /**
   * @param inputs d, the number of features per sample.
   * @param classes k, the number of classes; labels are 0 … k − 1.
   * @throws dptrain::invalid_argument if inputs < 1 or classes < 2.
   */
  SoftmaxRegression(Index inputs, Index classes) : inputs_(inputs), classes_(classes) {
    detail::models::require_positive("SoftmaxRegression", "inputs", inputs);
    if (classes < 2)
      throw invalid_argument("dptrain::SoftmaxRegression: classes must be at least 2, got " + std::to_string(classes));
  }

  /// d·k + k.
  [[nodiscard]] Index num_parameters() const noexcept { return (inputs_ + 1) * classes_; }
  /// The biases b = θ[d·k … d·k + k − 1], for an optimizer's decay_biases = false (DeclaresBiases).
  [[nodiscard]] std::vector<IndexRange> bias_ranges() const {
    return {{.begin = inputs_ * classes_, .size = classes_}};
  }
  /// d, the number of features per sample.
  [[nodiscard]] Index inputs() const noexcept { return inputs_; }
  /// The architecture, for checkpoints: "softmax_regression <inputs>-<classes>".
  [[nodiscard]] std::string shape() const {
    return detail::models::shape_text("softmax_regression", {inputs_, classes_});
  }
  /// k, the number of classes.
  [[nodiscard]] Index classes() const noexcept { return classes_; }

  /// Scratch memory for batches of up to `max_rows` ≥ 0 samples (the only allocation).
  /// @throws dptrain::invalid_argument if max_rows < 0.
  [[nodiscard]] Workspace make_workspace(Index max_rows) const {
    detail::models::check_max_rows("SoftmaxRegression", max_rows);
    Workspace ws;
    ws.scores.resize(max_rows, classes_);
    if (narrow()) {
      ws.weights_t.resize(classes_, inputs_);
      ws.gradient_t.resize(classes_, inputs_);
    } else {
      ws.forward = ws.gemm.reserve(max_rows, classes_, inputs_);
      ws.backward = ws.gemm.reserve(inputs_, classes_, max_rows);
    }
    return ws;
  }

  /**
   * @brief Adds Σᵢ ∇ℓ(xᵢ, yᵢ; θ) to `grad` and returns Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing.
   * An empty batch returns 0 and leaves `grad` unchanged. Labels must be in [0, k) (validate()).
   * @throws dptrain::invalid_argument on a θ or gradient of the wrong length, a batch with the
   * wrong feature count or more rows than the workspace was made for.
   */
  Scalar loss_and_gradient(ConstVectorRef<Scalar> theta, const batch_type& batch, VectorRef<Scalar> grad,
                           Workspace& ws) const {
    const Index m = batch.size();
    check(theta, grad.size(), batch, ws);
    if (m == 0) return Scalar(0);
    Scalar loss(0);
    if (narrow()) {
      loss = detail::narrow::with_columns(
          classes_, [&](auto k) { return narrow_step<decltype(k)::value>(theta, batch, grad, ws); });
    } else {
      Eigen::Map<RowMatrix<Scalar>> z(ws.scores.data(), m, classes_);
      Eigen::Map<RowVector> grad_b(grad.data() + inputs_ * classes_, classes_);
      scores(theta, batch, z, ws);
      loss = detail::models::softmax_cross_entropy<true, Scalar>(z, batch.targets);  // z is now P − Y
      Eigen::Map<RowMatrix<Scalar>> grad_w(grad.data(), inputs_, classes_);
      detail::gemm::add_transposed_product<Scalar>(grad_w, batch.features, z, ws.backward, ws.gemm);
      grad_b += z.colwise().sum();
    }
    return loss;
  }

  /// k: sample i's residuals are its class probabilities less its one-hot label (ResidualGradient: the table of Sag and
  /// Saga keeps these, not gradients).
  [[nodiscard]] Index residual_width() const noexcept { return classes_; }

  /**
   * @brief Returns Σᵢ ℓ(xᵢ, yᵢ; θ) and writes row i of `out` (batch.size() × residual_width()):
   * the derivative of sample i's loss by its linear outputs, so that its gradient is x̃ᵢ ⊗ rᵢ.
   * Allocates nothing. @throws as loss_and_gradient(), or on `out` of another shape
   */
  Scalar loss_and_residuals(ConstVectorRef<Scalar> theta, const batch_type& batch, RowMatrixMap<Scalar> out,
                            Workspace& ws) const {
    const Index m = batch.size();
    check(theta, num_parameters(), batch, ws);
    detail::models::check_residuals("SoftmaxRegression", m, residual_width(), out.rows(), out.cols());
    if (m == 0) return Scalar(0);
    Eigen::Map<RowMatrix<Scalar>> z(out.data(), m, classes_);
    scores(theta, batch, z, ws);
    return detail::models::softmax_cross_entropy<true, Scalar>(z, batch.targets);  // z is now P − Y
  }

  /**
   * @brief Adds Σᵢ x̃ᵢ ⊗ rᵢ to `grad` for the given residuals (batch.size() × residual_width()):
   * the gradient at any θ where the batch's residuals are these. Allocates nothing.
   * @throws dptrain::invalid_argument on a gradient of the wrong length, a batch with the wrong
   * feature count or more rows than the workspace was made for, or residuals of another shape
   */
  void add_residual_gradient(const batch_type& batch, ConstRowMatrixMap<Scalar> residuals, VectorRef<Scalar> grad,
                             Workspace& ws) const {
    const Index m = batch.size();
    detail::models::check_call("SoftmaxRegression", num_parameters(), num_parameters(), grad.size(), inputs_, m,
                               batch.features.cols(), m, ws.scores.rows());
    detail::models::check_residuals("SoftmaxRegression", m, residual_width(), residuals.rows(), residuals.cols());
    if (m == 0) return;
    check_workspace(ws);
    Eigen::Map<RowVector> grad_b(grad.data() + inputs_ * classes_, classes_);
    for (Index i = 0; i < m; ++i) grad_b += residuals.row(i);
    if (narrow()) {
      const auto& x = batch.features;
      detail::narrow::with_columns(classes_, [&](auto k) {
        constexpr int K = decltype(k)::value;
        ws.gradient_t.setZero();
        detail::narrow::add_gradient<K>(x.data(), x.outerStride(), m, inputs_, residuals.data(), K,
                                        ws.gradient_t.data(), inputs_);
        detail::narrow::add_transposed<K>(ws.gradient_t.data(), inputs_, inputs_, grad.data());
      });
    } else {
      Eigen::Map<RowMatrix<Scalar>> grad_w(grad.data(), inputs_, classes_);
      detail::gemm::add_transposed_product<Scalar>(grad_w, batch.features, residuals, ws.backward, ws.gemm);
    }
  }

  /// Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing. @throws as loss_and_gradient().
  [[nodiscard]] Scalar loss(ConstVectorRef<Scalar> theta, const batch_type& batch, Workspace& ws) const {
    const Index m = batch.size();
    check(theta, num_parameters(), batch, ws);
    if (m == 0) return Scalar(0);
    Eigen::Map<RowMatrix<Scalar>> z(ws.scores.data(), m, classes_);
    scores(theta, batch, z, ws);
    return detail::models::softmax_cross_entropy<false, Scalar>(z, batch.targets);
  }

  /**
   * @brief Writes the predicted class of each row into `out`: argmax_c z_c (the smallest c on
   * ties). Allocates nothing; the batch's targets are not read.
   * @throws dptrain::invalid_argument on a θ of the wrong length, a batch with the wrong
   * feature count or more rows than the workspace was made for, or an `out` of another length.
   */
  void predict(ConstVectorRef<Scalar> theta, const batch_type& batch, Eigen::Ref<Vector<target_type>> out,
               Workspace& ws) const {
    const Index m = batch.size();
    detail::models::check_call("SoftmaxRegression", num_parameters(), theta.size(), num_parameters(), inputs_, m,
                               batch.features.cols(), m, ws.scores.rows());
    detail::models::check_prediction_size("SoftmaxRegression", m, out.size());
    check_workspace(ws);
    if (m == 0) return;
    Eigen::Map<RowMatrix<Scalar>> z(ws.scores.data(), m, classes_);
    scores(theta, batch, z, ws);
    detail::models::argmax_rows<Scalar>(z, out);
  }

  /**
   * @brief Checks that `all` can be trained on.
   * @throws dptrain::invalid_argument naming the offending value: a feature count other than
   * inputs(), a target count other than the row count, a label outside [0, k), or a
   * non-finite feature.
   */
  void validate(const batch_type& all) const {
    detail::models::check_feature_count("SoftmaxRegression", inputs_, all.features.cols());
    detail::models::check_target_count("SoftmaxRegression", all.features.rows(), all.targets.size());
    detail::models::check_labels("SoftmaxRegression", all.targets, classes_);
    detail::models::check_finite_features<Scalar>("SoftmaxRegression", all.features);
  }

  /// θ to start training from: zeros (the loss is convex, so any start works). `seed` is unused.
  [[nodiscard]] Vector<Scalar> init_parameters(std::uint64_t /*seed*/ = 0) const {
    return Vector<Scalar>::Zero(num_parameters());
  }

 private:
  using RowVector = Eigen::Matrix<Scalar, 1, Eigen::Dynamic>;

  void check(const ConstVectorRef<Scalar>& theta, Index grad_size, const batch_type& batch, const Workspace& ws) const {
    detail::models::check_call("SoftmaxRegression", num_parameters(), theta.size(), grad_size, inputs_, batch.size(),
                               batch.features.cols(), batch.targets.size(), ws.scores.rows());
    check_workspace(ws);
  }

  // The narrow kernels write ws.gradient_t through raw pointers: a workspace of another shape
  // would be overrun, not resized.
  void check_workspace(const Workspace& ws) const {
    const bool fits = !narrow() || (ws.weights_t.rows() == classes_ && ws.weights_t.cols() == inputs_ &&
                                    ws.gradient_t.rows() == classes_ && ws.gradient_t.cols() == inputs_);
    if (!fits)
      throw invalid_argument(
          "dptrain::SoftmaxRegression: the workspace was made for another model; use this "
          "model's make_workspace()");
  }

  // Bytes of X per block of rows of the fused step: a block stays in L2 between its two
  // products, while Wᵀ and ∇Wᵀ are reused by every block.
  static constexpr Index block_bytes = 128 * 1024;

  [[nodiscard]] bool narrow() const noexcept { return classes_ <= detail::narrow::max_columns; }

  // Z = XW + 1bᵀ: the bias is written first, so the product accumulates onto it.
  void scores(const ConstVectorRef<Scalar>& theta, const batch_type& batch, Eigen::Map<RowMatrix<Scalar>>& z,
              Workspace& ws) const {
    const Eigen::Map<const RowVector> b(theta.data() + inputs_ * classes_, classes_);
    z.rowwise() = b;
    if (narrow()) {
      const auto& x = batch.features;
      detail::narrow::with_columns(classes_, [&](auto k) {
        constexpr int K = decltype(k)::value;
        transpose_weights<K>(theta, ws);
        detail::narrow::add_scores<K>(x.data(), x.outerStride(), x.rows(), inputs_, ws.weights_t.data(), inputs_,
                                      z.data(), K);
      });
    } else {
      const Eigen::Map<const RowMatrix<Scalar>> w(theta.data(), inputs_, classes_);
      detail::gemm::add_product<Scalar>(z, batch.features, w, ws.forward, ws.gemm);
    }
  }

  template <int K>
  void transpose_weights(const ConstVectorRef<Scalar>& theta, Workspace& ws) const {
    detail::narrow::transpose_to_class_major<K>(theta.data(), inputs_, ws.weights_t.data(), inputs_);
  }

  // The narrow path of loss_and_gradient() with k = K classes: per block of rows, the scores,
  // their softmax (the block of Z becomes P − Y), the block's share of ∇b and of ∇Wᵀ, into
  // ws.gradient_t; then ∇W += (∇Wᵀ)ᵀ. Returns the loss. ∇b is summed row by row in a row of K:
  // Eigen's colwise().sum() of the row-major Z runs down each column (1.1 µs for a 256 × 10 Z
  // on a Zen 5 core, against 0.13 µs).
  template <int K>
  Scalar narrow_step(const ConstVectorRef<Scalar>& theta, const batch_type& batch, VectorRef<Scalar>& grad,
                     Workspace& ws) const {
    const auto& x = batch.features;
    const Index m = x.rows();
    // A whole number of score tiles per block, so that only the batch's last rows take the
    // one-row tile.
    constexpr Index tile = detail::narrow::tile_depth<K>;
    const Index block = std::max<Index>(1, block_bytes / (inputs_ * Index{sizeof(Scalar)}) / tile) * tile;
    const Eigen::Map<const RowVector> b(theta.data() + inputs_ * K, K);
    constexpr int Cols = K == 1 ? Eigen::Dynamic : K;  // rows of K scores, fixed size (Eigen has no 1-column row-major)
    transpose_weights<K>(theta, ws);
    ws.gradient_t.setZero();
    Eigen::Matrix<Scalar, 1, K> grad_b = Eigen::Matrix<Scalar, 1, K>::Zero();
    Scalar loss(0);
    for (Index first = 0; first < m; first += block) {
      const Index rows = std::min(block, m - first);
      const Scalar* xb = x.data() + first * x.outerStride();
      Eigen::Map<Eigen::Matrix<Scalar, Eigen::Dynamic, Cols, Eigen::RowMajor>> z(ws.scores.data() + first * K, rows, K);
      z.rowwise() = b;
      detail::narrow::add_scores<K>(xb, x.outerStride(), rows, inputs_, ws.weights_t.data(), inputs_, z.data(), K);
      loss += detail::models::softmax_cross_entropy<true, Scalar, Cols>(z, batch.targets.segment(first, rows));
      for (Index r = 0; r < rows; ++r) grad_b += z.row(r);
      detail::narrow::add_gradient<K>(xb, x.outerStride(), rows, inputs_, z.data(), K, ws.gradient_t.data(), inputs_);
    }
    detail::narrow::add_transposed<K>(ws.gradient_t.data(), inputs_, inputs_, grad.data());
    Eigen::Map<Eigen::Matrix<Scalar, 1, K>>(grad.data() + inputs_ * K) += grad_b;
    return loss;
  }

  Index inputs_;
  Index classes_;
};

}  // namespace dptrain
