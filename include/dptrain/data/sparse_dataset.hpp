// SPDX-License-Identifier: MIT
// SparseDataset: samples as rows of a compressed row-major sparse matrix (CSR), with one target per row.
#pragma once

#include <Eigen/SparseCore>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/checksum.hpp"

namespace dptrain {

/**
 * @brief A sparse data set: `features` (compressed CSR) holds one sample per row, `targets` one
 * target per sample.
 *
 * The trainer reads batches from it with rows() (contiguous, zero-copy) or gather() (shuffled
 * rows copied into a per-worker buffer sized once by make_buffer(), so a step allocates
 * nothing). Reading is thread-safe; the data set is never modified by training.
 *
 * `features` must be in compressed mode (as read_libsvm() returns it, or after
 * `makeCompressed()`); validate() checks this.
 *
 * @code
 * dptrain::SparseRowMatrix<double> X(3, 1000);
 * X.setFromTriplets(triplets.begin(), triplets.end());   // compressed afterwards
 * dptrain::SparseDataset<double, dptrain::Label> data{.features = std::move(X), .targets = labels};
 * data.validate();
 * @endcode
 */
template <class Scalar, class Target = Scalar>
struct SparseDataset {
  using scalar_type = Scalar;
  using target_type = Target;
  using batch_type = SparseBatch<Scalar, Target>;
  using matrix_type = SparseRowMatrix<Scalar>;

  /// Per-worker CSR storage for gathered (shuffled) batches; filled by gather().
  struct Buffer {
    std::vector<Index> outer;    ///< row starts, max_rows + 1
    std::vector<Index> inner;    ///< column indices, the worst-case non-zero count
    std::vector<Scalar> values;  ///< values, as many as `inner`
    Vector<Target> targets;      ///< max_rows targets
  };

  matrix_type features;
  Vector<Target> targets;

  /// The number of samples.
  [[nodiscard]] Index size() const noexcept { return features.rows(); }
  /// The number of features per sample (columns).
  [[nodiscard]] Index dim() const noexcept { return features.cols(); }
  /// The number of stored entries.
  [[nodiscard]] Index nonzeros() const noexcept { return features.nonZeros(); }

  /// @throws dptrain::invalid_argument when rows and targets disagree in number, or `features`
  /// is not compressed.
  void validate() const {
    if (features.rows() != targets.size())
      throw invalid_argument("dptrain::SparseDataset: the data set has " + std::to_string(features.rows()) +
                             " feature rows but " + std::to_string(targets.size()) + " targets");
    if (!features.isCompressed())
      throw invalid_argument("dptrain::SparseDataset: features must be compressed; call features.makeCompressed()");
  }

  /// A 64-bit hash of every row's columns and values and every target (one pass at memory
  /// speed): MPI ranks of replicated data compare it before the first step.
  [[nodiscard]] std::uint64_t checksum() const noexcept {
    std::uint64_t h = static_cast<std::uint64_t>(dim());
    for (Index r = 0; r < size(); ++r) {  // row by row: an uncompressed matrix has gaps between rows
      const Index begin = features.outerIndexPtr()[r], count = row_nonzeros(r);
      h = detail::checksum(&count, sizeof count, h);
      h = detail::checksum(features.innerIndexPtr() + begin, sizeof(Index) * static_cast<std::size_t>(count), h);
      h = detail::checksum(features.valuePtr() + begin, sizeof(Scalar) * static_cast<std::size_t>(count), h);
    }
    return detail::checksum(targets.data(), sizeof(Target) * static_cast<std::size_t>(targets.size()), h);
  }

  /// Rows [begin, begin + count) as a view of the data set's own arrays: no copy.
  [[nodiscard]] batch_type rows(Index begin, Index count) const {
    const Index* outer = features.outerIndexPtr() + begin;
    return {Eigen::Map<const matrix_type>(count, dim(), outer[count] - outer[0], outer, features.innerIndexPtr(),
                                          features.valuePtr()),
            targets.segment(begin, count)};
  }

  /**
   * @brief Storage for up to `max_rows` gathered rows, sized for the worst case: the max_rows
   * rows with the most non-zeros. The only allocation.
   * @throws dptrain::invalid_argument if max_rows < 0.
   */
  [[nodiscard]] Buffer make_buffer(Index max_rows) const {
    if (max_rows < 0)
      throw invalid_argument("dptrain::SparseDataset::make_buffer: max_rows must be >= 0, got " +
                             std::to_string(max_rows));
    const Index rows = std::min(max_rows, size());
    std::vector<Index> counts(static_cast<std::size_t>(size()));
    for (Index r = 0; r < size(); ++r) counts[static_cast<std::size_t>(r)] = row_nonzeros(r);
    std::nth_element(counts.begin(), counts.begin() + rows, counts.end(), std::greater<>());
    Index capacity = 0;
    for (Index r = 0; r < rows; ++r) capacity += counts[static_cast<std::size_t>(r)];
    Buffer buffer{std::vector<Index>(static_cast<std::size_t>(max_rows) + 1, 0),
                  std::vector<Index>(static_cast<std::size_t>(capacity)),
                  std::vector<Scalar>(static_cast<std::size_t>(capacity)), Vector<Target>(max_rows)};
    return buffer;
  }

  /**
   * @brief Copies the listed rows into `buffer` (in CSR form) and returns a view of them;
   * allocates nothing.
   * @throws dptrain::invalid_argument if the rows do not fit the buffer: more rows than
   * make_buffer(max_rows) was given, or (with repeated rows) more non-zeros than the worst case
   * it was sized for.
   */
  [[nodiscard]] batch_type gather(std::span<const Index> rows, Buffer& buffer) const {
    const auto count = static_cast<Index>(rows.size());
    if (count + 1 > static_cast<Index>(buffer.outer.size()))
      throw invalid_argument("dptrain::SparseDataset::gather: got " + std::to_string(count) +
                             " rows, the buffer was made for " + std::to_string(buffer.outer.size() - 1));
    const Index* outer = features.outerIndexPtr();
    Index total = 0;
    for (const Index r : rows) total += outer[r + 1] - outer[r];
    if (total > static_cast<Index>(buffer.inner.size()))
      throw invalid_argument("dptrain::SparseDataset::gather: the rows have " + std::to_string(total) +
                             " non-zeros, the buffer holds " + std::to_string(buffer.inner.size()));
    const Index* inner = features.innerIndexPtr();
    const Scalar* values = features.valuePtr();
    Index at = 0;
    buffer.outer[0] = 0;
    for (Index i = 0; i < count; ++i) {
      const Index r = rows[static_cast<std::size_t>(i)];
      const Index begin = outer[r], end = outer[r + 1];
      std::copy(inner + begin, inner + end, buffer.inner.data() + at);
      std::copy(values + begin, values + end, buffer.values.data() + at);
      at += end - begin;
      buffer.outer[static_cast<std::size_t>(i) + 1] = at;
      buffer.targets[i] = targets[r];
    }
    return {
        Eigen::Map<const matrix_type>(count, dim(), at, buffer.outer.data(), buffer.inner.data(), buffer.values.data()),
        buffer.targets.head(count)};
  }

 private:
  [[nodiscard]] Index row_nonzeros(Index r) const {
    return features.isCompressed() ? features.outerIndexPtr()[r + 1] - features.outerIndexPtr()[r]
                                   : features.innerNonZeroPtr()[r];
  }
};

}  // namespace dptrain
