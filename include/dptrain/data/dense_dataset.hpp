// SPDX-License-Identifier: MIT
// DenseDataset: samples as rows of a row-major matrix, with one target per row.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/checksum.hpp"
#include "dptrain/data/gather_asks.hpp"

namespace dptrain {

/**
 * @brief A dense data set: `features` holds one sample per row, `targets` one target per sample.
 *
 * The trainer reads batches from it with rows() (contiguous, zero-copy) or gather()
 * (shuffled rows copied into a per-worker buffer allocated once by make_buffer()).
 * Reading is thread-safe; the data set is never modified by training.
 *
 * @code
 * dptrain::DenseDataset<double> data{.features = X, .targets = y};
 * @endcode
 */
template <class Scalar, class Target = Scalar>
struct DenseDataset {
  using scalar_type = Scalar;
  using target_type = Target;
  using batch_type = DenseBatch<Scalar, Target>;

  /// Per-worker storage for gathered (shuffled) batches.
  struct Buffer {
    RowMatrix<Scalar> features;
    Vector<Target> targets;
    GatherAsks asks;  ///< how many coming rows gather() asks for: timed on its first calls
  };

  RowMatrix<Scalar> features;
  Vector<Target> targets;

  [[nodiscard]] Index size() const noexcept { return features.rows(); }
  [[nodiscard]] Index dim() const noexcept { return features.cols(); }

  /// @throws dptrain::invalid_argument when rows and targets disagree in number.
  void validate() const {
    if (features.rows() != targets.size())
      throw invalid_argument("dptrain::DenseDataset: the data set has " + std::to_string(features.rows()) +
                             " feature rows but " + std::to_string(targets.size()) + " targets");
  }

  /// A 64-bit hash of every feature and target (one pass at memory speed): MPI ranks of
  /// replicated data compare it before the first step.
  [[nodiscard]] std::uint64_t checksum() const noexcept {
    const std::uint64_t h = detail::checksum(
        features.data(), sizeof(Scalar) * static_cast<std::size_t>(features.size()), static_cast<std::uint64_t>(dim()));
    return detail::checksum(targets.data(), sizeof(Target) * static_cast<std::size_t>(targets.size()), h);
  }

  /// Rows [begin, begin + count) as a view: no copy.
  [[nodiscard]] batch_type rows(Index begin, Index count) const {
    return {features.middleRows(begin, count), targets.segment(begin, count)};
  }

  /// Storage for up to `max_rows` gathered rows.
  [[nodiscard]] Buffer make_buffer(Index max_rows) const {
    return {RowMatrix<Scalar>(max_rows, dim()), Vector<Target>(max_rows), GatherAsks{}};
  }

  /// Copies the listed rows into `buffer` and returns a view of them; allocates nothing.
  [[nodiscard]] batch_type gather(std::span<const Index> rows, Buffer& buffer) const {
    const auto count = static_cast<Index>(rows.size());
    eigen_assert(buffer.features.cols() == dim() && "gather: a buffer from another data set's make_buffer()");
    buffer.asks.run(count, [&](auto rows_ahead) { copy_rows<decltype(rows_ahead)::value>(rows, buffer); });
    return {buffer.features.topRows(count), buffer.targets.head(count)};
  }

 private:
  // Shuffled rows of a data set larger than the caches each start with a memory latency that the
  // hardware prefetcher cannot foresee. So copy_row() asks for the coming rows, one cache line at
  // a time, interleaved with its own copy: each line of each of the next `Ahead` rows, so that
  // every line is asked for `Ahead` times, a row's copy apart. Asking twice in a row gained
  // nothing, so the repeats count by coming later, presumably once a miss buffer has freed up;
  // asking for a whole row at once stalled on the miss buffers. How many rows pays off depends on
  // the CPU, so the buffer's GatherAsks chooses it (benchmarks/RESULTS.md, sessions 3, 14, 15).
  static_assert(sizeof(Scalar) <= cache_line_bytes);
  static constexpr Index scalars_per_line = static_cast<Index>(cache_line_bytes / sizeof(Scalar));

  // One cache line, copied as Eigen packets: std::copy_n of 64 bytes became a call to memmove per
  // line under GCC's Intel tunings (-march=native on an AVX-512 Xeon), a quarter of the softmax step.
  using Line = Eigen::Array<Scalar, scalars_per_line, 1>;

  [[nodiscard]] const Scalar* row_data(Index row) const noexcept { return features.data() + row * dim(); }

  template <int Ahead>
  void copy_rows(std::span<const Index> rows, Buffer& buffer) const noexcept {
    const std::size_t count = rows.size();
    for (std::size_t i = 0; i < count; ++i) {
      std::array<const Scalar*, Ahead> ahead;
      for (std::size_t k = 0; k < ahead.size(); ++k) ahead[k] = row_data(rows[std::min(i + 1 + k, count - 1)]);
      copy_row(row_data(rows[i]), ahead, buffer.features.row(static_cast<Index>(i)).data());
      buffer.targets[static_cast<Index>(i)] = targets[rows[i]];
    }
  }

  // Copies the row at `in` to `out`, asking for the rows at `ahead` alongside.
  template <std::size_t Ahead>
  void copy_row(const Scalar* in, [[maybe_unused]] const std::array<const Scalar*, Ahead>& ahead,
                Scalar* out) const noexcept {
    const Index d = dim(), whole_lines = d - d % scalars_per_line;
    for (Index j = 0; j < whole_lines; j += scalars_per_line) {
#if defined(__GNUC__)
      for (const Scalar* next : ahead) __builtin_prefetch(next + j);
#endif
      Eigen::Map<Line>(out + j) = Eigen::Map<const Line>(in + j);
    }
    std::copy(in + whole_lines, in + d, out + whole_lines);
  }
};

}  // namespace dptrain
