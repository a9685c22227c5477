// SPDX-License-Identifier: MIT
// MinMaxScaler: maps each feature column to [0, 1] with the training set's minimum and range.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Maps each feature column to [0, 1]: x ↦ (x − min_j) / scale_j with scale_j = max_j − min_j.
 *
 * fit() finds each column's minimum and maximum (in double); a constant column gets scale 1, so
 * it maps to 0. Fit on the training set only, then transform the training set and the validation
 * and test sets with the same statistics; values of those sets outside the training range map
 * outside [0, 1] (they are not clipped). Thread-safe to call transform() on different matrices
 * at once.
 *
 * @tparam Scalar float or double: the feature type.
 *
 * @code
 * const auto scaler = dptrain::MinMaxScaler<float>::fit(train.features);
 * scaler.transform(train.features);       // each column now spans [0, 1]
 * scaler.transform(validation.features);  // with the training set's minimum and range
 * @endcode
 */
template <class Scalar>
class MinMaxScaler {
 public:
  /**
   * @brief Per-column minimum and range of `features`.
   * @param features one sample per row; at least one row, all values finite.
   * @return the fitted scaler.
   * @throws dptrain::invalid_argument when `features` has no rows or a value is not finite.
   */
  [[nodiscard]] static MinMaxScaler fit(const RowMatrix<Scalar>& features) {
    const Index n = features.rows(), d = features.cols();
    if (n == 0) throw invalid_argument("dptrain::MinMaxScaler::fit: features must have at least 1 row, got 0");
    Vector<double> low(d), high(d);
    for (Index j = 0; j < d; ++j) low[j] = high[j] = static_cast<double>(features(0, j));
    for (Index i = 0; i < n; ++i) {
      for (Index j = 0; j < d; ++j) {
        const auto x = static_cast<double>(features(i, j));
        if (!std::isfinite(x))
          throw invalid_argument("dptrain::MinMaxScaler::fit: the value in row " + std::to_string(i) + ", column " +
                                 std::to_string(j) + " is not finite");
        low[j] = std::min(low[j], x);
        high[j] = std::max(high[j], x);
      }
    }
    Vector<double> scale = high - low;
    for (Index j = 0; j < d; ++j)
      if (scale[j] == 0.0) scale[j] = 1.0;
    return MinMaxScaler(std::move(low), std::move(scale));
  }

  /**
   * @brief Replaces each value x in column j by (x − min()[j]) / scale()[j], computed in double.
   * @param features one sample per row, as many columns as the fitted matrix.
   * @throws dptrain::invalid_argument on a column-count mismatch.
   */
  void transform(RowMatrix<Scalar>& features) const {
    if (features.cols() != min_.size())
      throw invalid_argument("dptrain::MinMaxScaler::transform: fitted on " + std::to_string(min_.size()) +
                             " columns, got " + std::to_string(features.cols()));
    for (Index i = 0; i < features.rows(); ++i)
      for (Index j = 0; j < features.cols(); ++j)
        features(i, j) = static_cast<Scalar>((static_cast<double>(features(i, j)) - min_[j]) / scale_[j]);
  }

  /// @brief The fitted per-column minima. @return one minimum per column.
  [[nodiscard]] const Vector<double>& min() const noexcept { return min_; }
  /// @brief The fitted per-column ranges, max − min (1 for constant columns). @return one per column.
  [[nodiscard]] const Vector<double>& scale() const noexcept { return scale_; }

 private:
  MinMaxScaler(Vector<double> min, Vector<double> scale) : min_(std::move(min)), scale_(std::move(scale)) {}
  Vector<double> min_, scale_;
};

}  // namespace dptrain
