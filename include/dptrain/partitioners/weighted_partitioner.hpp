// SPDX-License-Identifier: MIT
// WeightedPartitioner: contiguous micro-batches in proportion to per-worker shares.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Splits a minibatch into contiguous micro-batches in proportion to per-worker shares.
 *
 * Worker t's micro-batch is [round(B·S_t / S), round(B·S_{t+1} / S)) where S_t is the sum of the
 * shares before t and S their total, so sizes follow the shares and always add up to B.
 * Choose it when workers differ in speed (e.g. a core shared with another job): give the slower
 * ones smaller shares so that all reach the barrier together. With several processes (MPI) the
 * workers are every process's threads, rank 0's first, then rank 1's, …: one share for each.
 *
 * @code
 * dptrain::WeightedPartitioner p{.shares = {2, 1, 1}};
 * p.range(8, 3, 0);  // {begin = 0, size = 4}
 * @endcode
 */
struct WeightedPartitioner {
  std::vector<double> shares;  ///< one non-negative share per worker (of every process), not all zero

  /// @throws dptrain::invalid_argument if there is not one share per worker, or shares are bad.
  void validate(Index workers) const {
    if (static_cast<Index>(shares.size()) != workers)
      throw invalid_argument("dptrain::WeightedPartitioner: shares must hold one share per worker, got " +
                             std::to_string(shares.size()) + " shares for " + std::to_string(workers) + " workers");
    double total = 0;
    for (std::size_t i = 0; i < shares.size(); ++i) {
      const double s = shares[i];
      if (!std::isfinite(s) || s < 0)
        throw invalid_argument("dptrain::WeightedPartitioner: shares[" + std::to_string(i) +
                               "] must be finite and >= 0, got " + std::to_string(s));
      total += s;
    }
    if (total <= 0) throw invalid_argument("dptrain::WeightedPartitioner: the shares add up to zero");
  }

  /// Worker `rank`'s share of a minibatch of `batch` samples; requires validate(workers). Thread-safe.
  [[nodiscard]] IndexRange range(Index batch, Index workers, Index rank) const noexcept {
    double before = 0, total = 0;
    for (Index t = 0; t < workers; ++t) {
      if (t < rank) before += shares[static_cast<std::size_t>(t)];
      total += shares[static_cast<std::size_t>(t)];
    }
    const double mine = shares[static_cast<std::size_t>(rank)];
    const auto begin = static_cast<Index>(std::llround(static_cast<double>(batch) * before / total));
    const auto end = rank + 1 == workers
                         ? batch
                         : static_cast<Index>(std::llround(static_cast<double>(batch) * (before + mine) / total));
    return {begin, end - begin};
  }
};

}  // namespace dptrain
