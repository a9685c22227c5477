// SPDX-License-Identifier: MIT
// k_fold: a seeded, optionally stratified plan of k cross-validation folds, materialised one fold at a time.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/subset.hpp"
#include "dptrain/detail/permutation.hpp"
#include "dptrain/detail/seed.hpp"

namespace dptrain {

/// Options of k_fold().
struct KFoldOptions {
  Index folds = 5;          ///< k: at least 2 and at most the number of rows
  std::uint64_t seed = 0;   ///< seed of the shuffle; the same seed and data give the same folds
  bool stratified = false;  ///< give every fold each class's share of rows (integer class labels as targets)
};

/**
 * @brief A k-fold cross-validation plan: which of the k folds each row of a data set belongs to.
 *
 * The plan holds indices only (two of them per row), never rows: split(data, i) copies the
 * training and validation sets of fold i when they are needed, so a loop over the folds holds
 * one fold's copy at a time, not k. Row indices within a fold, and in training_rows(), are in
 * increasing order. Every member is const and safe to call from several threads at once.
 *
 * Made by k_fold(), or from an assignment of your own (rows of one group in one fold, say).
 *
 * @code
 * const dptrain::KFold cv = dptrain::k_fold(data, {.folds = 5, .seed = 42, .stratified = true});
 * for (dptrain::Index i = 0; i < cv.folds(); ++i) {
 *   auto [train, validation] = cv.split(data, i);   // copies of fold i's rows
 *   // train on `train`, score on `validation`
 * }
 * @endcode
 */
class KFold {
 public:
  /**
   * @brief A plan from the fold of each row: row r is in validation fold fold_of_row[r].
   * @throws dptrain::invalid_argument when folds < 2, a fold index is outside [0, folds), or a
   *         fold has no row.
   */
  KFold(std::vector<Index> fold_of_row, Index folds) : fold_of_(std::move(fold_of_row)) {
    if (folds < 2) throw invalid_argument("dptrain::KFold: folds must be at least 2, got " + std::to_string(folds));
    starts_.assign(static_cast<std::size_t>(folds) + 1, 0);
    for (std::size_t r = 0; r < fold_of_.size(); ++r) {
      const Index f = fold_of_[r];
      if (f < 0 || f >= folds)
        throw invalid_argument("dptrain::KFold: row " + std::to_string(r) + " is in fold " + std::to_string(f) +
                               "; folds must be in [0, " + std::to_string(folds) + ")");
      ++starts_[static_cast<std::size_t>(f) + 1];
    }
    for (std::size_t f = 0; f < static_cast<std::size_t>(folds); ++f) {
      if (starts_[f + 1] == 0)
        throw invalid_argument("dptrain::KFold: fold " + std::to_string(f) +
                               " has no row; every fold needs at least one");
      starts_[f + 1] += starts_[f];
    }
    // A counting sort by fold: each fold's rows end up contiguous and in increasing order.
    rows_by_fold_.resize(fold_of_.size());
    std::vector<Index> next(starts_.begin(), starts_.end() - 1);
    for (std::size_t r = 0; r < fold_of_.size(); ++r)
      rows_by_fold_[static_cast<std::size_t>(next[static_cast<std::size_t>(fold_of_[r])]++)] = static_cast<Index>(r);
  }

  /// k, the number of folds.
  [[nodiscard]] Index folds() const noexcept { return static_cast<Index>(starts_.size()) - 1; }
  /// The number of rows the plan covers: the size of the data set it was made for.
  [[nodiscard]] Index size() const noexcept { return static_cast<Index>(fold_of_.size()); }

  /// The fold whose validation set holds `row`. @throws dptrain::invalid_argument for a row outside [0, size()).
  [[nodiscard]] Index fold_of(Index row) const {
    if (row < 0 || row >= size())
      throw invalid_argument("dptrain::KFold::fold_of: row must be in [0, " + std::to_string(size()) + "), got " +
                             std::to_string(row));
    return fold_of_[static_cast<std::size_t>(row)];
  }

  /// The rows of fold `fold`'s validation set, in increasing order: a view into the plan.
  /// @throws dptrain::invalid_argument for a fold outside [0, folds()).
  [[nodiscard]] std::span<const Index> validation_rows(Index fold) const {
    check_fold(fold, "validation_rows");
    const auto f = static_cast<std::size_t>(fold);
    return std::span<const Index>(rows_by_fold_)
        .subspan(static_cast<std::size_t>(starts_[f]), static_cast<std::size_t>(starts_[f + 1] - starts_[f]));
  }

  /// The rows of fold `fold`'s training set (every other fold's), in increasing order.
  /// @throws dptrain::invalid_argument for a fold outside [0, folds()).
  [[nodiscard]] std::vector<Index> training_rows(Index fold) const {
    check_fold(fold, "training_rows");
    std::vector<Index> rows;
    rows.reserve(fold_of_.size() - validation_rows(fold).size());
    for (std::size_t r = 0; r < fold_of_.size(); ++r)
      if (fold_of_[r] != fold) rows.push_back(static_cast<Index>(r));
    return rows;
  }

  /**
   * @brief Copies fold `fold`'s training and validation sets out of `data` (dense or sparse),
   * rows in increasing order: `{subset(data, training_rows(fold)), subset(data, validation_rows(fold))}`.
   * @return {training set, validation set}.
   * @throws dptrain::invalid_argument for a fold outside [0, folds()), or a data set whose size
   *         is not the plan's.
   */
  template <class Data>
  requires requires(const Data& data, std::span<const Index> rows) {
    { subset(data, rows) } -> std::same_as<Data>;
  }
  [[nodiscard]] std::pair<Data, Data> split(const Data& data, Index fold) const {
    check_fold(fold, "split");
    if (data.size() != size())
      throw invalid_argument("dptrain::KFold::split: the plan is for " + std::to_string(size()) +
                             " rows, the data set has " + std::to_string(data.size()) +
                             "; make the plan with k_fold() from this data set");
    return {subset(data, training_rows(fold)), subset(data, validation_rows(fold))};
  }

 private:
  void check_fold(Index fold, const char* member) const {
    if (fold < 0 || fold >= folds())
      throw invalid_argument(std::string("dptrain::KFold::") + member + ": fold must be in [0, " +
                             std::to_string(folds()) + "), got " + std::to_string(fold));
  }

  std::vector<Index> fold_of_;       // row → its validation fold
  std::vector<Index> rows_by_fold_;  // the rows grouped by fold, increasing within each
  std::vector<Index> starts_;        // fold f is rows_by_fold_[starts_[f], starts_[f + 1])
};

/**
 * @brief Plans k-fold cross-validation of `data` (dense or sparse): every row lands in exactly
 * one of k validation folds, and fold sizes differ by at most one.
 *
 * The rows are permuted as train_validation_split() permutes them (a Fisher–Yates shuffle driven
 * by std::mt19937_64(seed), the same with any standard library). With `stratified`, the
 * permutation is then stably sorted by class label, so each class's rows stay in shuffled order
 * and the classes follow each other. Position p of the resulting sequence goes to fold
 * π(p mod k), π a permutation of the k folds seeded from `seed` too. Hence, with n rows: every
 * fold holds ⌊n/k⌋ or ⌈n/k⌉ of them; stratified, every fold also holds ⌊n_c/k⌋ or ⌈n_c/k⌉ of
 * the n_c rows of each class c (a class with fewer than k rows is then missing from some
 * folds); over seeds, each row is in each fold with probability 1/k. `data` is read for its size
 * and targets only: the plan copies no rows.
 *
 * @tparam Data a data set with size(), validate() and `targets` indexable by row: DenseDataset
 *         or SparseDataset.
 * @param data    the data set (n rows).
 * @param options folds, seed and stratification.
 * @return the plan; materialise fold i with `plan.split(data, i)`.
 * @throws dptrain::invalid_argument when folds < 2 or folds > n, when `stratified` is asked of
 *         targets that are not integers (class labels), or when `data` does not validate().
 *
 * @code
 * const dptrain::KFold cv = dptrain::k_fold(data, {.folds = 5, .seed = 42, .stratified = true});
 * auto [train, validation] = cv.split(data, 0);
 * @endcode
 */
template <class Data>
requires requires(const Data& data) {
  { data.size() } -> std::convertible_to<Index>;
  data.validate();
  data.targets[Index{0}];
}
[[nodiscard]] KFold k_fold(const Data& data, const KFoldOptions& options = {}) {
  data.validate();
  const Index n = data.size();
  if (options.folds < 2)
    throw invalid_argument("dptrain::k_fold: folds must be at least 2, got " + std::to_string(options.folds));
  if (options.folds > n)
    throw invalid_argument("dptrain::k_fold: folds must be at most the number of rows, " + std::to_string(n) +
                           ", got " + std::to_string(options.folds) + " (every fold needs a row)");
  std::vector<Index> order = detail::seeded_permutation(n, options.seed);
  if (options.stratified) {
    using Target = std::remove_cvref_t<decltype(data.targets[Index{0}])>;
    if constexpr (std::integral<Target>) {
      std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return data.targets[a] < data.targets[b]; });
    } else {
      throw invalid_argument(
          "dptrain::k_fold: stratified folds need integer class labels as targets (e.g. dptrain::Label); "
          "these targets are not integers: use stratified = false");
    }
  }
  // Dealing position p to fold p mod k would always give a class's extra rows (n_c mod k of them)
  // to the same folds; a seeded relabelling of the folds spreads them, so each row is in each
  // fold with probability 1/k over seeds, and keeps every count above.
  const std::vector<Index> label = detail::seeded_permutation(options.folds, detail::mix_seed(options.seed, 1));
  std::vector<Index> fold_of(static_cast<std::size_t>(n));
  for (std::size_t p = 0; p < order.size(); ++p)
    fold_of[static_cast<std::size_t>(order[p])] = label[p % static_cast<std::size_t>(options.folds)];
  return KFold(std::move(fold_of), options.folds);
}

}  // namespace dptrain
