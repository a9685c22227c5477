// SPDX-License-Identifier: MIT
// subset: a new data set of chosen rows of a dense or sparse one, in the order given.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/byte_dataset.hpp"
#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/data/sparse_dataset.hpp"

namespace dptrain {

namespace detail::row_subset {

// Checks every index before anything is allocated, so a bad one leaves nothing half-built.
inline void check_rows(std::span<const Index> rows, Index size) {
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i] < 0 || rows[i] >= size)
      throw invalid_argument("dptrain::subset: row index " + std::to_string(rows[i]) + " (at position " +
                             std::to_string(i) + ") is out of range for a data set of " + std::to_string(size) +
                             " rows; indices must be in [0, " + std::to_string(size) + ")");
}

}  // namespace detail::row_subset

/**
 * @brief A new data set holding the listed rows of `data` (features and targets), in the order
 * of `rows`.
 *
 * Row i of the result is row rows[i] of `data`, with all its columns and its target. An index
 * may appear more than once (a bootstrap sample repeats rows); no indices give an empty data set
 * with `data`'s column count. The data set is not modified.
 *
 * @tparam S the feature scalar.
 * @tparam T the target type.
 * @param data the data set to take rows from.
 * @param rows 0-based row indices, each in [0, data.size()).
 * @return the rows, copied.
 * @throws dptrain::invalid_argument when an index is out of range (naming it and its position),
 *         or when features and targets differ in number.
 *
 * @code
 * const std::vector<dptrain::Index> rows{4, 0, 7};
 * dptrain::DenseDataset<double> three = dptrain::subset(data, rows);   // rows 4, 0 and 7, in that order
 * @endcode
 */
template <class S, class T>
[[nodiscard]] DenseDataset<S, T> subset(const DenseDataset<S, T>& data, std::span<const Index> rows) {
  data.validate();
  detail::row_subset::check_rows(rows, data.size());
  const auto count = static_cast<Index>(rows.size());
  DenseDataset<S, T> part{RowMatrix<S>(count, data.dim()), Vector<T>(count)};
  for (Index i = 0; i < count; ++i) {
    const Index row = rows[static_cast<std::size_t>(i)];
    part.features.row(i) = data.features.row(row);
    part.targets[i] = data.targets[row];
  }
  return part;
}

/**
 * @brief A new sparse data set holding the listed rows of `data` (their stored entries, column
 * count and targets), in the order of `rows`; compressed, like the input.
 *
 * Same rules as the dense subset(): repeated indices repeat rows, no indices give an empty data
 * set with `data`'s column count. Stored zeros are kept. Memory: the entries of the chosen rows
 * only, allocated once.
 *
 * @throws dptrain::invalid_argument when an index is out of range (naming it and its position),
 *         or when `data` does not validate() (targets of another length, features not compressed).
 *
 * @code
 * auto first_hundred = dptrain::subset(train.data, rows);   // rows: std::vector<dptrain::Index>
 * @endcode
 */
template <class S, class T>
[[nodiscard]] SparseDataset<S, T> subset(const SparseDataset<S, T>& data, std::span<const Index> rows) {
  data.validate();
  detail::row_subset::check_rows(rows, data.size());
  const auto count = static_cast<Index>(rows.size());
  const Index* outer = data.features.outerIndexPtr();
  Index entries = 0;
  for (const Index r : rows) entries += outer[r + 1] - outer[r];

  SparseDataset<S, T> part;
  part.features.resize(count, data.dim());
  part.features.resizeNonZeros(entries);
  part.targets.resize(count);
  const Index* inner = data.features.innerIndexPtr();
  const S* values = data.features.valuePtr();
  Index* part_outer = part.features.outerIndexPtr();
  Index at = 0;
  part_outer[0] = 0;
  for (Index i = 0; i < count; ++i) {
    const Index r = rows[static_cast<std::size_t>(i)];
    std::copy(inner + outer[r], inner + outer[r + 1], part.features.innerIndexPtr() + at);
    std::copy(values + outer[r], values + outer[r + 1], part.features.valuePtr() + at);
    at += outer[r + 1] - outer[r];
    part_outer[i + 1] = at;
    part.targets[i] = data.targets[r];
  }
  return part;
}

/**
 * @brief A new byte data set holding the listed rows of `data` (their bytes and targets, and
 * `data`'s scale and offset), in the order of `rows`. Same rules as the dense subset().
 *
 * @throws dptrain::invalid_argument when an index is out of range (naming it and its position),
 *         or when `data` does not validate().
 */
template <class S, class T>
[[nodiscard]] ByteDataset<S, T> subset(const ByteDataset<S, T>& data, std::span<const Index> rows) {
  data.validate();
  detail::row_subset::check_rows(rows, data.size());
  const auto count = static_cast<Index>(rows.size());
  ByteDataset<S, T> part{ByteMatrix(count, data.dim()), Vector<T>(count), data.scale, data.offset};
  for (Index i = 0; i < count; ++i) {
    const Index row = rows[static_cast<std::size_t>(i)];
    part.bytes.row(i) = data.bytes.row(row);
    part.targets[i] = data.targets[row];
  }
  return part;
}

}  // namespace dptrain
