// SPDX-License-Identifier: MIT
// SparseLogisticRegression: binary classification with the logistic (cross-entropy) loss on sparse samples.
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
 * @brief Binary logistic regression on sparse samples: P(y = 1 | x) = σ(wᵀx + b), labels y ∈ {0, 1}.
 *
 * The same model as LogisticRegression (same loss, θ layout and API) for a SparseBatch:
 * @f[ \ell(x, y; \theta) = \log(1 + e^{z}) - y\,z, \quad z = w^\top x + b, \qquad
 *     \nabla_w \ell = (\sigma(z) - y)\, x, \quad \nabla_b \ell = \sigma(z) - y. @f]
 *
 * θ layout (length d + 1): `θ[0 … d−1]` = w, `θ[d]` = b.
 *
 * A batch with nnz stored entries costs O(nnz + m): one pass over the entries for Xw and one
 * for Xᵀr, written as loops over the CSR arrays, so nothing is allocated. All methods are const
 * and thread-safe; concurrent calls need distinct workspaces and gradient buffers.
 *
 * @tparam Scalar float or double.
 *
 * @code
 * auto file = dptrain::read_libsvm<float, dptrain::Label>("a9a", {.labels = dptrain::LabelMode::binary});
 * dptrain::SparseLogisticRegression<float> model(file.data.dim());
 * dptrain::Vector<float> theta = model.init_parameters();
 * dptrain::DataParallelTrainer trainer({.threads = 4, .batch_size = 256}, dptrain::Sgd{.lr = 0.5});
 * trainer.fit(model, theta, file.data);
 * @endcode
 */
template <class Scalar>
class SparseLogisticRegression {
 public:
  using scalar_type = Scalar;
  using target_type = Label;
  using batch_type = SparseBatch<Scalar, target_type>;

  /// Scratch memory for batches of up to `scores.size()` rows; contents are unspecified.
  struct Workspace {
    Vector<Scalar> scores;  ///< z for each row, then σ(z) − y
  };
  using workspace_type = Workspace;

  /**
   * @param inputs d, the number of features per sample.
   * @throws dptrain::invalid_argument if inputs < 1.
   */
  explicit SparseLogisticRegression(Index inputs) : inputs_(inputs) {
    detail::models::require_positive("SparseLogisticRegression", "inputs", inputs);
  }

  /// d + 1.
  [[nodiscard]] Index num_parameters() const noexcept { return inputs_ + 1; }
  /// The intercept b = θ[d], for an optimizer's decay_biases = false (DeclaresBiases).
  [[nodiscard]] std::vector<IndexRange> bias_ranges() const { return {{.begin = inputs_, .size = 1}}; }
  /// d, the number of features per sample.
  [[nodiscard]] Index inputs() const noexcept { return inputs_; }
  /// The architecture, for checkpoints: "sparse_logistic_regression <inputs>".
  [[nodiscard]] std::string shape() const {
    return detail::models::shape_text("sparse_logistic_regression", {inputs_});
  }

  /// Scratch memory for batches of up to `max_rows` ≥ 0 samples (the only allocation).
  /// @throws dptrain::invalid_argument if max_rows < 0.
  [[nodiscard]] Workspace make_workspace(Index max_rows) const {
    detail::models::check_max_rows("SparseLogisticRegression", max_rows);
    return Workspace{Vector<Scalar>(max_rows)};
  }

  /**
   * @brief Adds Σᵢ ∇ℓ(xᵢ, yᵢ; θ) to `grad` and returns Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing.
   * An empty batch returns 0 and leaves `grad` unchanged. Labels must be 0 or 1 (validate()).
   * @throws dptrain::invalid_argument on a θ or gradient of the wrong length, a batch with the
   * wrong feature count or more rows than the workspace was made for.
   */
  Scalar loss_and_gradient(ConstVectorRef<Scalar> theta, const batch_type& batch, VectorRef<Scalar> grad,
                           Workspace& ws) const {
    const Index m = batch.size();
    check(theta, grad.size(), batch, ws.scores.size());
    if (m == 0) return Scalar(0);
    Eigen::Map<Vector<Scalar>> z(ws.scores.data(), m);
    scores(theta, batch, z);
    const Scalar loss = detail::models::logistic_loss<true, Scalar>(z, batch.targets);  // z is now σ(z) − y
    const Index* outer = batch.features.outerIndexPtr();
    const Index* inner = batch.features.innerIndexPtr();
    const Scalar* values = batch.features.valuePtr();
    for (Index r = 0; r < m; ++r)
      for (Index k = outer[r]; k < outer[r + 1]; ++k) grad[inner[k]] += values[k] * z[r];
    grad[inputs_] += z.sum();
    return loss;
  }

  /**
   * @brief Calls `visit(i)` for each coordinate of θ that the batch's gradient can touch and its
   * loss reads (SparseGradient): the column of each stored entry (repeats included) and b. An
   * empty batch visits nothing. O(stored entries); allocates nothing.
   */
  template <class Visit>
  void gradient_support(const batch_type& batch, Visit&& visit) const {
    if (batch.size() == 0) return;
    const Index* inner = batch.features.innerIndexPtr();
    const Index* outer = batch.features.outerIndexPtr();
    for (Index k = outer[0]; k < outer[batch.size()]; ++k) visit(inner[k]);
    visit(inputs_);
  }

  /// 1: sample i's residual is σ(wᵀxᵢ + b) − yᵢ (ResidualGradient: the table of Sag and Saga keeps these, not
  /// gradients).
  [[nodiscard]] Index residual_width() const noexcept { return 1; }

  /**
   * @brief Returns Σᵢ ℓ(xᵢ, yᵢ; θ) and writes row i of `out` (batch.size() × residual_width()):
   * the derivative of sample i's loss by its linear outputs, so that its gradient is x̃ᵢ ⊗ rᵢ.
   * Allocates nothing. @throws as loss_and_gradient(), or on `out` of another shape
   */
  Scalar loss_and_residuals(ConstVectorRef<Scalar> theta, const batch_type& batch, RowMatrixMap<Scalar> out,
                            Workspace& ws) const {
    const Index m = batch.size();
    check(theta, num_parameters(), batch, ws.scores.size());
    detail::models::check_residuals("SparseLogisticRegression", m, residual_width(), out.rows(), out.cols());
    if (m == 0) return Scalar(0);
    Eigen::Map<Vector<Scalar>> z(out.data(), m);
    scores(theta, batch, z);
    return detail::models::logistic_loss<true, Scalar>(z, batch.targets);  // z is now σ(z) − y
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
    detail::models::check_call("SparseLogisticRegression", num_parameters(), num_parameters(), grad.size(), inputs_, m,
                               batch.features.cols(), m, ws.scores.size());
    detail::models::check_residuals("SparseLogisticRegression", m, residual_width(), residuals.rows(),
                                    residuals.cols());
    if (m == 0) return;
    const Index* outer = batch.features.outerIndexPtr();
    const Index* inner = batch.features.innerIndexPtr();
    const Scalar* values = batch.features.valuePtr();
    const Scalar* r = residuals.data();
    for (Index i = 0; i < m; ++i)
      for (Index k = outer[i]; k < outer[i + 1]; ++k) grad[inner[k]] += values[k] * r[i];
    grad[inputs_] += ConstVectorMap<Scalar>(r, m).sum();
  }

  /// Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing. @throws as loss_and_gradient().
  [[nodiscard]] Scalar loss(ConstVectorRef<Scalar> theta, const batch_type& batch, Workspace& ws) const {
    const Index m = batch.size();
    check(theta, num_parameters(), batch, ws.scores.size());
    if (m == 0) return Scalar(0);
    Eigen::Map<Vector<Scalar>> z(ws.scores.data(), m);
    scores(theta, batch, z);
    return detail::models::logistic_loss<false, Scalar>(z, batch.targets);
  }

  /**
   * @brief Writes the predicted class of each row to `out`: 1 where σ(z) > ½ (z > 0), else 0.
   * Allocates nothing; the batch's targets are not read (they may be empty).
   * @throws dptrain::invalid_argument as loss_and_gradient(), or if out.size() != batch.size().
   */
  void predict(ConstVectorRef<Scalar> theta, const batch_type& batch, Eigen::Ref<Vector<Label>> out,
               Workspace& ws) const {
    const Index m = batch.size();
    detail::models::check_call("SparseLogisticRegression", num_parameters(), theta.size(), num_parameters(), inputs_, m,
                               batch.features.cols(), m, ws.scores.size());  // targets are not read
    detail::models::check_prediction_size("SparseLogisticRegression", m, out.size());
    if (m == 0) return;
    Eigen::Map<Vector<Scalar>> z(ws.scores.data(), m);
    scores(theta, batch, z);
    for (Index i = 0; i < m; ++i) out[i] = z[i] > Scalar(0) ? Label{1} : Label{0};
  }

  /**
   * @brief Checks that `all` can be trained on.
   * @throws dptrain::invalid_argument naming the offending value: a feature count other than
   * inputs(), a target count other than the row count, a label other than 0 or 1, or a
   * non-finite stored value.
   */
  void validate(const batch_type& all) const {
    detail::models::check_feature_count("SparseLogisticRegression", inputs_, all.features.cols());
    detail::models::check_target_count("SparseLogisticRegression", all.features.rows(), all.targets.size());
    detail::models::check_labels("SparseLogisticRegression", all.targets, 2);
    detail::sparse::check_finite_features<Scalar>("SparseLogisticRegression", all.features);
  }

  /// θ to start training from: zeros (the loss is convex, so any start works). `seed` is unused.
  [[nodiscard]] Vector<Scalar> init_parameters(std::uint64_t /*seed*/ = 0) const {
    return Vector<Scalar>::Zero(num_parameters());
  }

 private:
  void check(const ConstVectorRef<Scalar>& theta, Index grad_size, const batch_type& batch, Index capacity) const {
    detail::models::check_call("SparseLogisticRegression", num_parameters(), theta.size(), grad_size, inputs_,
                               batch.size(), batch.features.cols(), batch.targets.size(), capacity);
  }

  // z = Xw + b, one pass over the stored entries.
  void scores(const ConstVectorRef<Scalar>& theta, const batch_type& batch, Eigen::Map<Vector<Scalar>>& z) const {
    const Index* outer = batch.features.outerIndexPtr();
    const Index* inner = batch.features.innerIndexPtr();
    const Scalar* values = batch.features.valuePtr();
    for (Index r = 0; r < batch.size(); ++r) {
      Scalar sum(0);
      for (Index k = outer[r]; k < outer[r + 1]; ++k) sum += values[k] * theta[inner[k]];
      z[r] = theta[inputs_] + sum;
    }
  }

  Index inputs_;
};

}  // namespace dptrain
