// SPDX-License-Identifier: MIT
// Standardizer: per-column z-scores, (x − mean) / standard deviation, fitted on a training set.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Maps each feature column to mean 0 and standard deviation 1: x ↦ (x − mean_j) / scale_j.
 *
 * fit() computes each column's mean and population standard deviation (divided by n, as
 * scikit-learn's StandardScaler does) in double, two passes. A constant column gets scale 1 and
 * its value as the mean, so it maps to exactly 0. Fit on the training set only, then transform
 * the training set and the validation and test sets with the same statistics: fitting on data
 * the model is evaluated on leaks it into training. Thread-safe to call transform() on
 * different matrices at once; fit() returns a new object.
 *
 * @tparam Scalar float or double: the feature type.
 *
 * @code
 * auto [train, validation] = dptrain::train_validation_split(data, 0.2, 7);
 * const auto scaler = dptrain::Standardizer<double>::fit(train.features);
 * scaler.transform(train.features);
 * scaler.transform(validation.features);  // the training set's mean and scale
 * @endcode
 */
template <class Scalar>
class Standardizer {
 public:
  /**
   * @brief Per-column statistics of `features`.
   * @param features one sample per row; at least one row, all values finite.
   * @return the fitted standardizer.
   * @throws dptrain::invalid_argument when `features` has no rows or a value is not finite.
   */
  [[nodiscard]] static Standardizer fit(const RowMatrix<Scalar>& features) {
    const Index n = features.rows(), d = features.cols();
    if (n == 0) throw invalid_argument("dptrain::Standardizer::fit: features must have at least 1 row, got 0");
    Vector<double> mean = Vector<double>::Zero(d), scale = Vector<double>::Zero(d);
    Vector<double> low(d), high(d);
    for (Index j = 0; j < d; ++j) low[j] = high[j] = static_cast<double>(features(0, j));
    for (Index i = 0; i < n; ++i) {
      for (Index j = 0; j < d; ++j) {
        const auto x = static_cast<double>(features(i, j));
        if (!std::isfinite(x))
          throw invalid_argument("dptrain::Standardizer::fit: the value in row " + std::to_string(i) + ", column " +
                                 std::to_string(j) + " is not finite");
        mean[j] += x;
        low[j] = std::min(low[j], x);
        high[j] = std::max(high[j], x);
      }
    }
    mean /= static_cast<double>(n);
    for (Index i = 0; i < n; ++i) {
      for (Index j = 0; j < d; ++j) {
        const double deviation = static_cast<double>(features(i, j)) - mean[j];
        scale[j] += deviation * deviation;
      }
    }
    for (Index j = 0; j < d; ++j) {
      // A constant column: its rounded mean may differ from the value in the last bit, which
      // the deviations would blow up to ±1; take the value itself and scale 1 so it maps to 0.
      if (low[j] == high[j]) {
        mean[j] = low[j];
        scale[j] = 1.0;
      } else {
        scale[j] = std::sqrt(scale[j] / static_cast<double>(n));
      }
    }
    return Standardizer(std::move(mean), std::move(scale));
  }

  /**
   * @brief Replaces each value x in column j by (x − mean()[j]) / scale()[j], computed in double.
   * @param features one sample per row, as many columns as the fitted matrix.
   * @throws dptrain::invalid_argument on a column-count mismatch.
   */
  void transform(RowMatrix<Scalar>& features) const {
    if (features.cols() != mean_.size())
      throw invalid_argument("dptrain::Standardizer::transform: fitted on " + std::to_string(mean_.size()) +
                             " columns, got " + std::to_string(features.cols()));
    for (Index i = 0; i < features.rows(); ++i)
      for (Index j = 0; j < features.cols(); ++j)
        features(i, j) = static_cast<Scalar>((static_cast<double>(features(i, j)) - mean_[j]) / scale_[j]);
  }

  /// @brief The fitted per-column means. @return one mean per column.
  [[nodiscard]] const Vector<double>& mean() const noexcept { return mean_; }
  /// @brief The fitted per-column standard deviations (1 for constant columns). @return one per column.
  [[nodiscard]] const Vector<double>& scale() const noexcept { return scale_; }

 private:
  Standardizer(Vector<double> mean, Vector<double> scale) : mean_(std::move(mean)), scale_(std::move(scale)) {}
  Vector<double> mean_, scale_;
};

}  // namespace dptrain
