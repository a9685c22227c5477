// SPDX-License-Identifier: MIT
// EvenPartitioner: contiguous micro-batches whose sizes differ by at most one.
#pragma once

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Splits a minibatch into contiguous micro-batches whose sizes differ by at most one;
 * the first `batch % workers` workers take one sample more.
 *
 * With more workers than samples the trailing workers get empty micro-batches; they still take
 * part in every collective. Choose it when workers are equally fast (the default).
 *
 * @code
 * dptrain::EvenPartitioner{}.range(10, 4, 1);  // {begin = 3, size = 3}: sizes 3, 3, 2, 2
 * @endcode
 */
struct EvenPartitioner {
  /// Worker `rank`'s share of a minibatch of `batch` samples split among `workers`. Thread-safe.
  [[nodiscard]] constexpr IndexRange range(Index batch, Index workers, Index rank) const noexcept {
    const Index base = batch / workers, extra = batch % workers;
    return {rank * base + (rank < extra ? rank : extra), base + (rank < extra ? 1 : 0)};
  }
};

}  // namespace dptrain
