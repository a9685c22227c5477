// SPDX-License-Identifier: MIT
// Tests of ByteDataset: bytes read as scale·b + offset per feature by gather() and rows(), for
// widths around the line size; training and evaluation on it give exactly what they give on a
// DenseDataset of the same Scalars; a model's validation runs block by block.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "dptrain/dptrain.hpp"

using dptrain::Index;
using dptrain::Label;

namespace {

// Byte (i, j) = (37·i + 11·j + 5) mod 256, target i mod `classes`; scale and offset differ per
// feature, so a feature read with another's would show.
template <class Scalar>
dptrain::ByteDataset<Scalar, Label> byte_numbered(Index rows, Index dim, Label classes = 3) {
  dptrain::ByteDataset<Scalar, Label> data{.bytes = dptrain::ByteMatrix(rows, dim),
                                           .targets = dptrain::Vector<Label>(rows),
                                           .scale = dptrain::Vector<Scalar>(dim),
                                           .offset = dptrain::Vector<Scalar>(dim)};
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < dim; ++j) data.bytes(i, j) = static_cast<std::uint8_t>((37 * i + 11 * j + 5) % 256);
    data.targets[i] = static_cast<Label>(i % classes);
  }
  for (Index j = 0; j < dim; ++j) {
    data.scale[j] = Scalar(1) / static_cast<Scalar>(255 * (1 + j % 3));
    data.offset[j] = static_cast<Scalar>(j % 2) * Scalar(-0.25);
  }
  return data;
}

// Every row of `data` as the Scalars it reads as: its dense copy.
template <class Scalar>
dptrain::DenseDataset<Scalar, Label> dense_copy(const dptrain::ByteDataset<Scalar, Label>& data) {
  auto buffer = data.make_buffer(data.size());
  const auto all = data.rows(0, data.size(), buffer);
  return {.features = all.features, .targets = all.targets};
}

// scale·b + offset, rounded once (fused) or twice: the compiler may contract it either way.
template <class Scalar>
bool reads_as(Scalar x, std::uint8_t b, Scalar scale, Scalar offset) {
  const volatile Scalar scaled = static_cast<Scalar>(b) * scale;  // volatile: never contracted into an FMA
  return x == std::fma(static_cast<Scalar>(b), scale, offset) || x == scaled + offset;
}

template <class Scalar>
void check_byte_gather(Index dim) {
  const auto data = byte_numbered<Scalar>(9, dim);
  REQUIRE_NOTHROW(data.validate());
  auto buffer = data.make_buffer(6);
  buffer.features.setConstant(Scalar(-7));  // poisoned: a value gather() leaves unwritten shows
  const std::vector<Index> rows{8, 0, 5, 5, 3, 7};
  const auto batch = data.gather(rows, buffer);
  REQUIRE(batch.features.rows() == 6);
  REQUIRE(batch.features.cols() == dim);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto at = static_cast<Index>(i);
    CHECK(batch.targets[at] == data.targets[rows[i]]);
    for (Index j = 0; j < dim; ++j) {
      INFO("row " << rows[i] << ", feature " << j << " of " << dim);
      CHECK(reads_as(batch.features(at, j), data.bytes(rows[i], j), data.scale[j], data.offset[j]));
    }
  }
}

}  // namespace

static_assert(dptrain::DatasetOf<dptrain::ByteDataset<float, Label>, dptrain::DenseBatch<float, Label>>);
static_assert(dptrain::DatasetOf<dptrain::ByteDataset<double>, dptrain::DenseBatch<double, double>>);
static_assert(!dptrain::detail::views_rows<dptrain::ByteDataset<float>>);
static_assert(dptrain::detail::views_rows<dptrain::DenseDataset<float>>);

TEMPLATE_TEST_CASE(
    "ByteDataset::gather: each listed row expanded as scale·b + offset per feature, around a line's width",
    "[data][byte_dataset]", float, double) {
  for (const Index dim : {1, 63, 64, 65, 130, 784}) check_byte_gather<TestType>(dim);
}

TEST_CASE("ByteDataset::gather: the same rows however many coming rows it asks for, timed or fixed",
          "[data][byte_dataset]") {
  const auto data = byte_numbered<float>(200, 100);
  std::vector<Index> rows(64);
  std::iota(rows.begin(), rows.end(), Index{0});
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<Index>((i * 53) % 200);
  auto reference = data.make_buffer(64);
  const dptrain::RowMatrix<float> expected = data.gather(rows, reference).features;
  for (const int ahead : dptrain::GatherAsks::candidates) {
    auto fixed = data.make_buffer(64);
    fixed.asks.fix(ahead);
    CHECK(data.gather(rows, fixed).features == expected);
  }
  auto timed = data.make_buffer(64);
  for (int call = 0; call < dptrain::GatherAsks::trials * static_cast<int>(dptrain::GatherAsks::candidates.size()) + 2;
       ++call)
    CHECK(data.gather(rows, timed).features == expected);
  CHECK(timed.asks.chosen());
}

TEST_CASE("ByteDataset::rows: contiguous rows expanded into the buffer, as gather() of the same rows",
          "[data][byte_dataset]") {
  const auto data = byte_numbered<float>(20, 70);
  auto buffer = data.make_buffer(8);
  auto other = data.make_buffer(8);
  const std::vector<Index> listed{5, 6, 7, 8, 9, 10, 11};
  const dptrain::RowMatrix<float> gathered = data.gather(listed, other).features;
  const auto batch = data.rows(5, 7, buffer);
  CHECK(batch.features == gathered);
  CHECK(batch.targets == data.targets.segment(5, 7));
  CHECK(data.rows(0, 0, buffer).size() == 0);
}

TEST_CASE("ByteDataset::validate: targets, scale and offset that do not fit the bytes are named",
          "[data][byte_dataset]") {
  auto data = byte_numbered<float>(4, 3);
  data.targets.resize(3);
  CHECK_THROWS_WITH(data.validate(), Catch::Contains("4 rows of bytes but 3 targets"));
  data = byte_numbered<float>(4, 3);
  data.scale.resize(2);
  CHECK_THROWS_WITH(data.validate(), Catch::Contains("scale has 2 entries for rows of 3 features"));
  data = byte_numbered<float>(4, 3);
  data.offset[1] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(data.validate(), Catch::Contains("offset[1] is not finite"));
}

TEST_CASE("ByteDataset: training and evaluation give exactly what they give on a DenseDataset of the same values",
          "[data][byte_dataset][trainer]") {
  const auto bytes = byte_numbered<float>(300, 70);
  const auto floats = dense_copy(bytes);
  const dptrain::SoftmaxRegression<float> model(70, 3);
  for (const bool shuffle : {true, false}) {
    INFO((shuffle ? "shuffled" : "in order"));
    dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 32, .epochs = 3, .shuffle = shuffle, .seed = 5},
                                         dptrain::Momentum{.lr = 0.2, .momentum = 0.9});
    dptrain::Vector<float> from_bytes = model.init_parameters(), from_floats = model.init_parameters();
    const dptrain::FitReport on_bytes = trainer.fit(model, from_bytes, bytes);
    const dptrain::FitReport on_floats = trainer.fit(model, from_floats, floats);
    CHECK(from_bytes != model.init_parameters());  // it trained
    CHECK(from_bytes == from_floats);
    CHECK(on_bytes.epoch_loss == on_floats.epoch_loss);
    CHECK(dptrain::accuracy(model, from_bytes, bytes, 2) == dptrain::accuracy(model, from_floats, floats, 2));
    CHECK(dptrain::mean_loss(model, from_bytes, bytes, 2) == dptrain::mean_loss(model, from_floats, floats, 2));
  }
}

TEST_CASE("ByteDataset: BackupWorkers' chunks read it, shuffled or in order, as they read its dense copy",
          "[data][byte_dataset][synchronizers]") {
  const auto bytes = byte_numbered<float>(150, 70);
  const auto floats = dense_copy(bytes);
  const dptrain::SoftmaxRegression<float> model(70, 3);
  for (const bool shuffle : {true, false}) {
    INFO((shuffle ? "shuffled" : "in order"));
    dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 30, .epochs = 2, .shuffle = shuffle, .seed = 4},
                                         dptrain::Sgd{.lr = 0.3}, dptrain::BackupWorkers{.chunks = 3});
    dptrain::Vector<float> from_bytes = model.init_parameters(), from_floats = model.init_parameters();
    trainer.fit(model, from_bytes, bytes);
    trainer.fit(model, from_floats, floats);
    CHECK(from_bytes != model.init_parameters());
    CHECK(from_bytes == from_floats);
  }
}

TEST_CASE("ByteDataset: a model validates it block by block, an error naming the block",
          "[data][byte_dataset][trainer]") {
  auto data = byte_numbered<float>(50, 10, 3);
  const dptrain::SoftmaxRegression<float> model(10, 3);
  CHECK_NOTHROW(dptrain::detail::validate_rows(model, data, 16));
  data.targets[37] = 3;  // out of range: row 5 of the block that starts at row 32
  CHECK_THROWS_WITH(dptrain::detail::validate_rows(model, data, 16),
                    Catch::StartsWith("dptrain: in rows 32 to 47 of the data set (the rows below count from 32): ") &&
                        Catch::Contains("label 3 in row 5 is out of range"));
  dptrain::DataParallelTrainer trainer({.threads = 1, .batch_size = 8, .epochs = 1}, dptrain::Sgd{.lr = 0.1});
  dptrain::Vector<float> theta = model.init_parameters();
  CHECK_THROWS_AS(trainer.fit(model, theta, data), dptrain::invalid_argument);
}

TEST_CASE("ByteDataset: subset, train_validation_split, shard_of and k_fold take the same rows as for its dense copy",
          "[data][byte_dataset]") {
  const auto bytes = byte_numbered<float>(40, 20);
  const auto floats = dense_copy(bytes);

  const std::vector<Index> rows{39, 0, 7, 7};
  const auto part = dptrain::subset(bytes, rows);
  REQUIRE(part.size() == 4);
  CHECK(part.scale == bytes.scale);
  CHECK(part.offset == bytes.offset);
  CHECK(dense_copy(part).features == dptrain::subset(floats, rows).features);

  const auto [train, validation] = dptrain::train_validation_split(bytes, 0.25, 9);
  const auto [dense_train, dense_validation] = dptrain::train_validation_split(floats, 0.25, 9);
  CHECK(dense_copy(train).features == dense_train.features);
  CHECK(dense_copy(validation).features == dense_validation.features);
  CHECK(validation.targets == dense_validation.targets);

  const auto shard = dptrain::shard_of(bytes, 1, 3);
  CHECK(dense_copy(shard).features == dptrain::shard_of(floats, 1, 3).features);

  const dptrain::KFold folds = dptrain::k_fold(bytes, {.folds = 4, .seed = 2, .stratified = true});
  CHECK(folds.training_rows(2) ==
        dptrain::k_fold(floats, {.folds = 4, .seed = 2, .stratified = true}).training_rows(2));
  const auto [fold_train, fold_validation] = folds.split(bytes, 2);
  CHECK(fold_validation.size() == static_cast<Index>(folds.validation_rows(2).size()));
  CHECK(dense_copy(fold_train).features == dptrain::subset(floats, folds.training_rows(2)).features);

  const std::vector<Index> out_of_range{3, 40};
  CHECK_THROWS_WITH(dptrain::subset(bytes, out_of_range), Catch::Contains("row index 40 (at position 1)"));
}
