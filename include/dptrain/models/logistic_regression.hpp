// SPDX-License-Identifier: MIT
// LogisticRegression: binary classification with the logistic (cross-entropy) loss on dense samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/model_support.hpp"

namespace dptrain {

/**
 * @brief Binary logistic regression: P(y = 1 | x) = σ(wᵀx + b), labels y ∈ {0, 1}.
 *
 * Per-sample loss (the negative log-likelihood), with z = wᵀx + b:
 * @f[ \ell(x, y; \theta) = \log(1 + e^{z}) - y\,z, \qquad
 *     \nabla_w \ell = (\sigma(z) - y)\, x, \quad \nabla_b \ell = \sigma(z) - y. @f]
 * log(1 + eᶻ) is evaluated as max(z, 0) + log1p(e^{−|z|}) and σ(z) from the same e^{−|z|},
 * so neither overflows for any finite z.
 *
 * θ layout (length d + 1): `θ[0 … d−1]` = w, `θ[d]` = b.
 *
 * A batch costs two matrix-vector products (Xw and Xᵀr) and one pass over the rows.
 * All methods are const and thread-safe; concurrent calls need distinct workspaces and
 * gradient buffers.
 *
 * @tparam Scalar float or double.
 *
 * @code
 * dptrain::LogisticRegression<float> model(2);               // 2 features
 * dptrain::DenseDataset<float, dptrain::Label> data{.features = X, .targets = labels};  // labels 0/1
 * model.validate(data.rows(0, data.size()));
 * dptrain::Vector<float> theta = model.init_parameters();    // zeros
 * auto ws = model.make_workspace(64);
 * float loss = model.loss(theta, data.rows(0, 64), ws);     // 64 · log 2 at θ = 0
 * @endcode
 */
template <class Scalar>
class LogisticRegression {
 public:
  using scalar_type = Scalar;
  using target_type = Label;
  using batch_type = DenseBatch<Scalar, target_type>;

  /// Scratch memory for batches of up to `scores.size()` rows; contents are unspecified.
  struct Workspace {
    Vector<Scalar> scores;  ///< z for each row, then σ(z) − y
  };
  using workspace_type = Workspace;

  /**
   * @param inputs d, the number of features per sample.
   * @throws dptrain::invalid_argument if inputs < 1.
   */
  explicit LogisticRegression(Index inputs) : inputs_(inputs) {
    detail::models::require_positive("LogisticRegression", "inputs", inputs);
  }

  /// d + 1.
  [[nodiscard]] Index num_parameters() const noexcept { return inputs_ + 1; }
  /// The intercept b = θ[d], for an optimizer's decay_biases = false (DeclaresBiases).
  [[nodiscard]] std::vector<IndexRange> bias_ranges() const { return {{.begin = inputs_, .size = 1}}; }
  /// d, the number of features per sample.
  [[nodiscard]] Index inputs() const noexcept { return inputs_; }
  /// The architecture, for checkpoints: "logistic_regression <inputs>".
  [[nodiscard]] std::string shape() const { return detail::models::shape_text("logistic_regression", {inputs_}); }

  /// Scratch memory for batches of up to `max_rows` ≥ 0 samples (the only allocation).
  /// @throws dptrain::invalid_argument if max_rows < 0.
  [[nodiscard]] Workspace make_workspace(Index max_rows) const {
    detail::models::check_max_rows("LogisticRegression", max_rows);
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
    check(theta, grad.size(), batch, ws);
    if (m == 0) return Scalar(0);
    Eigen::Map<Vector<Scalar>> z(ws.scores.data(), m);
    scores(theta, batch, z);
    const Scalar loss = detail::models::logistic_loss<true, Scalar>(z, batch.targets);  // z is now σ(z) − y
    grad.head(inputs_).noalias() += batch.features.transpose() * z;
    grad[inputs_] += z.sum();
    return loss;
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
    check(theta, num_parameters(), batch, ws);
    detail::models::check_residuals("LogisticRegression", m, residual_width(), out.rows(), out.cols());
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
    detail::models::check_call("LogisticRegression", num_parameters(), num_parameters(), grad.size(), inputs_, m,
                               batch.features.cols(), m, ws.scores.size());
    detail::models::check_residuals("LogisticRegression", m, residual_width(), residuals.rows(), residuals.cols());
    if (m == 0) return;
    const Eigen::Map<const Vector<Scalar>> r(residuals.data(), m);
    grad.head(inputs_).noalias() += batch.features.transpose() * r;
    grad[inputs_] += r.sum();
  }

  /// Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing. @throws as loss_and_gradient().
  [[nodiscard]] Scalar loss(ConstVectorRef<Scalar> theta, const batch_type& batch, Workspace& ws) const {
    const Index m = batch.size();
    check(theta, num_parameters(), batch, ws);
    if (m == 0) return Scalar(0);
    Eigen::Map<Vector<Scalar>> z(ws.scores.data(), m);
    scores(theta, batch, z);
    return detail::models::logistic_loss<false, Scalar>(z, batch.targets);
  }

  /**
   * @brief Writes the predicted class of each row into `out`: 1 where z = wᵀx + b > 0
   * (σ(z) > ½), else 0. Allocates nothing; the batch's targets are not read.
   * @throws dptrain::invalid_argument on a θ of the wrong length, a batch with the wrong
   * feature count or more rows than the workspace was made for, or an `out` of another length.
   */
  void predict(ConstVectorRef<Scalar> theta, const batch_type& batch, Eigen::Ref<Vector<target_type>> out,
               Workspace& ws) const {
    const Index m = batch.size();
    detail::models::check_call("LogisticRegression", num_parameters(), theta.size(), num_parameters(), inputs_, m,
                               batch.features.cols(), m, ws.scores.size());
    detail::models::check_prediction_size("LogisticRegression", m, out.size());
    if (m == 0) return;
    Eigen::Map<Vector<Scalar>> z(ws.scores.data(), m);
    scores(theta, batch, z);
    for (Index i = 0; i < m; ++i) out[i] = z[i] > Scalar(0) ? Label(1) : Label(0);
  }

  /**
   * @brief Checks that `all` can be trained on.
   * @throws dptrain::invalid_argument naming the offending value: a feature count other than
   * inputs(), a target count other than the row count, a label other than 0 or 1, or a
   * non-finite feature.
   */
  void validate(const batch_type& all) const {
    detail::models::check_feature_count("LogisticRegression", inputs_, all.features.cols());
    detail::models::check_target_count("LogisticRegression", all.features.rows(), all.targets.size());
    detail::models::check_labels("LogisticRegression", all.targets, 2);
    detail::models::check_finite_features<Scalar>("LogisticRegression", all.features);
  }

  /// θ to start training from: zeros (the loss is convex, so any start works). `seed` is unused.
  [[nodiscard]] Vector<Scalar> init_parameters(std::uint64_t /*seed*/ = 0) const {
    return Vector<Scalar>::Zero(num_parameters());
  }

 private:
  void check(const ConstVectorRef<Scalar>& theta, Index grad_size, const batch_type& batch, const Workspace& ws) const {
    detail::models::check_call("LogisticRegression", num_parameters(), theta.size(), grad_size, inputs_, batch.size(),
                               batch.features.cols(), batch.targets.size(), ws.scores.size());
  }

  // z = Xw + b
  void scores(const ConstVectorRef<Scalar>& theta, const batch_type& batch, Eigen::Map<Vector<Scalar>>& z) const {
    const Eigen::Map<const Vector<Scalar>> w(theta.data(), inputs_);
    z.setConstant(theta[inputs_]);
    z.noalias() += batch.features * w;
  }

  Index inputs_;
};

}  // namespace dptrain
