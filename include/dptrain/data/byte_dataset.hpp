// SPDX-License-Identifier: MIT
// ByteDataset: samples stored as one byte per feature (pixels), expanded to Scalar as they are read.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/checksum.hpp"
#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/data/gather_asks.hpp"

namespace dptrain {

/// A row-major matrix of bytes: ByteDataset's storage, one sample per row.
using ByteMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/**
 * @brief A dense data set whose features are stored as bytes (images as their pixels, or any
 * feature with at most 256 values) and read as Scalar: feature j of a byte b is
 * `scale[j]·b + offset[j]`.
 *
 * A quarter of the memory of the same data as floats, and a quarter of the bytes read per
 * shuffled batch: where the gather of shuffled rows is a large part of the step (softmax
 * regression on Fashion-MNIST), the step is that much shorter (benchmarks/RESULTS.md, session 17).
 * A model sees the same DenseBatch of Scalar as from a DenseDataset: gather() and rows() expand
 * the bytes into the buffer from make_buffer(), so no row is ever a view of the data set, and
 * unshuffled reads copy too. The features are finite whenever scale and offset are.
 *
 * `scale[j]·b + offset[j]` is computed in Scalar, fused into one rounding where the compiler
 * contracts it: 1/255 as the scale gives values within one unit in the last place of b / 255
 * (read_idx_bytes()). Per-feature scale and offset also standardize: scale = 1/σ and offset =
 * −μ/σ, with the mean μ and standard deviation σ of the feature's values.
 *
 * Reading is thread-safe; the data set is never modified by training.
 *
 * @code
 * dptrain::ByteDataset<float, dptrain::Label> data{.bytes = pixels,  // n × 784, 0 … 255
 *                                                  .targets = labels,
 *                                                  .scale = dptrain::Vector<float>::Constant(784, 1.0f / 255),
 *                                                  .offset = dptrain::Vector<float>::Zero(784)};
 * trainer.fit(model, theta, data);
 * @endcode
 */
template <class Scalar, class Target = Scalar>
struct ByteDataset {
  using scalar_type = Scalar;
  using target_type = Target;
  using batch_type = DenseBatch<Scalar, Target>;

  /// Per-worker storage for the expanded rows of a batch: a DenseDataset's, as what it holds is the same.
  using Buffer = typename DenseDataset<Scalar, Target>::Buffer;

  ByteMatrix bytes;        ///< one sample per row
  Vector<Target> targets;  ///< one per row
  Vector<Scalar> scale;    ///< per feature: x = scale·b + offset
  Vector<Scalar> offset;   ///< per feature

  [[nodiscard]] Index size() const noexcept { return bytes.rows(); }
  [[nodiscard]] Index dim() const noexcept { return bytes.cols(); }

  /// @throws dptrain::invalid_argument when rows and targets disagree in number, when scale or
  /// offset has another length than a row, or when one of them is not finite.
  void validate() const {
    if (bytes.rows() != targets.size())
      throw invalid_argument("dptrain::ByteDataset: the data set has " + std::to_string(bytes.rows()) +
                             " rows of bytes but " + std::to_string(targets.size()) + " targets");
    check_per_feature("scale", scale);
    check_per_feature("offset", offset);
  }

  /// A 64-bit hash of every byte, target, scale and offset (one pass at memory speed): MPI ranks
  /// of replicated data compare it before the first step.
  [[nodiscard]] std::uint64_t checksum() const noexcept {
    std::uint64_t h =
        detail::checksum(bytes.data(), static_cast<std::size_t>(bytes.size()), static_cast<std::uint64_t>(dim()));
    h = detail::checksum(targets.data(), sizeof(Target) * static_cast<std::size_t>(targets.size()), h);
    h = detail::checksum(scale.data(), sizeof(Scalar) * static_cast<std::size_t>(scale.size()), h);
    return detail::checksum(offset.data(), sizeof(Scalar) * static_cast<std::size_t>(offset.size()), h);
  }

  /// Storage for up to `max_rows` rows, read by gather() or rows().
  [[nodiscard]] Buffer make_buffer(Index max_rows) const {
    return {RowMatrix<Scalar>(max_rows, dim()), Vector<Target>(max_rows), GatherAsks{}};
  }

  /// Rows [begin, begin + count), expanded into `buffer`; allocates nothing.
  [[nodiscard]] batch_type rows(Index begin, Index count, Buffer& buffer) const {
    check_buffer(buffer, count);
    for (Index i = 0; i < count; ++i) expand_row(begin + i, std::array<const std::uint8_t*, 0>{}, buffer, i);
    return view(buffer, count);
  }

  /// The listed rows, expanded into `buffer`; allocates nothing.
  [[nodiscard]] batch_type gather(std::span<const Index> rows, Buffer& buffer) const {
    const auto count = static_cast<Index>(rows.size());
    check_buffer(buffer, count);
    buffer.asks.run(count, [&](auto rows_ahead) { expand_rows<decltype(rows_ahead)::value>(rows, buffer); });
    return view(buffer, count);
  }

 private:
  static_assert(std::is_floating_point_v<Scalar>, "dptrain::ByteDataset: Scalar must be float or double");

  void check_per_feature(const char* name, const Vector<Scalar>& v) const {
    if (v.size() != dim())
      throw invalid_argument(std::string("dptrain::ByteDataset: ") + name + " has " + std::to_string(v.size()) +
                             " entries for rows of " + std::to_string(dim()) + " features");
    for (Index j = 0; j < v.size(); ++j)
      if (!std::isfinite(v[j]))
        throw invalid_argument(std::string("dptrain::ByteDataset: ") + name + "[" + std::to_string(j) +
                               "] is not finite");
  }

  void check_buffer([[maybe_unused]] const Buffer& buffer, [[maybe_unused]] Index count) const {
    eigen_assert(buffer.features.cols() == dim() && count <= buffer.features.rows() &&
                 "ByteDataset: a buffer from another data set's make_buffer(), or too small");
  }

  [[nodiscard]] static batch_type view(const Buffer& buffer, Index count) {
    return {buffer.features.topRows(count), buffer.targets.head(count)};
  }

  // As DenseDataset::gather(): each line of the coming `Ahead` rows is asked for while a line of
  // this row is expanded (a byte row of 784 features is 12.25 lines).
  template <int Ahead>
  void expand_rows(std::span<const Index> rows, Buffer& buffer) const noexcept {
    const std::size_t count = rows.size();
    for (std::size_t i = 0; i < count; ++i) {
      std::array<const std::uint8_t*, Ahead> ahead;
      for (std::size_t k = 0; k < ahead.size(); ++k) ahead[k] = bytes.row(rows[std::min(i + 1 + k, count - 1)]).data();
      expand_row(rows[i], ahead, buffer, static_cast<Index>(i));
    }
  }

  template <std::size_t Ahead>
  void expand_row(Index row, [[maybe_unused]] const std::array<const std::uint8_t*, Ahead>& ahead, Buffer& buffer,
                  Index at) const noexcept {
    const std::uint8_t* in = bytes.row(row).data();
    Scalar* out = buffer.features.row(at).data();
    const Index d = dim(), whole_lines = d - d % Index{cache_line_bytes};
    for (Index j = 0; j < whole_lines; j += Index{cache_line_bytes}) {
#if defined(__GNUC__)
      for (const std::uint8_t* next : ahead) __builtin_prefetch(next + j);
#endif
      expand_line(in + j, scale.data() + j, offset.data() + j, out + j);
    }
    for (Index j = whole_lines; j < d; ++j) out[j] = static_cast<Scalar>(in[j]) * scale[j] + offset[j];
    buffer.targets[at] = targets[row];
  }

  // One line of bytes: a loop of a fixed count over restrict pointers, which GCC and Clang turn
  // into vector conversions at -O2 already (Eigen 3.4 has no packet of bytes to write it on).
  static void expand_line(const std::uint8_t* __restrict in, const Scalar* __restrict scale,
                          const Scalar* __restrict offset, Scalar* __restrict out) noexcept {
    for (std::size_t t = 0; t < cache_line_bytes; ++t) out[t] = static_cast<Scalar>(in[t]) * scale[t] + offset[t];
  }
};

}  // namespace dptrain
