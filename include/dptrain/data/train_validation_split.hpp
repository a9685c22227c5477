// SPDX-License-Identifier: MIT
// train_validation_split: a seeded shuffle of a data set into training and validation parts.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/dense_dataset.hpp"

namespace dptrain {

namespace detail::split {

// A uniform draw from [0, bound] by rejection: std::uniform_int_distribution's algorithm
// differs between standard libraries, std::mt19937_64's output does not.
[[nodiscard]] inline std::uint64_t draw_at_most(std::mt19937_64& engine, std::uint64_t bound) {
  if (bound == std::numeric_limits<std::uint64_t>::max()) return engine();
  const std::uint64_t range = bound + 1;
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % range;
  std::uint64_t x = engine();
  while (x >= limit) x = engine();
  return x % range;
}

template <class S, class T>
[[nodiscard]] DenseDataset<S, T> take_rows(const DenseDataset<S, T>& data, const std::vector<Index>& order,
                                           std::size_t begin, std::size_t end) {
  const auto count = static_cast<Index>(end - begin);
  DenseDataset<S, T> part{RowMatrix<S>(count, data.dim()), Vector<T>(count)};
  for (Index i = 0; i < count; ++i) {
    const Index row = order[begin + static_cast<std::size_t>(i)];
    part.features.row(i) = data.features.row(row);
    part.targets[i] = data.targets[row];
  }
  return part;
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

  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index{0});
  std::mt19937_64 engine(seed);
  for (std::size_t i = order.size() - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<std::size_t>(detail::split::draw_at_most(engine, i))]);

  const auto train_rows = static_cast<std::size_t>(n - validation);
  return {detail::split::take_rows(data, order, 0, train_rows),
          detail::split::take_rows(data, order, train_rows, order.size())};
}

}  // namespace dptrain
