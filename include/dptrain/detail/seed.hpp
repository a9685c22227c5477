// SPDX-License-Identifier: MIT
// Derives independent RNG seeds from (seed, stream) without allocating (std::seed_seq would).
#pragma once

#include <cstdint>

namespace dptrain::detail {

/// SplitMix64 finaliser (Steele, Lea & Flood 2014) of seed and stream: nearby inputs give
/// unrelated outputs, so (seed, epoch) and (seed, epoch + 1) seed unrelated generators.
[[nodiscard]] constexpr std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) noexcept {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace dptrain::detail
