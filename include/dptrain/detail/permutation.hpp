// SPDX-License-Identifier: MIT
// A seeded permutation of row indices that is the same with every standard library.
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "dptrain/core/types.hpp"

namespace dptrain::detail {

// A uniform draw from [0, bound] by rejection: std::uniform_int_distribution's algorithm
// differs between standard libraries, std::mt19937_64's output does not.
[[nodiscard]] inline std::uint64_t draw_at_most(std::mt19937_64& engine, std::uint64_t bound) {
  if (bound == std::numeric_limits<std::uint64_t>::max()) return engine();
  const std::uint64_t range = bound + 1;
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % range;
  std::uint64_t x = engine();
  while (x >= limit) x = engine();
  return x % range;
}

// 0 … n−1 permuted by a Fisher–Yates shuffle driven by std::mt19937_64(seed): the order of
// train_validation_split and k_fold.
[[nodiscard]] inline std::vector<Index> seeded_permutation(Index n, std::uint64_t seed) {
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index{0});
  std::mt19937_64 engine(seed);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(draw_at_most(engine, i - 1))]);
  return order;
}

}  // namespace dptrain::detail
