// SPDX-License-Identifier: MIT
// Tests of subset(): the listed rows of a dense or sparse data set, in the order given.
#include <catch2/catch.hpp>

#include <vector>

#include "dptrain/data/subset.hpp"
#include "support/sparse_data.hpp"

using dptrain::Index;
using dptrain::Label;

namespace {

// Row i = (i, −i, 0.5·i, 1), target 10·i: each row identifies its origin.
dptrain::DenseDataset<double, Label> subset_numbered(Index n) {
  dptrain::DenseDataset<double, Label> data{dptrain::RowMatrix<double>(n, 4), dptrain::Vector<Label>(n)};
  for (Index i = 0; i < n; ++i) {
    const auto x = static_cast<double>(i);
    data.features.row(i) << x, -x, 0.5 * x, 1.0;
    data.targets[i] = static_cast<Label>(10 * i);
  }
  return data;
}

}  // namespace

TEST_CASE("subset: a dense data set's rows in the order of the indices, with their targets", "[data]") {
  const auto data = subset_numbered(10);
  const std::vector<Index> rows{7, 0, 3, 9, 3};  // 3 twice: a bootstrap sample repeats rows
  const auto part = dptrain::subset(data, rows);
  REQUIRE(part.size() == 5);
  CHECK(part.dim() == 4);
  for (Index i = 0; i < part.size(); ++i) {
    const auto r = static_cast<double>(rows[static_cast<std::size_t>(i)]);
    CHECK(part.features(i, 0) == r);
    CHECK(part.features(i, 1) == -r);
    CHECK(part.features(i, 2) == 0.5 * r);
    CHECK(part.features(i, 3) == 1.0);
    CHECK(part.targets[i] == static_cast<Label>(10 * rows[static_cast<std::size_t>(i)]));
  }
  CHECK(data.features == subset_numbered(10).features);  // the input is unchanged
}

TEST_CASE("subset: no indices give an empty data set with the same columns", "[data]") {
  const auto dense = dptrain::subset(subset_numbered(4), std::vector<Index>{});
  CHECK(dense.size() == 0);
  CHECK(dense.dim() == 4);
  CHECK(dense.targets.size() == 0);
  const auto sparse = dptrain::subset(test::random_sparse<float>(6, 11, 0.4, 3, 5), std::vector<Index>{});
  CHECK(sparse.size() == 0);
  CHECK(sparse.dim() == 11);
  CHECK(sparse.nonzeros() == 0);
  CHECK_NOTHROW(sparse.validate());
}

TEMPLATE_TEST_CASE("subset: a sparse data set's rows, entries and targets in the order of the indices", "[data]", float,
                   double) {
  // Every fifth row (from row 2) of random_sparse is empty: rows 2 and 7 below have no entries.
  const auto data = test::random_sparse<TestType>(30, 13, 0.35, 4, 11);
  const dptrain::RowMatrix<TestType> dense = data.features.toDense();
  const std::vector<Index> rows{29, 2, 0, 14, 14, 7, 21};
  const auto part = dptrain::subset(data, rows);
  REQUIRE(part.size() == 7);
  CHECK(part.dim() == 13);
  CHECK(part.features.isCompressed());
  CHECK_NOTHROW(part.validate());
  const dptrain::RowMatrix<TestType> got = part.features.toDense();
  Index entries = 0;
  for (Index i = 0; i < part.size(); ++i) {
    const Index r = rows[static_cast<std::size_t>(i)];
    CHECK(got.row(i) == dense.row(r));
    CHECK(part.targets[i] == data.targets[r]);
    const Index stored = data.features.outerIndexPtr()[r + 1] - data.features.outerIndexPtr()[r];
    CHECK(part.features.outerIndexPtr()[i + 1] - part.features.outerIndexPtr()[i] == stored);
    entries += stored;
  }
  CHECK(part.nonzeros() == entries);
  CHECK(part.features.outerIndexPtr()[2] - part.features.outerIndexPtr()[1] == 0);  // row 2: empty
}

TEST_CASE("subset: a stored zero of a sparse row is kept", "[data]") {
  dptrain::SparseDataset<double, Label> data;
  data.features.resize(2, 3);
  data.features.insert(0, 1) = 0.0;
  data.features.insert(1, 2) = 5.0;
  data.features.makeCompressed();
  data.targets = dptrain::Vector<Label>::LinSpaced(2, 0, 1);
  const auto part = dptrain::subset(data, std::vector<Index>{0});
  CHECK(part.nonzeros() == 1);
  CHECK(part.features.innerIndexPtr()[0] == 1);
  CHECK(part.features.valuePtr()[0] == 0.0);
}

TEST_CASE("subset: an index outside the data set is an invalid_argument that names it and its position", "[data]") {
  const auto dense = subset_numbered(10);
  const auto sparse = test::random_sparse<double>(10, 5, 0.5, 2, 3);
  CHECK_THROWS_WITH(dptrain::subset(dense, std::vector<Index>{1, 10}),
                    "dptrain::subset: row index 10 (at position 1) is out of range for a data set of 10 rows; "
                    "indices must be in [0, 10)");
  CHECK_THROWS_WITH(dptrain::subset(sparse, std::vector<Index>{-1}),
                    Catch::StartsWith("dptrain::subset: row index -1 (at position 0) is out of range"));
  CHECK_THROWS_AS(dptrain::subset(dense, std::vector<Index>{0, 1, 2, 100}), dptrain::invalid_argument);
  CHECK_THROWS_AS(dptrain::subset(sparse, std::vector<Index>{10}), dptrain::invalid_argument);
}

TEST_CASE("subset: a data set that does not validate is an invalid_argument", "[data]") {
  auto dense = subset_numbered(5);
  dense.targets.conservativeResize(4);
  CHECK_THROWS_AS(dptrain::subset(dense, std::vector<Index>{0}), dptrain::invalid_argument);
  dptrain::SparseDataset<double, Label> sparse;
  sparse.features.resize(2, 2);
  sparse.features.insert(0, 0) = 1.0;  // uncompressed after insert()
  sparse.targets = dptrain::Vector<Label>::Zero(2);
  CHECK_THROWS_WITH(dptrain::subset(sparse, std::vector<Index>{0}), Catch::Contains("must be compressed"));
}
