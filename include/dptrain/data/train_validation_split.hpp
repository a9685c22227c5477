// SPDX-License-Identifier: MIT
// train_validation_split: a seeded shuffle of a data set into training and validation parts.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/byte_dataset.hpp"
#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/data/sparse_dataset.hpp"
#include "dptrain/data/subset.hpp"
#include "dptrain/detail/permutation.hpp"

namespace dptrain {

namespace detail::split {

// The split of either kind of data set: the same rows for the same seed and row count.
template <class Data>
[[nodiscard]] std::pair<Data, Data> split_rows(const Data& data, double validation_fraction, std::uint64_t seed) {
  data.validate();
  if (!(validation_fraction > 0.0 && validation_fraction < 1.0))
    throw invalid_argument("dptrain::train_validation_split: validation_fraction must be in (0, 1), got " +
                           std::to_string(validation_fraction));
  const Index n = data.size();
  const auto validation = static_cast<Index>(std::llround(validation_fraction * static_cast<double>(n)));
  if (validation == 0 || validation == n)
    throw invalid_argument("dptrain::train_validation_split: " + std::to_string(n) + " rows with fraction " +
                           std::to_string(validation_fraction) + " leave the " +
                           (validation == 0 ? "validation" : "training") + " set empty");

  const std::vector<Index> order = seeded_permutation(n, seed);
  const std::span<const Index> rows(order);
  const auto train_rows = static_cast<std::size_t>(n - validation);
  return {subset(data, rows.first(train_rows)), subset(data, rows.subspan(train_rows))};
}

}  // namespace detail::split

/**
 * @brief Splits a data set into a training and a validation set after a seeded shuffle.
 *
 * The rows are permuted by a Fisher–Yates shuffle driven by std::mt19937_64(seed) (with its own
 * bounded draws, so the same seed gives the same split with any standard library); the last
 * round(validation_fraction · n) rows of the permutation form the validation set, the rest, in
 * permuted order, the training set. Every row lands in exactly one of them. The data set is not
 * modified.
 *
 * @tparam S the feature scalar.
 * @tparam T the target type.
 * @param data                the data set to split (n rows).
 * @param validation_fraction the share of rows for validation, in (0, 1).
 * @param seed                seed of the shuffle.
 * @return {training set, validation set}.
 * @throws dptrain::invalid_argument when the fraction is not in (0, 1) (NaN included), when the
 *         rounded split leaves either set empty, or when features and targets differ in number.
 *
 * @code
 * auto [train, validation] = dptrain::train_validation_split(data, 0.2, 42);
 * @endcode
 */
template <class S, class T>
[[nodiscard]] std::pair<DenseDataset<S, T>, DenseDataset<S, T>> train_validation_split(const DenseDataset<S, T>& data,
                                                                                       double validation_fraction,
                                                                                       std::uint64_t seed) {
  return detail::split::split_rows(data, validation_fraction, seed);
}

/**
 * @brief Splits a sparse data set into a training and a validation set after a seeded shuffle:
 * for the same seed and row count, the same rows as the dense train_validation_split(), in the
 * same order.
 *
 * @throws dptrain::invalid_argument as the dense one, and when `features` is not compressed.
 *
 * @code
 * auto [train, validation] = dptrain::train_validation_split(libsvm.data, 0.2, 42);
 * @endcode
 */
template <class S, class T>
[[nodiscard]] std::pair<SparseDataset<S, T>, SparseDataset<S, T>> train_validation_split(
    const SparseDataset<S, T>& data, double validation_fraction, std::uint64_t seed) {
  return detail::split::split_rows(data, validation_fraction, seed);
}

/**
 * @brief Splits a byte data set into a training and a validation set after a seeded shuffle:
 * the same rows, in the same order, as the dense train_validation_split() for the same seed and
 * row count.
 *
 * @throws dptrain::invalid_argument as the dense one, and when `data` does not validate().
 */
template <class S, class T>
[[nodiscard]] std::pair<ByteDataset<S, T>, ByteDataset<S, T>> train_validation_split(const ByteDataset<S, T>& data,
                                                                                     double validation_fraction,
                                                                                     std::uint64_t seed) {
  return detail::split::split_rows(data, validation_fraction, seed);
}

}  // namespace dptrain
