// SPDX-License-Identifier: MIT
// DenseDataset: samples as rows of a row-major matrix, with one target per row.
#pragma once

#include <span>
#include <string>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief A micro-batch of dense samples: a zero-copy view of rows and their targets.
 *
 * @tparam Scalar float or double.
 * @tparam Target the target type: `Scalar` for regression, `Label` for classification.
 */
template <class Scalar, class Target>
struct DenseBatch {
  Eigen::Ref<const RowMatrix<Scalar>> features;  ///< size() × dim, one sample per row
  Eigen::Ref<const Vector<Target>> targets;      ///< size() targets

  [[nodiscard]] Index size() const noexcept { return features.rows(); }
};

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
  };

  RowMatrix<Scalar> features;
  Vector<Target> targets;

  [[nodiscard]] Index size() const noexcept { return features.rows(); }
  [[nodiscard]] Index dim() const noexcept { return features.cols(); }

  /// @throws dptrain::invalid_argument when rows and targets disagree in number.
  void validate() const {
    if (features.rows() != targets.size())
      throw invalid_argument("dptrain: data set has " + std::to_string(features.rows()) + " feature rows but " +
                             std::to_string(targets.size()) + " targets");
  }

  /// Rows [begin, begin + count) as a view: no copy.
  [[nodiscard]] batch_type rows(Index begin, Index count) const {
    return {features.middleRows(begin, count), targets.segment(begin, count)};
  }

  /// Storage for up to `max_rows` gathered rows.
  [[nodiscard]] Buffer make_buffer(Index max_rows) const {
    return {RowMatrix<Scalar>(max_rows, dim()), Vector<Target>(max_rows)};
  }

  /// Copies the listed rows into `buffer` and returns a view of them; allocates nothing.
  [[nodiscard]] batch_type gather(std::span<const Index> rows, Buffer& buffer) const {
    const auto count = static_cast<Index>(rows.size());
    for (Index i = 0; i < count; ++i) {
      // Shuffled rows of a data set larger than the caches each start with a memory latency the
      // hardware prefetcher cannot foresee: ask for a row a few rows ahead (7–11% less time per
      // softmax-regression step on Fashion-MNIST, 1 and 2 threads; benchmarks/RESULTS.md).
      if (i + prefetch_distance < count) prefetch_row(rows[static_cast<std::size_t>(i + prefetch_distance)]);
      buffer.features.row(i) = features.row(rows[static_cast<std::size_t>(i)]);
      buffer.targets[i] = targets[rows[static_cast<std::size_t>(i)]];
    }
    return {buffer.features.topRows(count), buffer.targets.head(count)};
  }

 private:
  static constexpr Index prefetch_distance = 4;

  void prefetch_row(Index row) const noexcept {
#if defined(__GNUC__)
    const char* begin = reinterpret_cast<const char*>(features.data() + row * dim());
    const auto bytes = static_cast<std::size_t>(dim()) * sizeof(Scalar);
    for (std::size_t offset = 0; offset < bytes; offset += cache_line_bytes) __builtin_prefetch(begin + offset);
#else
    static_cast<void>(row);
#endif
  }
};

}  // namespace dptrain
