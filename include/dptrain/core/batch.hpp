// SPDX-License-Identifier: MIT
// The micro-batch views that data sets hand to models: DenseBatch, SparseBatch and their CSR matrix type.
#pragma once

#include <Eigen/SparseCore>

#include <span>

#include "dptrain/core/types.hpp"

namespace dptrain {

/// Compressed row-major sparse matrix (CSR) with `Index` indices: one sample per row.
template <class Scalar>
using SparseRowMatrix = Eigen::SparseMatrix<Scalar, Eigen::RowMajor, Index>;

/**
 * @brief A micro-batch of dense samples: a zero-copy view of rows and their targets.
 *
 * DenseDataset's rows() and gather() return it; the dense models take it.
 *
 * @tparam Scalar float or double.
 * @tparam Target the target type: `Scalar` for regression, `Label` for classification.
 *
 * @code
 * dptrain::DenseBatch<double, double> batch{X.topRows(64), y.head(64)};  // X row-major
 * double loss = model.loss(theta, batch, ws);
 * @endcode
 */
template <class Scalar, class Target>
struct DenseBatch {
  Eigen::Ref<const RowMatrix<Scalar>> features;  ///< size() × dim, one sample per row
  Eigen::Ref<const Vector<Target>> targets;      ///< size() targets

  /// The number of samples (rows).
  [[nodiscard]] Index size() const noexcept { return features.rows(); }
};

/**
 * @brief A micro-batch of sparse samples: a zero-copy CSR view of rows and their targets.
 *
 * `features` maps compressed storage held elsewhere (the data set, or a gather() buffer). Its
 * outer index array may not start at 0: a rows() view points into the data set's own arrays, so
 * row r's entries are `innerIndexPtr()[k]`, `valuePtr()[k]` for k in
 * [`outerIndexPtr()[r]`, `outerIndexPtr()[r + 1]`). Everything that walks rows (InnerIterator,
 * products, coeff(), toDense(), nonZeros()) handles that; only `coeffs()`, which assumes the
 * values start at valuePtr()[0], does not: use `valuePtr() + outerIndexPtr()[0]` instead.
 *
 * SparseDataset's rows() and gather() return it; the sparse models take it.
 *
 * @tparam Scalar float or double.
 * @tparam Target the target type: `Scalar` for regression, `Label` for classification.
 *
 * @code
 * dptrain::SparseRowMatrix<float> X = ...;   // compressed
 * dptrain::SparseBatch<float, dptrain::Label> batch{Eigen::Map<const dptrain::SparseRowMatrix<float>>(
 *     X.rows(), X.cols(), X.nonZeros(), X.outerIndexPtr(), X.innerIndexPtr(), X.valuePtr()), labels};
 * @endcode
 */
template <class Scalar, class Target>
struct SparseBatch {
  Eigen::Map<const SparseRowMatrix<Scalar>> features;  ///< size() × dim, one sample per row
  Eigen::Ref<const Vector<Target>> targets;            ///< size() targets

  /// The number of samples (rows).
  [[nodiscard]] Index size() const noexcept { return features.rows(); }
};

/**
 * @brief The data set rows of a micro-batch, in its row order: ids[i] is the row that batch row i
 * was read from (the rows of the data set this process was given). What a Worker state that
 * takes them (IndexedWorkerState) is handed with each micro-batch: a list (a shuffled epoch's
 * order) or a run of consecutive rows. A view; it allocates nothing.
 */
struct SampleIds {
  std::span<const Index> list;  ///< the rows, or empty for the run first, first + 1, …
  Index first = 0;              ///< the run's first row (when `list` is empty)
  Index count = 0;              ///< the micro-batch's rows

  [[nodiscard]] Index size() const noexcept { return count; }
  [[nodiscard]] Index operator[](Index i) const noexcept {
    return list.empty() ? first + i : list[static_cast<std::size_t>(i)];
  }
};

}  // namespace dptrain
