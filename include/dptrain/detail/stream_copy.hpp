// SPDX-License-Identifier: MIT
// A copy whose stores bypass the caches (non-temporal stores), for data that other cores read next.
//
// Why: when one core writes cache lines that another core has read, every store must first
// invalidate the other core's copy. On the development VM (two vCPUs) that made writing 400 KB of
// such lines take 67 µs against 7 µs for lines no other core holds; streaming stores wrote them
// in 30 µs (benchmarks/RESULTS.md). The trainer publishes large θ shards this way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dptrain/core/types.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dptrain::detail {

/// dst[0 … n) = src[0 … n), with non-temporal stores on x86 (a plain copy elsewhere). The ranges
/// must not overlap. Ends with a store fence, so the data are visible to the next barrier.
template <class Scalar>
void stream_copy(Scalar* dst, const Scalar* src, Index n) noexcept {
  auto* out = reinterpret_cast<unsigned char*>(dst);
  const auto* in = reinterpret_cast<const unsigned char*>(src);
  std::size_t bytes = static_cast<std::size_t>(n) * sizeof(Scalar);
#if defined(__SSE2__)
  // Plain stores up to the first 16-byte boundary of dst, then 16 bytes per streaming store.
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(out) % 16;
  const std::size_t head = misalignment == 0 ? 0 : std::min<std::size_t>(bytes, 16 - misalignment);
  std::memcpy(out, in, head);
  out += head, in += head, bytes -= head;
  for (; bytes >= 16; bytes -= 16, out += 16, in += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(out), _mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  _mm_sfence();
#endif
  std::memcpy(out, in, bytes);
}

}  // namespace dptrain::detail
