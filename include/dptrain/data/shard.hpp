// SPDX-License-Identifier: MIT
// shard_of: one rank's share of a data set, the same size on every rank (MpiData::sharded).
#pragma once

#include <string>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/subset.hpp"

namespace dptrain {

/**
 * @brief Rank `rank`'s shard of `data` among `ranks`: rows rank, rank + ranks, rank + 2·ranks, …,
 * ⌊n / ranks⌋ of them, so every rank's shard has the same size (the n mod ranks rows at the end
 * belong to no shard). Strided rather than contiguous, so a file sorted by class still gives
 * every rank every class.
 *
 * For a data set that fits in memory; one that does not is split into files beforehand, one per
 * rank, of equal row counts (MpiData::sharded checks that they are equal).
 *
 * @code
 * auto mine = dptrain::shard_of(data, rank, ranks);  // works for DenseDataset and SparseDataset
 * @endcode
 * @throws dptrain::invalid_argument unless 0 ≤ rank < ranks, or if the shards would be empty
 */
template <class Data>
[[nodiscard]] Data shard_of(const Data& data, Index rank, Index ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw invalid_argument("dptrain::shard_of: rank " + std::to_string(rank) + " is not one of " +
                           std::to_string(ranks) + " ranks");
  const Index rows = data.size() / ranks;
  if (rows == 0)
    throw invalid_argument("dptrain::shard_of: " + std::to_string(data.size()) + " rows make no shard for each of " +
                           std::to_string(ranks) + " ranks");
  std::vector<Index> mine(static_cast<std::size_t>(rows));
  for (Index i = 0; i < rows; ++i) mine[static_cast<std::size_t>(i)] = rank + i * ranks;
  return subset(data, mine);
}

}  // namespace dptrain
