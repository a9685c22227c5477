// SPDX-License-Identifier: MIT
// Tests of DenseDataset::gather(): the listed rows copied whole (cache lines as packets, then the
// tail), for widths around the line size, in float and double.
#include <catch2/catch.hpp>

#include <vector>

#include "dptrain/data/dense_dataset.hpp"

using dptrain::Index;
using dptrain::Label;

namespace {

// Element (i, j) = 1000·i + j + 0.25, target 7·i: each value names its row and column.
template <class Scalar>
dptrain::DenseDataset<Scalar, Label> numbered(Index rows, Index dim) {
  dptrain::DenseDataset<Scalar, Label> data{dptrain::RowMatrix<Scalar>(rows, dim), dptrain::Vector<Label>(rows)};
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < dim; ++j) data.features(i, j) = static_cast<Scalar>(1000 * i + j) + Scalar(0.25);
    data.targets[i] = static_cast<Label>(7 * i);
  }
  return data;
}

template <class Scalar>
void check_gather(Index dim) {
  const auto data = numbered<Scalar>(9, dim);
  auto buffer = data.make_buffer(6);
  // The buffer's rows are poisoned first, so a value gather() leaves unwritten shows.
  buffer.features.setConstant(Scalar(-1));
  const std::vector<Index> rows{8, 0, 5, 5, 3, 7};  // a row twice, the last row, the first
  const auto batch = data.gather(rows, buffer);
  REQUIRE(batch.features.rows() == 6);
  REQUIRE(batch.features.cols() == dim);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto k = static_cast<Index>(i);
    CHECK(batch.features.row(k) == data.features.row(rows[i]));
    CHECK(batch.targets[k] == data.targets[rows[i]]);
  }
  // Fewer rows into the same buffer: a view of the first ones only.
  const std::vector<Index> two{1, 2};
  const auto again = data.gather(two, buffer);
  REQUIRE(again.features.rows() == 2);
  CHECK(again.features.row(1) == data.features.row(2));
}

}  // namespace

TEST_CASE("DenseDataset::gather copies whole rows for widths around a cache line", "[data]") {
  for (const Index dim : {1, 7, 8, 15, 16, 17, 31, 32, 33, 784}) {
    INFO("dim = " << dim);
    check_gather<float>(dim);
    check_gather<double>(dim);
  }
}
