// SPDX-License-Identifier: MIT
// The model's parameter groups, checked once per fit() and cut along the threads' slices of θ.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace dptrain::detail {

/**
 * @brief The model's parameter groups (its parameter_groups(), checked), or all of θ as one group
 * when it declares none.
 * @throws dptrain::invalid_argument when the groups do not cover θ in order, each parameter once,
 *         or one is empty
 */
template <class M>
[[nodiscard]] std::vector<IndexRange> model_parameter_groups(const M& model) {
  const Index n = model.num_parameters();
  if constexpr (DeclaresParameterGroups<M>) {
    std::vector<IndexRange> groups = model.parameter_groups();
    Index end = 0;
    for (const IndexRange& g : groups) {
      if (g.begin != end || g.size < 1)
        throw invalid_argument(
            "dptrain::DataParallelTrainer: the model's parameter_groups() must cover theta in order, each "
            "parameter once, with no empty group; got [" +
            std::to_string(g.begin) + ", " + std::to_string(g.end()) + ") after one that ends at " +
            std::to_string(end));
      end = g.end();
    }
    if (end != n)
      throw invalid_argument("dptrain::DataParallelTrainer: the model's parameter_groups() end at " +
                             std::to_string(end) + " but theta has " + std::to_string(n) + " parameters");
    return groups;
  } else {
    return {{0, n}};
  }
}

/**
 * @brief The groups of each thread's slice of θ, as GroupPieces relative to the slice's start,
 * built once before the first step so that a step hands them out without allocating.
 *
 * A piece is also cut where this process's part of θ begins and ends: each process counts the
 * sums of its own part only, so that the sum over the processes counts every element once and
 * comes out the same on each (every process holds the same θ and reduced gradient).
 */
class SliceGroups {
 public:
  SliceGroups() = default;

  /// Cuts `groups` (a tiling of θ) along the shards of `layout`; `counted` is this process's part.
  template <class Scalar>
  SliceGroups(const std::vector<IndexRange>& groups, const ShardLayout<Scalar>& layout, IndexRange counted)
      : count_(static_cast<Index>(groups.size())) {
    first_.reserve(static_cast<std::size_t>(layout.shards) + 1);
    for (Index t = 0; t < layout.shards; ++t) {
      first_.push_back(pieces_.size());
      const IndexRange shard = layout.shard(t);
      for (Index g = 0; g < count_; ++g) {
        const IndexRange group = groups[static_cast<std::size_t>(g)];
        const Index begin = std::max(group.begin, shard.begin), end = std::min(group.end(), shard.end());
        // [begin, end) in up to three pieces: before, inside and after the counted part.
        const Index cuts[] = {begin, std::clamp(counted.begin, begin, end), std::clamp(counted.end(), begin, end), end};
        for (std::size_t k = 0; k + 1 < std::size(cuts); ++k)
          if (cuts[k] < cuts[k + 1])
            pieces_.push_back({.range = {cuts[k] - shard.begin, cuts[k + 1] - cuts[k]}, .group = g, .counted = k == 1});
      }
    }
    first_.push_back(pieces_.size());
  }

  /// The number of groups.
  [[nodiscard]] Index count() const noexcept { return count_; }

  /// The pieces of slice t, in order; they tile it.
  [[nodiscard]] std::span<const GroupPiece> of(Index t) const noexcept {
    if (first_.empty()) return {};
    const auto k = static_cast<std::size_t>(t);
    return std::span<const GroupPiece>(pieces_).subspan(first_[k], first_[k + 1] - first_[k]);
  }

 private:
  Index count_ = 0;
  std::vector<GroupPiece> pieces_;  // slice 0's, then slice 1's, …
  std::vector<std::size_t> first_;  // slice t's are pieces_[first_[t] … first_[t + 1])
};

}  // namespace dptrain::detail
