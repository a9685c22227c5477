// SPDX-License-Identifier: MIT
// Tests of SparseDataset: rows() and gather() against a dense copy, buffer sizing, empty selections.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/data/sparse_dataset.hpp"
#include "support/sparse_data.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::RowMatrix;
using dptrain::SparseDataset;
using dptrain::Vector;

static_assert(dptrain::DatasetOf<SparseDataset<float, Label>, dptrain::SparseBatch<float, Label>>);
static_assert(dptrain::DatasetOf<SparseDataset<double>, SparseDataset<double>::batch_type>);

// The batch holds exactly `expected` rows of the dense copy: values, non-zero count, targets,
// and what Eigen computes from the map (a product, coeff(), an iteration over the entries).
template <class Scalar>
void check_batch(const typename SparseDataset<Scalar, Label>::batch_type& batch, const RowMatrix<Scalar>& dense,
                 const Vector<Label>& targets, const std::vector<Index>& expected) {
  const auto m = static_cast<Index>(expected.size());
  REQUIRE(batch.size() == m);
  REQUIRE(batch.features.cols() == dense.cols());
  REQUIRE(batch.targets.size() == m);
  const RowMatrix<Scalar> got = batch.features.toDense();
  Index nonzeros = 0;
  for (Index i = 0; i < m; ++i) {
    const Index r = expected[static_cast<std::size_t>(i)];
    CHECK(got.row(i) == dense.row(r));
    CHECK(batch.targets[i] == targets[r]);
    for (Index j = 0; j < dense.cols(); ++j) {
      CHECK(batch.features.coeff(i, j) == dense(r, j));
      if (dense(r, j) != Scalar(0)) ++nonzeros;
    }
    Index seen = 0;
    for (typename Eigen::Map<const dptrain::SparseRowMatrix<Scalar>>::InnerIterator it(batch.features, i); it; ++it) {
      CHECK(it.value() == dense(r, it.col()));
      ++seen;
    }
    CHECK(seen == (dense.row(r).array() != Scalar(0)).count());
  }
  CHECK(batch.features.nonZeros() == nonzeros);
  const Vector<Scalar> v = Vector<Scalar>::LinSpaced(dense.cols(), Scalar(-1), Scalar(2));
  const Vector<Scalar> product = batch.features * v;
  for (Index i = 0; i < m; ++i)
    CHECK(product[i] == Approx(dense.row(expected[static_cast<std::size_t>(i)]).dot(v)).margin(1e-5));
}

std::vector<Index> range(Index begin, Index count) {
  std::vector<Index> r(static_cast<std::size_t>(count));
  std::iota(r.begin(), r.end(), begin);
  return r;
}

}  // namespace

TEMPLATE_TEST_CASE("SparseDataset: rows gives zero-copy views of contiguous rows", "[data]", float, double) {
  const auto data = test::random_sparse<TestType>(23, 9, 0.3, 3, 1);
  data.validate();
  CHECK(data.size() == 23);
  CHECK(data.dim() == 9);
  CHECK(data.nonzeros() == data.features.nonZeros());
  const RowMatrix<TestType> dense = data.features.toDense();
  for (const auto& [begin, count] :
       std::vector<std::pair<Index, Index>>{{0, 23}, {3, 5}, {7, 1}, {22, 1}, {0, 0}, {23, 0}, {10, 13}}) {
    INFO("rows(" << begin << ", " << count << ")");
    const auto batch = data.rows(begin, count);
    check_batch<TestType>(batch, dense, data.targets, range(begin, count));
    // The view points into the data set's own arrays.
    CHECK(batch.features.valuePtr() == data.features.valuePtr());
    CHECK(batch.features.outerIndexPtr() == data.features.outerIndexPtr() + begin);
    CHECK(batch.targets.data() == data.targets.data() + begin);
  }
}

TEMPLATE_TEST_CASE("SparseDataset: gather copies the listed rows into the buffer", "[data]", float, double) {
  const auto data = test::random_sparse<TestType>(40, 12, 0.25, 4, 2);
  const RowMatrix<TestType> dense = data.features.toDense();
  auto buffer = data.make_buffer(10);
  std::vector<Index> order(40);
  std::iota(order.begin(), order.end(), Index{0});
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  for (const Index count : {Index{10}, Index{3}, Index{0}, Index{10}, Index{1}}) {
    for (Index start = 0; start + count <= 40; start += std::max<Index>(count, 7)) {
      const std::vector<Index> rows(order.begin() + start, order.begin() + start + count);
      INFO(count << " rows from " << start);
      check_batch<TestType>(data.gather(rows, buffer), dense, data.targets, rows);
    }
  }
}

TEMPLATE_TEST_CASE("SparseDataset: make_buffer holds the densest rows and gather never reallocates", "[data]", float,
                   double) {
  const auto data = test::random_sparse<TestType>(30, 20, 0.4, 2, 3);
  const dptrain::SparseRowMatrix<TestType>& x = data.features;
  std::vector<Index> by_size(30);
  std::iota(by_size.begin(), by_size.end(), Index{0});
  const auto nnz = [&](Index r) { return x.outerIndexPtr()[r + 1] - x.outerIndexPtr()[r]; };
  std::sort(by_size.begin(), by_size.end(), [&](Index a, Index b) { return nnz(a) > nnz(b); });
  const Index max_rows = 6;
  Index worst = 0;
  for (Index i = 0; i < max_rows; ++i) worst += nnz(by_size[static_cast<std::size_t>(i)]);

  auto buffer = data.make_buffer(max_rows);
  CHECK(static_cast<Index>(buffer.inner.size()) == worst);
  CHECK(static_cast<Index>(buffer.values.size()) == worst);
  CHECK(static_cast<Index>(buffer.outer.size()) == max_rows + 1);
  CHECK(buffer.targets.size() == max_rows);

  // The worst case fits, and no gather moves any of the buffer's arrays.
  const auto* outer = buffer.outer.data();
  const auto* inner = buffer.inner.data();
  const auto* values = buffer.values.data();
  const auto* targets = buffer.targets.data();
  const RowMatrix<TestType> dense = x.toDense();
  const std::vector<Index> densest(by_size.begin(), by_size.begin() + max_rows);
  check_batch<TestType>(data.gather(densest, buffer), dense, data.targets, densest);
  const std::vector<Index> sparsest(by_size.end() - max_rows, by_size.end());
  check_batch<TestType>(data.gather(sparsest, buffer), dense, data.targets, sparsest);
  CHECK(buffer.outer.data() == outer);
  CHECK(buffer.inner.data() == inner);
  CHECK(buffer.values.data() == values);
  CHECK(buffer.targets.data() == targets);
  CHECK(data.gather(densest, buffer).features.valuePtr() == values);

  // Too many rows, or the densest row repeated past the worst case, throw instead of overflowing.
  const std::vector<Index> too_many(max_rows + 1, by_size.back());
  CHECK_THROWS_AS(data.gather(too_many, buffer), dptrain::invalid_argument);
  CHECK_THROWS_WITH(data.gather(too_many, buffer), Catch::Contains("the buffer was made for 6"));
  if (nnz(by_size.front()) > nnz(by_size[static_cast<std::size_t>(max_rows - 1)])) {
    const std::vector<Index> repeated(max_rows, by_size.front());
    CHECK_THROWS_WITH(data.gather(repeated, buffer), Catch::Contains("non-zeros, the buffer holds"));
  }
}

TEMPLATE_TEST_CASE("SparseDataset: empty selections and empty data sets work", "[data]", float, double) {
  const auto data = test::random_sparse<TestType>(8, 5, 0.5, 2, 4);
  for (const Index max_rows : {Index{0}, Index{3}, Index{20}}) {
    auto buffer = data.make_buffer(max_rows);
    const auto batch = data.gather(std::span<const Index>(), buffer);
    CHECK(batch.size() == 0);
    CHECK(batch.features.nonZeros() == 0);
    CHECK(batch.targets.size() == 0);
  }
  // More rows than the data set has: sized for all of it.
  CHECK(static_cast<Index>(data.make_buffer(20).inner.size()) == data.nonzeros());
  CHECK_THROWS_AS(data.make_buffer(-1), dptrain::invalid_argument);

  SparseDataset<TestType, Label> empty;
  empty.features.resize(0, 4);
  empty.validate();
  CHECK(empty.size() == 0);
  CHECK(empty.rows(0, 0).size() == 0);
  auto buffer = empty.make_buffer(2);
  CHECK(empty.gather(std::span<const Index>(), buffer).size() == 0);
}

TEST_CASE("SparseDataset: validate rejects mismatched targets and uncompressed features", "[data]") {
  auto data = test::random_sparse<double>(6, 4, 0.5, 2, 5);
  data.validate();
  data.targets.resize(5);
  CHECK_THROWS_AS(data.validate(), dptrain::invalid_argument);
  CHECK_THROWS_WITH(data.validate(), Catch::Contains("6 feature rows but 5 targets"));
  data.targets.resize(6);
  data.features.insert(2, 0) = 1.0;  // row 2 is empty; inserting leaves compressed mode
  data.features.insert(2, 3) = 2.0;
  if (!data.features.isCompressed()) {
    CHECK_THROWS_WITH(data.validate(), Catch::Contains("makeCompressed"));
    data.features.makeCompressed();
  }
  data.validate();
}
