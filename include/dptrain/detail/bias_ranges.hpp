// SPDX-License-Identifier: MIT
// The model's bias ranges, checked once per fit() and cut along the threads' slices of θ.
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

namespace dptrain::detail {

/**
 * @brief The model's biases (its bias_ranges(), checked), or none when it declares none.
 * @throws dptrain::invalid_argument when the ranges are not increasing, disjoint and within θ,
 *         or when the optimizer's decay_biases is false and the model declares no biases (the
 *         option would silently decay them).
 */
template <class M, class O>
[[nodiscard]] std::vector<IndexRange> model_biases(const M& model, const O& optimizer) {
  if constexpr (DeclaresBiases<M>) {
    std::vector<IndexRange> ranges = model.bias_ranges();
    const Index n = model.num_parameters();
    Index end = 0;
    for (const IndexRange& r : ranges) {
      if (r.size < 0 || r.begin < end || r.end() > n)
        throw invalid_argument(
            "dptrain::DataParallelTrainer: the model's bias_ranges() must be increasing, disjoint "
            "and within theta's " +
            std::to_string(n) + " parameters, got [" + std::to_string(r.begin) + ", " + std::to_string(r.end()) +
            ") after one that ends at " + std::to_string(end));
      end = r.end();
    }
    return ranges;
  } else {
    if constexpr (requires { optimizer.decay_biases; })
      if (!optimizer.decay_biases)
        throw invalid_argument(
            "dptrain::DataParallelTrainer: the optimizer's decay_biases is false, but the model does not say "
            "which parameters are biases; give it `std::vector<IndexRange> bias_ranges() const` (docs/models.md) "
            "or keep decay_biases = true");
    return {};
  }
}

/**
 * @brief The biases of each thread's slice of θ, relative to the slice's start (UpdateSlice::biases):
 * built once before the first step, so that a step hands them out without allocating.
 */
class SliceBiases {
 public:
  SliceBiases() = default;

  /// Cuts `biases` (ranges of θ, increasing and disjoint) along the shards of `layout`.
  template <class Scalar>
  SliceBiases(const std::vector<IndexRange>& biases, const ShardLayout<Scalar>& layout) {
    first_.reserve(static_cast<std::size_t>(layout.shards) + 1);
    for (Index t = 0; t < layout.shards; ++t) {
      first_.push_back(ranges_.size());
      const IndexRange shard = layout.shard(t);
      for (const IndexRange& bias : biases) {
        const Index begin = std::max(bias.begin, shard.begin), end = std::min(bias.end(), shard.end());
        if (begin < end) ranges_.push_back({begin - shard.begin, end - begin});
      }
    }
    first_.push_back(ranges_.size());
  }

  /// The biases of slice t, relative to its start.
  [[nodiscard]] std::span<const IndexRange> of(Index t) const noexcept {
    if (first_.empty()) return {};
    const auto k = static_cast<std::size_t>(t);
    return std::span<const IndexRange>(ranges_).subspan(first_[k], first_[k + 1] - first_[k]);
  }

 private:
  std::vector<IndexRange> ranges_;  // slice 0's, then slice 1's, …
  std::vector<std::size_t> first_;  // slice t's are ranges_[first_[t] … first_[t + 1])
};

}  // namespace dptrain::detail
