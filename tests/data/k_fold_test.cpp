// SPDX-License-Identifier: MIT
// Tests of k_fold() and KFold: a partition into folds of sizes within one, per class when
// stratified; seeded; materialised one fold at a time, dense or sparse.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include "dptrain/data/k_fold.hpp"
#include "support/sparse_data.hpp"

using dptrain::Index;
using dptrain::Label;

namespace {

// Row i = (i, −i), target `label(i)`: each row identifies its origin.
template <class Labeller>
dptrain::DenseDataset<double, Label> kfold_numbered(Index n, Labeller label) {
  dptrain::DenseDataset<double, Label> data{dptrain::RowMatrix<double>(n, 2), dptrain::Vector<Label>(n)};
  for (Index i = 0; i < n; ++i) {
    data.features.row(i) << static_cast<double>(i), -static_cast<double>(i);
    data.targets[i] = label(i);
  }
  return data;
}

dptrain::DenseDataset<double, Label> kfold_numbered(Index n) {
  return kfold_numbered(n, [](Index i) { return static_cast<Label>(i % 3); });
}

// Imbalanced classes: `counts[c]` rows of class c, interleaved (row i has class i mod classes
// while that class has rows left), so that no class sits in one block of rows.
dptrain::DenseDataset<double, Label> kfold_imbalanced(const std::vector<Index>& counts) {
  std::vector<Label> labels;
  std::vector<Index> left = counts;
  for (bool any = true; any;) {
    any = false;
    for (std::size_t c = 0; c < left.size(); ++c)
      if (left[c] > 0) {
        labels.push_back(static_cast<Label>(c));
        --left[c];
        any = true;
      }
  }
  return kfold_numbered(static_cast<Index>(labels.size()),
                        [&](Index i) { return labels[static_cast<std::size_t>(i)]; });
}

// Checks the plan is a partition of 0 … n−1 consistent in all its views, with fold sizes
// ⌊n/k⌋ or ⌈n/k⌉.
void kfold_check_partition(const dptrain::KFold& cv, Index n, Index k) {
  REQUIRE(cv.folds() == k);
  REQUIRE(cv.size() == n);
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  Index larger = 0;
  for (Index f = 0; f < k; ++f) {
    const auto validation = cv.validation_rows(f);
    const auto size = static_cast<Index>(validation.size());
    CHECK((size == n / k || size == (n + k - 1) / k));
    if (size > n / k) ++larger;
    CHECK(std::is_sorted(validation.begin(), validation.end()));
    std::vector<bool> in_fold(static_cast<std::size_t>(n), false);
    for (const Index r : validation) {
      REQUIRE((r >= 0 && r < n));
      ++seen[static_cast<std::size_t>(r)];
      in_fold[static_cast<std::size_t>(r)] = true;
      CHECK(cv.fold_of(r) == f);
    }
    // The training rows are exactly the others, in increasing order.
    std::vector<Index> others;
    for (Index r = 0; r < n; ++r)
      if (!in_fold[static_cast<std::size_t>(r)]) others.push_back(r);
    CHECK(cv.training_rows(f) == others);
  }
  CHECK(larger == n % k);
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

std::vector<Index> kfold_assignment(const dptrain::KFold& cv) {
  std::vector<Index> folds(static_cast<std::size_t>(cv.size()));
  for (Index r = 0; r < cv.size(); ++r) folds[static_cast<std::size_t>(r)] = cv.fold_of(r);
  return folds;
}

}  // namespace

TEST_CASE("k_fold: every row is in exactly one validation fold, fold sizes differ by at most one", "[data]") {
  const Index n = GENERATE(2, 5, 10, 11, 99, 256);
  const Index k = GENERATE(2, 3, 5, 10);
  if (k > n) return;
  const bool stratified = GENERATE(false, true);
  INFO("n = " << n << ", k = " << k << ", stratified = " << stratified);
  const auto data = kfold_numbered(n);
  kfold_check_partition(dptrain::k_fold(data, {.folds = k, .seed = 42, .stratified = stratified}), n, k);
}

TEST_CASE("k_fold: stratified folds hold floor or ceil of each class's count over k", "[data]") {
  const std::vector<Index> counts = GENERATE(std::vector<Index>{50, 23, 7, 3}, std::vector<Index>{1, 1, 98},
                                             std::vector<Index>{12, 12, 12}, std::vector<Index>{9, 31});
  const Index k = GENERATE(2, 4, 5, 7);
  const std::uint64_t seed = GENERATE(1, 2, 3);
  const auto data = kfold_imbalanced(counts);
  const Index n = data.size();
  const auto cv = dptrain::k_fold(data, {.folds = k, .seed = seed, .stratified = true});
  kfold_check_partition(cv, n, k);
  for (std::size_t c = 0; c < counts.size(); ++c) {
    const Index n_c = counts[c];
    Index total = 0, larger = 0;
    for (Index f = 0; f < k; ++f) {
      Index in_fold = 0;
      for (const Index r : cv.validation_rows(f)) in_fold += data.targets[r] == static_cast<Label>(c) ? 1 : 0;
      INFO("class " << c << " (" << n_c << " rows), fold " << f << " of " << k << ", seed " << seed);
      CHECK((in_fold == n_c / k || in_fold == (n_c + k - 1) / k));
      if (in_fold > n_c / k) ++larger;
      total += in_fold;
    }
    CHECK(total == n_c);
    CHECK(larger == n_c % k);  // the rounding: n_c mod k folds get the one extra row
  }
}

TEST_CASE("k_fold: without stratification an imbalanced class is not spread evenly for every seed", "[data]") {
  // 40 rows of class 1 among 200, 5 folds: stratified, each fold has exactly 8. A plain shuffle
  // gives 8 in every fold for few seeds; over 20 seeds at least one fold differs from 8.
  const auto data = kfold_imbalanced({160, 40});
  bool uneven = false;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const auto plain = dptrain::k_fold(data, {.folds = 5, .seed = seed});
    const auto stratified = dptrain::k_fold(data, {.folds = 5, .seed = seed, .stratified = true});
    for (Index f = 0; f < 5; ++f) {
      Index plain_ones = 0, stratified_ones = 0;
      for (const Index r : plain.validation_rows(f)) plain_ones += data.targets[r];
      for (const Index r : stratified.validation_rows(f)) stratified_ones += data.targets[r];
      CHECK(stratified_ones == 8);
      uneven = uneven || plain_ones != 8;
    }
  }
  CHECK(uneven);
}

TEST_CASE("k_fold: the same seed gives the same folds, another seed other folds", "[data]") {
  const auto data = kfold_numbered(120);
  const bool stratified = GENERATE(false, true);
  const auto a = kfold_assignment(dptrain::k_fold(data, {.folds = 5, .seed = 7, .stratified = stratified}));
  const auto b = kfold_assignment(dptrain::k_fold(data, {.folds = 5, .seed = 7, .stratified = stratified}));
  const auto c = kfold_assignment(dptrain::k_fold(data, {.folds = 5, .seed = 8, .stratified = stratified}));
  CHECK(a == b);
  CHECK(a != c);
  // Shuffled: not the rows dealt in order (row r to fold r mod 5), nor in blocks.
  std::vector<Index> dealt(120), blocks(120);
  for (Index r = 0; r < 120; ++r) {
    dealt[static_cast<std::size_t>(r)] = r % 5;
    blocks[static_cast<std::size_t>(r)] = r / 24;
  }
  CHECK(a != dealt);
  CHECK(a != blocks);
}

TEST_CASE("k_fold: over many seeds a row lands in each fold about equally often", "[data]") {
  // 1000 seeds, 5 folds: each fold about 200 times (binomial, standard deviation ≈ 12.6); the
  // seeds are fixed, so the counts are too, and the bounds are ±5 standard deviations.
  const auto data = kfold_imbalanced({30, 7});
  const bool stratified = GENERATE(false, true);
  for (const Index row : {Index{0}, Index{1}, Index{36}}) {
    std::vector<Index> count(5, 0);
    for (std::uint64_t seed = 0; seed < 1000; ++seed)
      ++count[static_cast<std::size_t>(
          dptrain::k_fold(data, {.folds = 5, .seed = seed, .stratified = stratified}).fold_of(row))];
    INFO("row " << row << ", stratified = " << stratified);
    for (const Index c : count) CHECK((c > 137 && c < 263));
  }
}

TEST_CASE("KFold::split copies fold i's training and validation rows out of a dense data set", "[data]") {
  const auto data = kfold_numbered(23);
  const auto cv = dptrain::k_fold(data, {.folds = 4, .seed = 3});
  for (Index f = 0; f < cv.folds(); ++f) {
    const auto [train, validation] = cv.split(data, f);
    const auto training_rows = cv.training_rows(f);
    const auto validation_rows = cv.validation_rows(f);
    REQUIRE(train.size() == static_cast<Index>(training_rows.size()));
    REQUIRE(validation.size() == static_cast<Index>(validation_rows.size()));
    CHECK(train.size() + validation.size() == 23);
    for (Index i = 0; i < train.size(); ++i) {
      const Index r = training_rows[static_cast<std::size_t>(i)];
      CHECK(train.features(i, 0) == static_cast<double>(r));
      CHECK(train.features(i, 1) == -static_cast<double>(r));
      CHECK(train.targets[i] == static_cast<Label>(r % 3));
      CHECK(cv.fold_of(r) != f);
    }
    for (Index i = 0; i < validation.size(); ++i) {
      const Index r = validation_rows[static_cast<std::size_t>(i)];
      CHECK(validation.features(i, 0) == static_cast<double>(r));
      CHECK(validation.targets[i] == static_cast<Label>(r % 3));
    }
  }
}

TEST_CASE("k_fold and KFold::split work on a sparse data set as on its dense copy", "[data]") {
  const auto sparse = test::random_sparse<float>(41, 17, 0.3, 3, 9);
  const auto dense = test::dense_copy(sparse);
  const dptrain::KFoldOptions options{.folds = 6, .seed = 5, .stratified = true};
  const auto cv = dptrain::k_fold(sparse, options);
  kfold_check_partition(cv, 41, 6);
  CHECK(kfold_assignment(cv) == kfold_assignment(dptrain::k_fold(dense, options)));
  const dptrain::RowMatrix<float> all = sparse.features.toDense();
  for (Index f = 0; f < cv.folds(); ++f) {
    const auto [train, validation] = cv.split(sparse, f);
    CHECK(train.features.isCompressed());
    CHECK(validation.features.isCompressed());
    CHECK(train.dim() == 17);
    const auto training_rows = cv.training_rows(f);
    const dptrain::RowMatrix<float> got = train.features.toDense();
    REQUIRE(got.rows() == static_cast<Index>(training_rows.size()));
    for (Index i = 0; i < got.rows(); ++i) {
      CHECK(got.row(i) == all.row(training_rows[static_cast<std::size_t>(i)]));
      CHECK(train.targets[i] == sparse.targets[training_rows[static_cast<std::size_t>(i)]]);
    }
    const dptrain::RowMatrix<float> held_out = validation.features.toDense();
    for (Index i = 0; i < held_out.rows(); ++i)
      CHECK(held_out.row(i) == all.row(cv.validation_rows(f)[static_cast<std::size_t>(i)]));
  }
}

TEST_CASE("KFold from an assignment of one's own: rows of a group stay together", "[data]") {
  // Six groups of rows (row r in group r / 4), folds by group: 0,1 → 0; 2,3 → 1; 4,5 → 2.
  std::vector<Index> assignment(24);
  for (Index r = 0; r < 24; ++r) assignment[static_cast<std::size_t>(r)] = r / 8;
  const dptrain::KFold cv(assignment, 3);
  kfold_check_partition(cv, 24, 3);
  const auto validation = cv.validation_rows(1);
  CHECK(std::vector<Index>(validation.begin(), validation.end()) == std::vector<Index>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK_THROWS_WITH(dptrain::KFold(std::vector<Index>{0, 1, 0}, 3),
                    "dptrain::KFold: fold 2 has no row; every fold needs at least one");
  CHECK_THROWS_WITH(dptrain::KFold(std::vector<Index>{0, 3, 1}, 3),
                    "dptrain::KFold: row 1 is in fold 3; folds must be in [0, 3)");
  CHECK_THROWS_AS(dptrain::KFold(std::vector<Index>{0, 0}, 1), dptrain::invalid_argument);
}

TEST_CASE("k_fold: bad folds, stratified real targets and mismatched data are an invalid_argument", "[data]") {
  const auto data = kfold_numbered(10);
  CHECK_THROWS_WITH(dptrain::k_fold(data, {.folds = 1}), "dptrain::k_fold: folds must be at least 2, got 1");
  CHECK_THROWS_WITH(dptrain::k_fold(data, {.folds = 11}),
                    "dptrain::k_fold: folds must be at most the number of rows, 10, got 11 (every fold needs a row)");
  CHECK_NOTHROW(dptrain::k_fold(data, {.folds = 10}));  // leave-one-out
  CHECK_THROWS_AS(dptrain::k_fold(kfold_numbered(0), {.folds = 2}), dptrain::invalid_argument);

  dptrain::DenseDataset<double> regression{dptrain::RowMatrix<double>::Zero(10, 2), dptrain::Vector<double>::Zero(10)};
  CHECK_NOTHROW(dptrain::k_fold(regression, {.folds = 3}));
  CHECK_THROWS_WITH(dptrain::k_fold(regression, {.folds = 3, .stratified = true}),
                    Catch::StartsWith("dptrain::k_fold: stratified folds need integer class labels"));

  auto ragged = kfold_numbered(10);
  ragged.targets.conservativeResize(9);
  CHECK_THROWS_AS(dptrain::k_fold(ragged, {.folds = 3}), dptrain::invalid_argument);

  const auto cv = dptrain::k_fold(data, {.folds = 3});
  CHECK_THROWS_WITH(cv.split(data, 3), "dptrain::KFold::split: fold must be in [0, 3), got 3");
  CHECK_THROWS_AS(cv.validation_rows(-1), dptrain::invalid_argument);
  CHECK_THROWS_AS(cv.training_rows(3), dptrain::invalid_argument);
  CHECK_THROWS_AS(cv.fold_of(10), dptrain::invalid_argument);
  CHECK_THROWS_WITH(cv.split(kfold_numbered(11), 0),
                    "dptrain::KFold::split: the plan is for 10 rows, the data set has 11; make the plan with "
                    "k_fold() from this data set");
}
