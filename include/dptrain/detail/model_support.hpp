// SPDX-License-Identifier: MIT
// Internals shared by the models: argument and data checks, and the losses (squared, logistic, softmax).
#pragma once

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain::detail::models {

/// Shortest decimal that round-trips `value` ("0.5", "nan", "-inf"), for error messages.
[[nodiscard]] inline std::string model_value_text(double value) {
  char buffer[64];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, r.ptr);
}

/// A model's shape() text: "<name> <size>-<size>-…", e.g. "mlp 784-256-10".
[[nodiscard]] inline std::string shape_text(const char* name, const std::vector<Index>& sizes) {
  std::string text = name;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    text += i == 0 ? ' ' : '-';
    text += std::to_string(sizes[i]);
  }
  return text;
}

/// Throws unless `value` ≥ 1: "dptrain::<model>: <what> must be at least 1, got <value>".
inline void require_positive(const char* model, const char* what, Index value) {
  if (value < 1)
    throw invalid_argument(std::string("dptrain::") + model + ": " + what + " must be at least 1, got " +
                           std::to_string(value));
}

/// Throws if `max_rows` < 0 (0 is allowed: a workspace for empty batches only).
inline void check_max_rows(const char* model, Index max_rows) {
  if (max_rows < 0)
    throw invalid_argument(std::string("dptrain::") + model + "::make_workspace: max_rows must be >= 0, got " +
                           std::to_string(max_rows));
}

/// Throws unless the data have `expected` features per sample.
inline void check_feature_count(const char* model, Index expected, Index actual) {
  if (actual != expected)
    throw invalid_argument(std::string("dptrain::") + model + ": expects " + std::to_string(expected) +
                           " features per sample, the data have " + std::to_string(actual));
}

/// Throws unless there is one target per feature row.
inline void check_target_count(const char* model, Index rows, Index targets) {
  if (rows != targets)
    throw invalid_argument(std::string("dptrain::") + model + ": the data have " + std::to_string(rows) +
                           " feature rows but " + std::to_string(targets) + " targets");
}

/// Throws at the first non-finite feature, naming its row and column.
template <class Scalar>
void check_finite_features(const char* model, const Eigen::Ref<const RowMatrix<Scalar>>& features) {
  // x·0 is 0 for a finite x and NaN otherwise, so one vectorized sum finds any non-finite value
  // (Eigen's allFinite() runs scalar: 190 ms against 5 ms for Fashion-MNIST's 47 M pixels).
  if (std::isfinite((features.array() * Scalar(0)).sum())) return;
  for (Index i = 0; i < features.rows(); ++i)
    for (Index j = 0; j < features.cols(); ++j)
      if (!std::isfinite(features(i, j)))
        throw invalid_argument(std::string("dptrain::") + model + ": feature " + std::to_string(j) + " of row " +
                               std::to_string(i) + " is not finite (" +
                               model_value_text(static_cast<double>(features(i, j))) + ")");
}

/// Throws at the first non-finite regression target, naming its row.
template <class Scalar>
void check_finite_targets(const char* model, const Eigen::Ref<const Vector<Scalar>>& targets) {
  for (Index i = 0; i < targets.size(); ++i)
    if (!std::isfinite(targets[i]))
      throw invalid_argument(std::string("dptrain::") + model + ": target " +
                             model_value_text(static_cast<double>(targets[i])) + " in row " + std::to_string(i) +
                             " is not finite");
}

/// Throws at the first label outside [0, classes), naming its row, its value and the range.
inline void check_labels(const char* model, const Eigen::Ref<const Vector<Label>>& labels, Index classes) {
  for (Index i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      throw invalid_argument(std::string("dptrain::") + model + ": label " + std::to_string(labels[i]) + " in row " +
                             std::to_string(i) + " is out of range, expected 0 <= label < " + std::to_string(classes));
}

/**
 * @brief The O(1) checks at the top of every loss evaluation: θ and the gradient have the
 * model's length, and a non-empty batch has the model's feature count, one target per row and
 * at most as many rows as the workspace was made for. Allocates only when it throws.
 */
/// Residuals for a batch of `rows` samples must be rows × width (ResidualGradient).
inline void check_residuals(const char* model, Index rows, Index width, Index got_rows, Index got_cols) {
  if (got_rows != rows || got_cols != width)
    throw invalid_argument(std::string("dptrain::") + model + ": the residuals are " + std::to_string(got_rows) +
                           " x " + std::to_string(got_cols) + ", the batch needs " + std::to_string(rows) + " x " +
                           std::to_string(width));
}

inline void check_call(const char* model, Index parameters, Index theta_size, Index grad_size, Index inputs, Index rows,
                       Index cols, Index targets, Index capacity) {
  if (theta_size != parameters)
    throw invalid_argument(std::string("dptrain::") + model + ": the model has " + std::to_string(parameters) +
                           " parameters, theta has " + std::to_string(theta_size));
  if (grad_size != parameters)
    throw invalid_argument(std::string("dptrain::") + model + ": the model has " + std::to_string(parameters) +
                           " parameters, the gradient has " + std::to_string(grad_size));
  if (rows == 0) return;
  check_feature_count(model, inputs, cols);
  check_target_count(model, rows, targets);
  if (rows > capacity)
    throw invalid_argument(std::string("dptrain::") + model + ": the batch has " + std::to_string(rows) +
                           " rows, the workspace was made for at most " + std::to_string(capacity) +
                           " (make_workspace(max_rows))");
}

/// Throws unless predict()'s output has one entry per row of the batch.
inline void check_prediction_size(const char* model, Index rows, Index out) {
  if (rows != out)
    throw invalid_argument(std::string("dptrain::") + model + "::predict: the batch has " + std::to_string(rows) +
                           " rows but the output has " + std::to_string(out) + " entries");
}

/// out[i] = the column of the largest score in row i (the first one on ties).
template <class Scalar>
void argmax_rows(const Eigen::Map<RowMatrix<Scalar>>& scores, Eigen::Ref<Vector<Label>> out) {
  for (Index i = 0; i < scores.rows(); ++i) {
    Index best = 0;
    for (Index c = 1; c < scores.cols(); ++c)
      if (scores(i, c) > scores(i, best)) best = c;
    out[i] = static_cast<Label>(best);
  }
}

/**
 * @brief The squared loss of residuals r = ŷ − y, summed: Σᵢ ½ rᵢ².
 *
 * Its derivative ∂ℓ/∂ŷᵢ is rᵢ itself, so the caller uses the residuals unchanged as the weights
 * of the gradient's product (∇w = Xᵀr).
 */
template <class Derived>
typename Derived::Scalar squared_loss(const Eigen::MatrixBase<Derived>& residuals) {
  return typename Derived::Scalar(0.5) * residuals.squaredNorm();
}

/**
 * @brief The logistic loss of each score zᵢ against its label yᵢ ∈ {0, 1}, summed.
 *
 * Per row: ℓ = log(1 + e^z) − y·z, evaluated as max(z, 0) + log1p(e^{−|z|}) − y·z so that no
 * exponential overflows for any finite z. With `Gradient`, each zᵢ is overwritten by
 * ∂ℓ/∂z = σ(zᵢ) − yᵢ, with σ taken from the same e^{−|z|}. Labels must be 0 or 1 (validate()
 * checks them). The dense and sparse logistic models call it on their scores z = Xw + b.
 */
template <bool Gradient, class Scalar>
Scalar logistic_loss(Eigen::Map<Vector<Scalar>> z, const Eigen::Ref<const Vector<Label>>& labels) {
  using std::abs;
  using std::exp;
  using std::log1p;
  Scalar loss(0);
  for (Index i = 0; i < z.size(); ++i) {
    const Scalar e = exp(-abs(z[i]));  // e^{−|z|} ∈ (0, 1]
    const auto y = static_cast<Scalar>(labels[i]);
    loss += (z[i] > Scalar(0) ? z[i] : Scalar(0)) + log1p(e) - y * z[i];
    if constexpr (Gradient) z[i] = (z[i] >= Scalar(0) ? Scalar(1) / (Scalar(1) + e) : e / (Scalar(1) + e)) - y;
  }
  return loss;
}

/**
 * @brief Softmax cross-entropy of each row of `scores` against its label, summed.
 *
 * Per row: ℓ = log Σ_c e^{z_c − max} − (z_y − max), so no exponential overflows. `scores` (a
 * contiguous block) is overwritten: with `Gradient`, each row by ∂ℓ/∂z = softmax(z) − onehot(y);
 * otherwise by unnormalised probabilities. Labels must be in range (validate() checks them).
 * The exponentials run as one vectorized pass over the whole block: rows of k = 10 are
 * narrower than an AVX-512 vector, and row by row they ran scalar. A caller that knows k at
 * compile time passes it as K: the per-row max, sum and scaling then unroll.
 */
template <bool Gradient, class Scalar, int K = Eigen::Dynamic>
Scalar softmax_cross_entropy(Eigen::Map<Eigen::Matrix<Scalar, Eigen::Dynamic, K, Eigen::RowMajor>> scores,
                             const Eigen::Ref<const Vector<Label>>& labels) {
  using std::log;
  Scalar loss(0);
  for (Index i = 0; i < scores.rows(); ++i) {
    scores.row(i).array() -= scores.row(i).maxCoeff();
    loss -= scores(i, labels[i]);
  }
  auto all = Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>(scores.data(), scores.size());
  all = all.exp();
  for (Index i = 0; i < scores.rows(); ++i) {
    const Scalar sum = scores.row(i).sum();
    loss += log(sum);
    if constexpr (Gradient) {
      scores.row(i) *= Scalar(1) / sum;
      scores(i, labels[i]) -= Scalar(1);
    }
  }
  return loss;
}

}  // namespace dptrain::detail::models
