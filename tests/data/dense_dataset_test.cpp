// SPDX-License-Identifier: MIT
// Tests of DenseDataset::gather(): the listed rows copied whole (cache lines as packets, then the
// tail), for widths around the line size, in float and double, however many coming rows it asks
// for; and of GatherAsks, which chooses that count by timing the gather's first calls.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
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

TEST_CASE("DenseDataset::gather copies the same rows whatever count of coming rows it asks for", "[data]") {
  const auto data = numbered<float>(50, 33);
  std::vector<Index> rows;  // every row, the last ones twice, in a scrambled order
  for (Index i = 0; i < 50; ++i) rows.push_back((i * 17) % 50);
  rows.insert(rows.end(), {49, 49, 0});
  const auto expect_rows = [&](const auto& batch) {
    REQUIRE(batch.features.rows() == static_cast<Index>(rows.size()));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(batch.features.row(static_cast<Index>(i)) == data.features.row(rows[i]));
      CHECK(batch.targets[static_cast<Index>(i)] == data.targets[rows[i]]);
    }
  };
  for (const int ahead : dptrain::GatherAsks::candidates) {
    INFO("rows ahead = " << ahead);
    auto buffer = data.make_buffer(static_cast<Index>(rows.size()));
    buffer.asks.fix(ahead);
    buffer.features.setConstant(-1.0f);
    expect_rows(data.gather(rows, buffer));
    CHECK(buffer.asks.rows_ahead() == ahead);
  }
  // Chosen by timing: every call while it times, and after.
  auto buffer = data.make_buffer(static_cast<Index>(rows.size()));
  const auto timed_calls = dptrain::GatherAsks::trials * static_cast<int>(dptrain::GatherAsks::candidates.size());
  for (int call = 0; call < 2 * timed_calls; ++call) {
    buffer.features.setConstant(-1.0f);
    expect_rows(data.gather(rows, buffer));
  }
  CHECK(buffer.asks.chosen());
}

TEST_CASE("GatherAsks times each candidate in turn, then keeps one", "[data]") {
  using dptrain::GatherAsks;
  GatherAsks asks;
  std::vector<int> used;
  const auto call = [&](Index rows) { asks.run(rows, [&](int ahead) { used.push_back(ahead); }); };
  call(GatherAsks::min_rows - 1);  // too few rows to time: uses the first candidate, counts nothing
  CHECK(used.back() == GatherAsks::candidates[0]);
  CHECK_FALSE(asks.chosen());
  used.clear();
  const int timed = GatherAsks::trials * static_cast<int>(GatherAsks::candidates.size());
  for (int i = 0; i < timed; ++i) {
    CHECK_FALSE(asks.chosen());
    call(GatherAsks::min_rows);
  }
  REQUIRE(asks.chosen());
  for (int i = 0; i < timed; ++i)  // in turn, so that a slow minute falls on all of them
    CHECK(used[static_cast<std::size_t>(i)] ==
          GatherAsks::candidates[static_cast<std::size_t>(i) % GatherAsks::candidates.size()]);
  const int kept = asks.rows_ahead();
  CHECK(std::find(GatherAsks::candidates.begin(), GatherAsks::candidates.end(), kept) != GatherAsks::candidates.end());
  call(GatherAsks::min_rows);
  CHECK(used.back() == kept);

  // The fastest is kept: here the count 2, whose calls return at once while the others sleep 5 ms
  // (the minimum of three tries each, so one slow try of the fast one cannot decide).
  GatherAsks timed_asks;
  for (int i = 0; i < timed; ++i)
    timed_asks.run(GatherAsks::min_rows, [](int ahead) {
      if (ahead != 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
  REQUIRE(timed_asks.chosen());
  CHECK(timed_asks.rows_ahead() == 2);

  asks.fix(2);
  CHECK(asks.rows_ahead() == 2);
  CHECK_THROWS_AS(asks.fix(3), dptrain::invalid_argument);
  CHECK_THROWS_AS(asks.fix(0), dptrain::invalid_argument);
}
