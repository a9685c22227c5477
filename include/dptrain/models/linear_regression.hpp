// SPDX-License-Identifier: MIT
// LinearRegression: least squares, ℓ = ½ (wᵀx + b − y)², on dense samples.
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
 * @brief Linear least-squares regression with a bias: ŷ = wᵀx + b.
 *
 * Per-sample loss, for a sample x ∈ ℝᵈ with target y ∈ ℝ:
 * @f[ \ell(x, y; \theta) = \tfrac12 (w^\top x + b - y)^2, \qquad
 *     \nabla_w \ell = (w^\top x + b - y)\, x, \quad \nabla_b \ell = w^\top x + b - y. @f]
 *
 * θ layout (length d + 1): `θ[0 … d−1]` = w, `θ[d]` = b.
 *
 * A batch costs two matrix-vector products (Xw and Xᵀr) and one pass over the residuals.
 * All methods are const and thread-safe; concurrent calls need distinct workspaces and
 * gradient buffers.
 *
 * @tparam Scalar float or double.
 *
 * @code
 * dptrain::LinearRegression<double> model(13);            // 13 features
 * dptrain::DenseDataset<double> data{.features = X, .targets = y};
 * model.validate(data.rows(0, data.size()));
 * dptrain::Vector<double> theta = model.init_parameters(); // zeros
 * auto ws = model.make_workspace(256);
 * dptrain::Vector<double> grad = dptrain::Vector<double>::Zero(model.num_parameters());
 * double loss = model.loss_and_gradient(theta, data.rows(0, 256), grad, ws);  // summed
 * @endcode
 */
template <class Scalar>
class LinearRegression {
 public:
  using scalar_type = Scalar;
  using target_type = Scalar;
  using batch_type = DenseBatch<Scalar, target_type>;

  /// Scratch memory for batches of up to `residuals.size()` rows; contents are unspecified.
  struct Workspace {
    Vector<Scalar> residuals;  ///< wᵀx + b − y for each row
  };
  using workspace_type = Workspace;

  /**
   * @param inputs d, the number of features per sample.
   * @throws dptrain::invalid_argument if inputs < 1.
   */
  explicit LinearRegression(Index inputs) : inputs_(inputs) {
    detail::models::require_positive("LinearRegression", "inputs", inputs);
  }

  /// d + 1.
  [[nodiscard]] Index num_parameters() const noexcept { return inputs_ + 1; }
  /// The intercept b = θ[d], for an optimizer's decay_biases = false (DeclaresBiases).
  [[nodiscard]] std::vector<IndexRange> bias_ranges() const { return {{.begin = inputs_, .size = 1}}; }
  /// d, the number of features per sample.
  [[nodiscard]] Index inputs() const noexcept { return inputs_; }
  /// The architecture, for checkpoints: "linear_regression <inputs>".
  [[nodiscard]] std::string shape() const { return detail::models::shape_text("linear_regression", {inputs_}); }

  /// Scratch memory for batches of up to `max_rows` ≥ 0 samples (the only allocation).
  /// @throws dptrain::invalid_argument if max_rows < 0.
  [[nodiscard]] Workspace make_workspace(Index max_rows) const {
    detail::models::check_max_rows("LinearRegression", max_rows);
    return Workspace{Vector<Scalar>(max_rows)};
  }

  /**
   * @brief Adds Σᵢ ∇ℓ(xᵢ, yᵢ; θ) to `grad` and returns Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing.
   * An empty batch returns 0 and leaves `grad` unchanged.
   * @throws dptrain::invalid_argument on a θ or gradient of the wrong length, a batch with the
   * wrong feature count or more rows than the workspace was made for.
   */
  Scalar loss_and_gradient(ConstVectorRef<Scalar> theta, const batch_type& batch, VectorRef<Scalar> grad,
                           Workspace& ws) const {
    const Index m = batch.size();
    check(theta, grad.size(), batch, ws);
    if (m == 0) return Scalar(0);
    Eigen::Map<Vector<Scalar>> r(ws.residuals.data(), m);
    residuals(theta, batch, r);
    grad.head(inputs_).noalias() += batch.features.transpose() * r;
    grad[inputs_] += r.sum();
    return detail::models::squared_loss(r);
  }

  /// 1: sample i's residual is wᵀxᵢ + b − yᵢ (ResidualGradient: the table of Sag and Saga keeps these, not gradients).
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
    detail::models::check_residuals("LinearRegression", m, residual_width(), out.rows(), out.cols());
    if (m == 0) return Scalar(0);
    Eigen::Map<Vector<Scalar>> r(out.data(), m);
    residuals(theta, batch, r);
    return detail::models::squared_loss(r);
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
    detail::models::check_call("LinearRegression", num_parameters(), num_parameters(), grad.size(), inputs_, m,
                               batch.features.cols(), m, ws.residuals.size());
    detail::models::check_residuals("LinearRegression", m, residual_width(), residuals.rows(), residuals.cols());
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
    Eigen::Map<Vector<Scalar>> r(ws.residuals.data(), m);
    residuals(theta, batch, r);
    return detail::models::squared_loss(r);
  }

  /**
   * @brief Writes the predicted value ŷᵢ = wᵀxᵢ + b of each row into `out` (one entry per row).
   * Allocates nothing; the batch's targets are not read. The workspace is not used (it is taken
   * so that every model's predict() has the same signature).
   * @throws dptrain::invalid_argument on a θ of the wrong length, a batch with the wrong
   * feature count or more rows than the workspace was made for, or an `out` of another length.
   */
  void predict(ConstVectorRef<Scalar> theta, const batch_type& batch, Eigen::Ref<Vector<target_type>> out,
               Workspace& ws) const {
    check_predict(theta, batch, out.size(), ws);
    if (batch.size() == 0) return;
    const Eigen::Map<const Vector<Scalar>> w(theta.data(), inputs_);
    out.setConstant(theta[inputs_]);
    out.noalias() += batch.features * w;
  }

  /**
   * @brief Checks that `all` can be trained on.
   * @throws dptrain::invalid_argument naming the offending value: a feature count other than
   * inputs(), a target count other than the row count, or a non-finite feature or target.
   */
  void validate(const batch_type& all) const {
    detail::models::check_feature_count("LinearRegression", inputs_, all.features.cols());
    detail::models::check_target_count("LinearRegression", all.features.rows(), all.targets.size());
    detail::models::check_finite_features<Scalar>("LinearRegression", all.features);
    detail::models::check_finite_targets<Scalar>("LinearRegression", all.targets);
  }

  /// θ to start training from: zeros (the loss is convex, so any start works). `seed` is unused.
  [[nodiscard]] Vector<Scalar> init_parameters(std::uint64_t /*seed*/ = 0) const {
    return Vector<Scalar>::Zero(num_parameters());
  }

 private:
  void check(const ConstVectorRef<Scalar>& theta, Index grad_size, const batch_type& batch, const Workspace& ws) const {
    detail::models::check_call("LinearRegression", num_parameters(), theta.size(), grad_size, inputs_, batch.size(),
                               batch.features.cols(), batch.targets.size(), ws.residuals.size());
  }

  void check_predict(const ConstVectorRef<Scalar>& theta, const batch_type& batch, Index out_size,
                     const Workspace& ws) const {
    detail::models::check_call("LinearRegression", num_parameters(), theta.size(), num_parameters(), inputs_,
                               batch.size(), batch.features.cols(), batch.size(), ws.residuals.size());
    detail::models::check_prediction_size("LinearRegression", batch.size(), out_size);
  }

  // r = Xw + b − y
  void residuals(const ConstVectorRef<Scalar>& theta, const batch_type& batch, Eigen::Map<Vector<Scalar>>& r) const {
    const Eigen::Map<const Vector<Scalar>> w(theta.data(), inputs_);
    r = -batch.targets;
    r.array() += theta[inputs_];
    r.noalias() += batch.features * w;
  }

  Index inputs_;
};

}  // namespace dptrain
