// SPDX-License-Identifier: MIT
// Vocabulary types shared by every part of dptrain: sizes, vectors, matrices, ranges.
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>

namespace dptrain {

/// Sizes and indices, as in Eigen.
using Index = Eigen::Index;

/// Integer class label (0-based) for classification targets.
using Label = std::int32_t;

/// Dense column vector; θ, gradients and optimizer state are flat vectors of this type.
template <class Scalar>
using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

/// Dense row-major matrix: one sample per row, so a contiguous micro-batch is a zero-copy block.
template <class Scalar>
using RowMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Mutable view of a vector held elsewhere (a buffer, a slice of θ).
template <class Scalar>
using VectorMap = Eigen::Map<Vector<Scalar>>;

/// Read-only view of a vector held elsewhere.
template <class Scalar>
using ConstVectorMap = Eigen::Map<const Vector<Scalar>>;

/// Boundary type for functions that accept any contiguous vector without copying.
template <class Scalar>
using VectorRef = Eigen::Ref<Vector<Scalar>>;

/// Read-only boundary type for any contiguous vector.
template <class Scalar>
using ConstVectorRef = Eigen::Ref<const Vector<Scalar>>;

/// Mutable view of a row-major matrix held elsewhere, its rows contiguous (a model's residuals).
template <class Scalar>
using RowMatrixMap = Eigen::Map<RowMatrix<Scalar>>;

/// Read-only view of a row-major matrix held elsewhere.
template <class Scalar>
using ConstRowMatrixMap = Eigen::Map<const RowMatrix<Scalar>>;

/// Half-open range [begin, begin + size) of indices.
struct IndexRange {
  Index begin = 0;
  Index size = 0;
  [[nodiscard]] constexpr Index end() const noexcept { return begin + size; }
  [[nodiscard]] constexpr bool empty() const noexcept { return size == 0; }
  friend constexpr bool operator==(const IndexRange&, const IndexRange&) = default;
};

/// One worker's share of a training step, as the trainer hands it to a partitioner's observe():
/// the samples of its micro-batches and the seconds its gradient took (gather and model).
struct WorkerLoad {
  Index samples = 0;
  double seconds = 0;
};

/// Bytes per cache line; per-thread data is aligned and padded to it to avoid false sharing.
inline constexpr std::size_t cache_line_bytes = 64;

}  // namespace dptrain
