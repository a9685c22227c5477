// SPDX-License-Identifier: MIT
// SparseSoftmaxRegression: multinomial logistic regression (softmax cross-entropy) on sparse samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/model_support.hpp"
#include "dptrain/detail/sparse_support.hpp"

namespace dptrain {

/**
 * @brief Multinomial logistic regression on sparse samples: P(y = c | x) = softmax(Wᵀx + b)_c
 * over k classes.
 *
 * The same model as SoftmaxRegression (same loss, θ layout and API) for a SparseBatch:
 * @f[ \ell(x, y; \theta) = \log \textstyle\sum_c e^{z_c} - z_y, \quad z = W^\top x + b, \qquad
 *     \nabla_W \ell = x\,(p - e_y)^\top, \quad \nabla_b \ell = p - e_y, \quad p = \mathrm{softmax}(z). @f]
 *
 * θ layout (length d·k + k): W row-major, d × k, so `θ[i·k + c]` = W(i, c); then b,
 * `θ[d·k + c]` = b_c.
 *
 * A batch with nnz stored entries costs O(nnz·k + m·k): Z = XW + 1bᵀ adds one row of W per
 * entry, ∇W += Xᵀ(P − Y) adds one row of P − Y to one row of ∇W per entry; both are loops over
 * the CSR arrays with vectorised rows of length k, and allocate nothing. The workspace holds Z
 * (m × k). All methods are const and thread-safe; concurrent calls need distinct workspaces and
 * gradient buffers.
 *
 * @tparam Scalar float or double.
 *
 * @code
 * auto file = dptrain::read_libsvm<float, dptrain::Label>("news20.scale",
 *                                                          {.labels = dptrain::LabelMode::multiclass});
 * dptrain::SparseSoftmaxRegression<float> model(file.data.dim(), static_cast<dptrain::Index>(file.classes.size()));
 * dptrain::Vector<float> theta = model.init_parameters();
 * dptrain::DataParallelTrainer trainer({.threads = 4, .batch_size = 128, .epochs = 5}, dptrain::Sgd{.lr = 0.5});
 * trainer.fit(model, theta, file.data);
 * @endcode
 */
template <class Scalar>
class SparseSoftmaxRegression {
 public:
  using scalar_type = Scalar;
  using target_type = Label;
  using batch_type = SparseBatch<Scalar, target_type>;

  /// Scratch memory for batches of up to `scores.rows()` rows; contents are unspecified.
  struct Workspace {
    RowMatrix<Scalar> scores;  ///< Z = XW + 1bᵀ (max_rows × k), then P − Y
  };
  using workspace_type = Workspace;

  /**
   * @param inputs d, the number of features per sample.
   * @param classes k, the number of classes; labels are 0 … k − 1.
   * @throws dptrain::invalid_argument if inputs < 1 or classes < 2.
   */
  SparseSoftmaxRegression(Index inputs, Index classes) : inputs_(inputs), classes_(classes) {
    detail::models::require_positive("SparseSoftmaxRegression", "inputs", inputs);
    if (classes < 2)
      throw invalid_argument("dptrain::SparseSoftmaxRegression: classes must be at least 2, got " +
                             std::to_string(classes));
  }

  /// d·k + k.
  [[nodiscard]] Index num_parameters() const noexcept { return (inputs_ + 1) * classes_; }
  /// The biases b = θ[d·k … d·k + k − 1], for an optimizer's decay_biases = false (DeclaresBiases).
  [[nodiscard]] std::vector<IndexRange> bias_ranges() const {
    return {{.begin = inputs_ * classes_, .size = classes_}};
  }
  /// d, the number of features per sample.
  [[nodiscard]] Index inputs() const noexcept { return inputs_; }
  /// The architecture, for checkpoints: "sparse_softmax_regression <inputs>-<classes>".
  [[nodiscard]] std::string shape() const {
    return detail::models::shape_text("sparse_softmax_regression", {inputs_, classes_});
  }
  /// k, the number of classes.
  [[nodiscard]] Index classes() const noexcept { return classes_; }

  /// Scratch memory for batches of up to `max_rows` ≥ 0 samples (the only allocation).
  /// @throws dptrain::invalid_argument if max_rows < 0.
  [[nodiscard]] Workspace make_workspace(Index max_rows) const {
    detail::models::check_max_rows("SparseSoftmaxRegression", max_rows);
    return Workspace{RowMatrix<Scalar>(max_rows, classes_)};
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
    Eigen::Map<RowMatrix<Scalar>> z(ws.scores.data(), m, classes_);
    scores(theta, batch, z);
    const Scalar loss = detail::models::softmax_cross_entropy<true, Scalar>(z, batch.targets);  // z is now P − Y
    Eigen::Map<RowMatrix<Scalar>> grad_w(grad.data(), inputs_, classes_);
    Eigen::Map<RowVector> grad_b(grad.data() + inputs_ * classes_, classes_);
    detail::sparse::add_transposed_product<Scalar>(grad_w, batch.features, z);
    grad_b += z.colwise().sum();
    return loss;
  }

  /**
   * @brief Calls `visit(i)` for each coordinate of θ that the batch's gradient can touch and its
   * loss reads (SparseGradient): for the column j of each stored entry (repeats included) W's
   * row j, θ[j·k … j·k + k − 1], then b. An empty batch visits nothing. O(stored entries · k);
   * allocates nothing.
   */
  template <class Visit>
  void gradient_support(const batch_type& batch, Visit&& visit) const {
    if (batch.size() == 0) return;
    const Index* inner = batch.features.innerIndexPtr();
    const Index* outer = batch.features.outerIndexPtr();
    for (Index k = outer[0]; k < outer[batch.size()]; ++k)
      for (Index c = 0; c < classes_; ++c) visit(inner[k] * classes_ + c);
    for (Index c = 0; c < classes_; ++c) visit(inputs_ * classes_ + c);
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
    detail::models::check_residuals("SparseSoftmaxRegression", m, residual_width(), out.rows(), out.cols());
    if (m == 0) return Scalar(0);
    Eigen::Map<RowMatrix<Scalar>> z(out.data(), m, classes_);
    scores(theta, batch, z);
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
    detail::models::check_call("SparseSoftmaxRegression", num_parameters(), num_parameters(), grad.size(), inputs_, m,
                               batch.features.cols(), m, ws.scores.rows());
    detail::models::check_residuals("SparseSoftmaxRegression", m, residual_width(), residuals.rows(), residuals.cols());
    if (m == 0) return;
    Eigen::Map<RowMatrix<Scalar>> grad_w(grad.data(), inputs_, classes_);
    Eigen::Map<RowVector> grad_b(grad.data() + inputs_ * classes_, classes_);
    detail::sparse::add_transposed_product<Scalar>(grad_w, batch.features, residuals);
    for (Index i = 0; i < m; ++i) grad_b += residuals.row(i);
  }

  /// Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing. @throws as loss_and_gradient().
  [[nodiscard]] Scalar loss(ConstVectorRef<Scalar> theta, const batch_type& batch, Workspace& ws) const {
    const Index m = batch.size();
    check(theta, num_parameters(), batch, ws);
    if (m == 0) return Scalar(0);
    Eigen::Map<RowMatrix<Scalar>> z(ws.scores.data(), m, classes_);
    scores(theta, batch, z);
    return detail::models::softmax_cross_entropy<false, Scalar>(z, batch.targets);
  }

  /**
   * @brief Writes the predicted class of each row to `out`: argmax_c z_c (the lowest c on ties).
   * Allocates nothing; the batch's targets are not read (they may be empty).
   * @throws dptrain::invalid_argument as loss_and_gradient(), or if out.size() != batch.size().
   */
  void predict(ConstVectorRef<Scalar> theta, const batch_type& batch, Eigen::Ref<Vector<Label>> out,
               Workspace& ws) const {
    const Index m = batch.size();
    detail::models::check_call("SparseSoftmaxRegression", num_parameters(), theta.size(), num_parameters(), inputs_, m,
                               batch.features.cols(), m, ws.scores.rows());  // targets are not read
    detail::models::check_prediction_size("SparseSoftmaxRegression", m, out.size());
    if (m == 0) return;
    Eigen::Map<RowMatrix<Scalar>> z(ws.scores.data(), m, classes_);
    scores(theta, batch, z);
    detail::models::argmax_rows<Scalar>(z, out);
  }

  /**
   * @brief Checks that `all` can be trained on.
   * @throws dptrain::invalid_argument naming the offending value: a feature count other than
   * inputs(), a target count other than the row count, a label outside [0, k), or a
   * non-finite stored value.
   */
  void validate(const batch_type& all) const {
    detail::models::check_feature_count("SparseSoftmaxRegression", inputs_, all.features.cols());
    detail::models::check_target_count("SparseSoftmaxRegression", all.features.rows(), all.targets.size());
    detail::models::check_labels("SparseSoftmaxRegression", all.targets, classes_);
    detail::sparse::check_finite_features<Scalar>("SparseSoftmaxRegression", all.features);
  }

  /// θ to start training from: zeros (the loss is convex, so any start works). `seed` is unused.
  [[nodiscard]] Vector<Scalar> init_parameters(std::uint64_t /*seed*/ = 0) const {
    return Vector<Scalar>::Zero(num_parameters());
  }

 private:
  using RowVector = Eigen::Matrix<Scalar, 1, Eigen::Dynamic>;

  void check(const ConstVectorRef<Scalar>& theta, Index grad_size, const batch_type& batch, const Workspace& ws) const {
    detail::models::check_call("SparseSoftmaxRegression", num_parameters(), theta.size(), grad_size, inputs_,
                               batch.size(), batch.features.cols(), batch.targets.size(), ws.scores.rows());
  }

  // Z = XW + 1bᵀ: the bias first, then one row of W per stored entry.
  void scores(const ConstVectorRef<Scalar>& theta, const batch_type& batch, Eigen::Map<RowMatrix<Scalar>>& z) const {
    const Eigen::Map<const RowMatrix<Scalar>> w(theta.data(), inputs_, classes_);
    const Eigen::Map<const RowVector> b(theta.data() + inputs_ * classes_, classes_);
    z.rowwise() = b;
    detail::sparse::add_product<Scalar>(z, batch.features, w);
  }

  Index inputs_;
  Index classes_;
};

}  // namespace dptrain
