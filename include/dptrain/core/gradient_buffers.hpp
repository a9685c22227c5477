// SPDX-License-Identifier: MIT
// GradientBuffers and ShardLayout: the per-thread gradient buffers that an aggregator reduces.
#pragma once

#include <span>

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Splits [0, n) into one cache-line-aligned shard per thread.
 *
 * Shard boundaries are multiples of 64 bytes, so two threads never write the same
 * cache line of θ, of a gradient buffer or of optimizer state. Trailing shards may be empty.
 */
template <class Scalar>
struct ShardLayout {
  Index length = 0;  ///< n, the number of parameters
  Index shards = 1;  ///< N, the number of threads

  /// Elements per cache line.
  static constexpr Index line = static_cast<Index>(cache_line_bytes / sizeof(Scalar));

  [[nodiscard]] constexpr IndexRange shard(Index t) const noexcept {
    const Index lines = (length + line - 1) / line;
    const Index per = lines / shards, extra = lines % shards;
    const Index first = t * per + (t < extra ? t : extra);
    const Index count = per + (t < extra ? 1 : 0);
    const Index begin = first * line < length ? first * line : length;
    const Index end = (first + count) * line < length ? (first + count) * line : length;
    return {begin, end - begin};
  }
};

/**
 * @brief The N per-thread gradient buffers that an aggregator reduces.
 *
 * buffer(t) holds worker t's gradient; each is cache-line aligned and separately allocated.
 */
template <class Scalar>
struct GradientBuffers {
  std::span<Scalar* const> data;  ///< one pointer per thread
  ShardLayout<Scalar> layout;

  [[nodiscard]] Index count() const noexcept { return static_cast<Index>(data.size()); }
  [[nodiscard]] Index length() const noexcept { return layout.length; }
  [[nodiscard]] VectorMap<Scalar> buffer(Index t) const noexcept {
    return {data[static_cast<std::size_t>(t)], layout.length};
  }
  /// Shard `s` of buffer `t`.
  [[nodiscard]] VectorMap<Scalar> shard(Index t, Index s) const noexcept {
    const IndexRange r = layout.shard(s);
    return {data[static_cast<std::size_t>(t)] + r.begin, r.size};
  }
};

}  // namespace dptrain
