// SPDX-License-Identifier: MIT
// Matrix products with bfloat16 inputs and fp32 accumulation (Precision::bf16), on AVX512-BF16
// (vdpbf16ps) where the CPU has it, and the same bits in standard C++ where it has not.
//
// The operands are rounded to bf16 as vcvtneps2bf16 rounds (to nearest even; an fp32 denormal to
// a zero of its sign; a NaN stays a quiet NaN) and packed in pairs along the depth: one 32-bit
// word holds elements 2p (low half) and 2p + 1 (high half). C accumulates in fp32 with exactly
// vdpbf16ps's arithmetic, one pair p of the depth after the other:
//     c ← ftz(fma(a₂ₚ₊₁, b₂ₚ₊₁, daz(c))),   then   c ← ftz(fma(a₂ₚ, b₂ₚ, c))
// (the odd element first; each product exact, each sum rounded to nearest even; a denormal sum
// flushed to a zero of its sign). That model was checked bit for bit on an AMD EPYC Zen 5 against
// the instructions (all 2³² conversions; 48 million dot steps, denormal sums and accumulators
// among them), and it is the order of the pseudo-code in Intel's SDM. So the portable kernel,
// which spells those steps out in standard C++, gives the native kernel's bits on any compiler
// that keeps IEEE arithmetic (no -ffast-math), whatever it contracts; a NaN result is a NaN on
// both, its payload and sign not necessarily the same.
//
// Why the native kernel is compiled with a target attribute, not -mavx512bf16: a program built for
// any x86-64 then uses the instructions on a CPU that has them, and one built with -march=native on
// such a CPU never runs them where the CPU lacks them: the choice is made at run time (kernel()).
// DPTRAIN_PORTABLE_KERNELS forces the portable path, as for the other kernels.
#pragma once

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "dptrain/core/types.hpp"

// The native kernel needs the avx512bf16 target attribute and its __builtin_cpu_supports name:
// GCC 11 and Clang 12 have both.
#if !defined(DPTRAIN_PORTABLE_KERNELS) && defined(__x86_64__) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define DPTRAIN_DETAIL_BF16_NATIVE 1
#include <immintrin.h>
#else
#define DPTRAIN_DETAIL_BF16_NATIVE 0
#endif

// GCC 12's AVX-512 intrinsics start from deliberately undefined registers and then warn that they
// are uninitialized (GCC bug 105593); the warning is about GCC's own header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace dptrain::detail::bf16 {

/// A pair of bf16 values along the depth: element 2p in the low half, 2p + 1 in the high half.
using Word = std::uint32_t;

/// x rounded to bf16 (its upper 16 bits), as vcvtneps2bf16: to nearest even, a denormal to ±0,
/// a NaN quieted.
[[nodiscard]] inline std::uint16_t to_bf16(float x) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((bits >> 16) | 0x40U);
  if ((bits & 0x7f800000U) == 0) return static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
  return static_cast<std::uint16_t>((bits + 0x7fffU + ((bits >> 16) & 1U)) >> 16);
}

/// The float a bf16 value stands for (exact).
[[nodiscard]] inline float widen(std::uint16_t h) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

/// Two floats rounded and packed: `even` in the low half.
[[nodiscard]] inline Word pack(float even, float odd) noexcept {
  return static_cast<Word>(to_bf16(even)) | (static_cast<Word>(to_bf16(odd)) << 16);
}

/// The depth in pairs (an odd depth gets a zero as its last odd element).
[[nodiscard]] constexpr Index pairs(Index depth) noexcept {
  return (depth + 1) / 2;
}

/// Columns of a packed right-hand side: whole vectors of 16 (the kernel's width), zero-padded.
[[nodiscard]] constexpr Index padded_columns(Index columns) noexcept {
  return (columns + 15) / 16 * 16;
}

/// The biased exponents of one pair's row of B (its nonzero elements), for the portable kernel.
struct ExponentRange {
  std::uint8_t odd_low, odd_high, even_low, even_high;  ///< low > high: no nonzero element
};

/// Packed operands of one product C (rows × columns) += A·B of depth k: `lhs` holds A's word of
/// row i and pair p at i·lhs_row + p·lhs_pair (the two layouts below), `rhs` holds B as
/// pairs(k) × padded_columns(columns) words.
struct Operands {
  std::vector<Word> lhs;
  std::vector<Word> rhs;
  Index lhs_row = 0;                     ///< stride between A's rows in lhs
  Index lhs_pair = 0;                    ///< stride between A's pairs in lhs
  std::vector<ExponentRange> exponents;  ///< per pair of B: the portable kernel's scratch

  /// Grows the buffers for any product up to these sizes (make_workspace(), not a step).
  void reserve(Index rows, Index columns, Index depth) {
    if (fits(rows, columns, depth)) return;
    const auto np = static_cast<std::size_t>(pairs(depth));
    lhs.resize(std::max(lhs.size(), static_cast<std::size_t>(rows) * np));
    rhs.resize(std::max(rhs.size(), np * static_cast<std::size_t>(padded_columns(columns))));
    exponents.resize(std::max(exponents.size(), np));
  }

  /// Whether the buffers hold the operands of a product of these sizes.
  [[nodiscard]] bool fits(Index rows, Index columns, Index depth) const noexcept {
    const auto np = static_cast<std::size_t>(pairs(depth));
    return lhs.size() >= static_cast<std::size_t>(rows) * np &&
           rhs.size() >= np * static_cast<std::size_t>(padded_columns(columns)) && exponents.size() >= np;
  }
};

// ---- Packing: the same bits on both paths (vcvtneps2bf16 rounds as to_bf16() does, checked for
// all 2³² floats on a Zen 5), the native one 16 or 32 floats at a time ----

#if DPTRAIN_DETAIL_BF16_NATIVE
#define DPTRAIN_DETAIL_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/// Whether this CPU runs AVX512-BF16 (asked once).
inline bool cpu_has_avx512_bf16() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
}

// out[j] = pack(even[j], odd ? odd[j] : 0) for j < count.
DPTRAIN_DETAIL_BF16_TARGET inline void native_pack_across(const float* even, const float* odd, Index count, Word* out) {
  for (Index j = 0; j < count; j += 16) {
    const auto mask = static_cast<__mmask16>(count - j >= 16 ? 0xffffU : (1U << (count - j)) - 1U);
    const __m512i low = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, even + j)));
    const __m512i high = odd ? _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, odd + j)))
                             : _mm512_setzero_si512();
    _mm512_mask_storeu_epi32(out + j, mask, _mm512_or_si512(low, _mm512_slli_epi32(high, 16)));
  }
}

// out[p] = pack(row[2p], row[2p + 1]) for p < pairs(depth), a zero after an odd depth's last.
DPTRAIN_DETAIL_BF16_TARGET inline void native_pack_along(const float* row, Index depth, Word* out) {
  for (Index k = 0; k < depth; k += 32) {
    const Index left = depth - k;
    const auto low = static_cast<__mmask16>(left >= 16 ? 0xffffU : (1U << left) - 1U);
    const auto high = static_cast<__mmask16>(left >= 32 ? 0xffffU : left <= 16 ? 0U : (1U << (left - 16)) - 1U);
    // A zero mask reads nothing; the pointer then stays inside the row.
    const __m512i words = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(high, high ? row + k + 16 : row),
                                                       _mm512_maskz_loadu_ps(low, row + k));
    const Index count = std::min<Index>(16, pairs(left));
    _mm512_mask_storeu_epi32(out + k / 2, static_cast<__mmask16>(count >= 16 ? 0xffffU : (1U << count) - 1U), words);
  }
}
#endif

/// Which kernel runs the products on this CPU.
enum class Kernel { avx512_bf16, portable };

/// The kernel the products take: AVX512-BF16 where the CPU has it and the portable path is not forced.
[[nodiscard]] inline Kernel kernel() {
#if DPTRAIN_DETAIL_BF16_NATIVE
  return cpu_has_avx512_bf16() ? Kernel::avx512_bf16 : Kernel::portable;
#else
  return Kernel::portable;
#endif
}

/// out[p·out_stride + j] = pack(a(2p, j), a(2p + 1, j)), a row-major (depth × count, outer
/// stride lda): pairs of rows, each word from one column.
inline void pack_across_rows(const float* a, Index lda, Index depth, Index count, Word* out, Index out_stride) {
  const bool native = kernel() == Kernel::avx512_bf16;
  for (Index p = 0; p < pairs(depth); ++p) {
    const float* even = a + 2 * p * lda;
    const float* odd = 2 * p + 1 < depth ? even + lda : nullptr;
    Word* row = out + p * out_stride;
#if DPTRAIN_DETAIL_BF16_NATIVE
    if (native) {
      native_pack_across(even, odd, count, row);
      continue;
    }
#endif
    static_cast<void>(native);
    for (Index j = 0; j < count; ++j) row[j] = pack(even[j], odd ? odd[j] : 0.0f);
  }
}

/// out[i·row_stride + p·pair_stride] = pack(a(i, 2p), a(i, 2p + 1)), a row-major (count × depth,
/// outer stride lda): consecutive elements of a row, each row's words after an odd depth padded with zero.
inline void pack_along_rows(const float* a, Index lda, Index count, Index depth, Word* out, Index row_stride,
                            Index pair_stride) {
  const Index np = pairs(depth), full = depth / 2;
  const bool native = kernel() == Kernel::avx512_bf16 && pair_stride == 1;
  for (Index i = 0; i < count; ++i) {
    const float* row = a + i * lda;
    Word* words = out + i * row_stride;
#if DPTRAIN_DETAIL_BF16_NATIVE
    if (native) {
      native_pack_along(row, depth, words);
      continue;
    }
#endif
    static_cast<void>(native);
    for (Index p = 0; p < full; ++p) words[p * pair_stride] = pack(row[2 * p], row[2 * p + 1]);
    if (full < np) words[full * pair_stride] = pack(row[depth - 1], 0.0f);
  }
}

/// ops.lhs ← A, A row-major (rows × depth, outer stride lda): a row's pairs contiguous.
inline void pack_lhs(const float* a, Index lda, Index rows, Index depth, Operands& ops) {
  ops.lhs_row = pairs(depth);
  ops.lhs_pair = 1;
  pack_along_rows(a, lda, rows, depth, ops.lhs.data(), ops.lhs_row, ops.lhs_pair);
}

/// ops.lhs ← Aᵀ, A row-major (depth × rows, outer stride lda): a pair's rows contiguous.
inline void pack_lhs_transposed(const float* a, Index lda, Index depth, Index rows, Operands& ops) {
  ops.lhs_row = 1;
  ops.lhs_pair = rows;
  pack_across_rows(a, lda, depth, rows, ops.lhs.data(), rows);
}

/// ops.rhs ← B, B row-major (depth × columns, outer stride ldb), columns padded with zero.
inline void pack_rhs(const float* b, Index ldb, Index depth, Index columns, Operands& ops) {
  const Index width = padded_columns(columns);
  pack_across_rows(b, ldb, depth, columns, ops.rhs.data(), width);
  for (Index p = 0; p < pairs(depth); ++p)
    std::fill(ops.rhs.data() + p * width + columns, ops.rhs.data() + (p + 1) * width, Word{0});
}

/// ops.rhs ← Bᵀ, B row-major (columns × depth, outer stride ldb), columns padded with zero.
inline void pack_rhs_transposed(const float* b, Index ldb, Index columns, Index depth, Operands& ops) {
  const Index width = padded_columns(columns);
  pack_along_rows(b, ldb, columns, depth, ops.rhs.data(), 1, width);
  for (Index p = 0; p < pairs(depth); ++p)
    std::fill(ops.rhs.data() + p * width + columns, ops.rhs.data() + (p + 1) * width, Word{0});
}

// ---- The kernels: C (rows × columns, row-major, outer stride ldc) += A·B from packed operands ----

/// x, or a zero of its sign if x is denormal (the instruction's DAZ and FTZ).
[[nodiscard]] inline float flush(float x) noexcept {
  return std::fabs(x) < std::numeric_limits<float>::min() ? std::copysign(0.0f, x) : x;
}

/// Whether c + a·b rounds once in this program's float arithmetic (not on x87's wider registers).
inline constexpr bool sums_round_once = FLT_EVAL_METHOD == 0;

/// ranges[p]: the exponents of the nonzero elements of B's pair p, odd and even halves apart.
inline void exponent_ranges(const Word* rhs, Index np, Index width, ExponentRange* ranges) {
  for (Index p = 0; p < np; ++p) {
    unsigned odd_low = 255, odd_high = 0, even_low = 255, even_high = 0;
    for (Index j = 0; j < width; ++j) {
      const Word w = rhs[p * width + j];
      const unsigned odd = (w >> 23) & 0xffU, even = (w >> 7) & 0xffU;
      if (w & 0x7fff0000U) odd_low = std::min(odd_low, odd), odd_high = std::max(odd_high, odd);
      if (w & 0x7fffU) even_low = std::min(even_low, even), even_high = std::max(even_high, even);
    }
    ranges[p] = {static_cast<std::uint8_t>(odd_low), static_cast<std::uint8_t>(odd_high),
                 static_cast<std::uint8_t>(even_low), static_cast<std::uint8_t>(even_high)};
  }
}

/// Whether a·b is exact in fp32 for a (a bf16 value, its biased exponent `a_exponent`) and every
/// nonzero b whose exponents lie in [low, high]. A product of bf16 values has at most 16
/// significant bits, so it is exact unless it overflows or falls below the normal range; with
/// biased exponents e_a and e_b (no denormals: packing flushes them) the product's is
/// e_a + e_b − 127 or one more, normal and finite for 128 ≤ e_a + e_b ≤ 380.
[[nodiscard]] constexpr bool exact_products(bool a_zero, unsigned a_exponent, unsigned low, unsigned high) noexcept {
  return a_zero || low > high || (a_exponent + low >= 128U && a_exponent + high <= 380U);
}

/// The portable kernel: the instruction's steps in standard C++, C's rows one at a time, the
/// columns innermost. Where a pair's products are all exact (always, but for values beyond fp32's
/// normal range), fma(a, b, c) is c + a·b with one rounding, so the loop runs on plain multiplies
/// and adds, which any compiler vectorises, contracted or not; otherwise it takes std::fma.
template <bool Accumulate>
void portable_product(float* c, Index ldc, Index rows, Index columns, Index np, Operands& ops) {
  const Index width = padded_columns(columns);
  exponent_ranges(ops.rhs.data(), np, width, ops.exponents.data());
  const auto low = [](Word w) { return widen(static_cast<std::uint16_t>(w)); };
  const auto high = [](Word w) { return widen(static_cast<std::uint16_t>(w >> 16)); };
  for (Index i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    if (!Accumulate)
      std::fill(row, row + columns, 0.0f);
    else if (np > 0)  // the instruction reads its accumulator as DAZ
      for (Index j = 0; j < columns; ++j) row[j] = flush(row[j]);
    for (Index p = 0; p < np; ++p) {
      const Word a = ops.lhs[static_cast<std::size_t>(i * ops.lhs_row + p * ops.lhs_pair)];
      const float a_even = low(a), a_odd = high(a);
      const Word* b = ops.rhs.data() + p * width;
      const ExponentRange& e = ops.exponents[static_cast<std::size_t>(p)];
      const bool exact = exact_products(a_odd == 0.0f, (a >> 23) & 0xffU, e.odd_low, e.odd_high) &&
                         exact_products(a_even == 0.0f, (a >> 7) & 0xffU, e.even_low, e.even_high);
      if (sums_round_once && exact) {
        for (Index j = 0; j < columns; ++j) {
          const float odd = flush(row[j] + a_odd * high(b[j]));
          row[j] = flush(odd + a_even * low(b[j]));
        }
      } else {
        for (Index j = 0; j < columns; ++j) {
          const float odd = flush(std::fma(a_odd, high(b[j]), row[j]));
          row[j] = flush(std::fma(a_even, low(b[j]), odd));
        }
      }
    }
  }
}

#if DPTRAIN_DETAIL_BF16_NATIVE
/// Tile sizes: R rows × V vectors of 16 columns, R·V accumulators + V operands + a broadcast in
/// the 32 registers. Pairs per block: a panel of V vectors' rhs (block_pairs · V · 64 bytes,
/// 24 KiB) stays in L1 while every row tile of C goes over it.
inline constexpr int tile_rows = 6;
inline constexpr int tile_vectors = 4;
inline constexpr Index block_pairs = 96;

/// Where a tile reads: A's word (r, p) at lhs[r·row + p·pair], B's pair p at rhs[p·width].
struct TileOperands {
  const Word* lhs;
  Index row, pair;
  const Word* rhs;
  Index width;
};

/// One tile over pairs [p0, p1): C's tile is loaded (or zero: Fresh), the pairs added in order,
/// and C's tile stored; `masks[v]` selects the columns of vector v that C has.
template <int R, int V, bool Fresh>
DPTRAIN_DETAIL_BF16_TARGET inline void native_tile(float* c, Index ldc, Index p0, Index p1, const TileOperands& in,
                                                   const __mmask16* masks) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      acc[r][v] = Fresh ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(masks[v], c + r * ldc + 16 * v);
  for (Index p = p0; p < p1; ++p) {
    __m512bh b[V];
    for (int v = 0; v < V; ++v) b[v] = (__m512bh)_mm512_loadu_si512(in.rhs + p * in.width + 16 * v);
    const Word* a_pair = in.lhs + p * in.pair;
    for (int r = 0; r < R; ++r) {
      const auto a = (__m512bh)_mm512_set1_epi32(static_cast<int>(a_pair[r * in.row]));
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, masks[v], acc[r][v]);
}

template <int V, bool Fresh>
DPTRAIN_DETAIL_BF16_TARGET inline void native_row_tiles(float* c, Index ldc, Index rows, Index p0, Index p1,
                                                        TileOperands in, const __mmask16* masks) {
  Index i = 0;
  for (; i + tile_rows <= rows; i += tile_rows, in.lhs += tile_rows * in.row)
    native_tile<tile_rows, V, Fresh>(c + i * ldc, ldc, p0, p1, in, masks);
  const auto tail = [&]<int R>(std::integral_constant<int, R>) {
    native_tile<R, V, Fresh>(c + i * ldc, ldc, p0, p1, in, masks);
  };
  static_assert(tile_rows == 6, "the tails below cover 1 to tile_rows - 1 rows");
  switch (rows - i) {
    case 1:
      tail(std::integral_constant<int, 1>{});
      break;
    case 2:
      tail(std::integral_constant<int, 2>{});
      break;
    case 3:
      tail(std::integral_constant<int, 3>{});
      break;
    case 4:
      tail(std::integral_constant<int, 4>{});
      break;
    case 5:
      tail(std::integral_constant<int, 5>{});
      break;
    default:
      break;
  }
}

/// The native kernel: blocks of pairs, then panels of tile_vectors · 16 columns, then row tiles.
template <bool Accumulate>
DPTRAIN_DETAIL_BF16_TARGET void native_product(float* c, Index ldc, Index rows, Index columns, Index np,
                                               const Operands& ops) {
  const Index width = padded_columns(columns);
  const Index blocks = std::max<Index>(1, (np + block_pairs - 1) / block_pairs);
  for (Index block = 0; block < blocks; ++block) {
    const Index p0 = np * block / blocks, p1 = np * (block + 1) / blocks;  // blocks of equal size
    for (Index j = 0; j < columns; j += 16 * tile_vectors) {
      const Index left = std::min<Index>(columns - j, 16 * tile_vectors);
      __mmask16 masks[tile_vectors];
      for (int v = 0; v < tile_vectors; ++v) {
        const Index present = std::clamp<Index>(left - 16 * v, 0, 16);
        masks[v] = static_cast<__mmask16>((1U << present) - 1U);
      }
      const TileOperands operands{ops.lhs.data(), ops.lhs_row, ops.lhs_pair, ops.rhs.data() + j, width};
      const auto panel = [&]<int V>(std::integral_constant<int, V>) {
        if (!Accumulate && p0 == 0)
          native_row_tiles<V, true>(c + j, ldc, rows, p0, p1, operands, masks);
        else
          native_row_tiles<V, false>(c + j, ldc, rows, p0, p1, operands, masks);
      };
      static_assert(tile_vectors == 4, "the panels below cover 1 to tile_vectors vectors");
      switch ((left + 15) / 16) {
        case 1:
          panel(std::integral_constant<int, 1>{});
          break;
        case 2:
          panel(std::integral_constant<int, 2>{});
          break;
        case 3:
          panel(std::integral_constant<int, 3>{});
          break;
        default:
          panel(std::integral_constant<int, 4>{});
          break;
      }
    }
  }
}
#endif

/// C += A·B (Accumulate) or C = A·B from ops (packed for depth `depth`), on kernel(): the same bits either way.
template <bool Accumulate>
void product(float* c, Index ldc, Index rows, Index columns, Index depth, Operands& ops) {
  if (rows == 0 || columns == 0) return;
#if DPTRAIN_DETAIL_BF16_NATIVE
  if (kernel() == Kernel::avx512_bf16) {
    native_product<Accumulate>(c, ldc, rows, columns, pairs(depth), ops);
    return;
  }
#endif
  portable_product<Accumulate>(c, ldc, rows, columns, pairs(depth), ops);
}

// ---- The three products of a layer, on Eigen maps (fp32, row-major) ----

/// C += A·B.
inline void add_product(Eigen::Map<RowMatrix<float>> c, const Eigen::Ref<const RowMatrix<float>>& a,
                        const Eigen::Ref<const RowMatrix<float>>& b, Operands& ops) {
  pack_lhs(a.data(), a.outerStride(), a.rows(), a.cols(), ops);
  pack_rhs(b.data(), b.outerStride(), b.rows(), b.cols(), ops);
  product<true>(c.data(), c.outerStride(), c.rows(), c.cols(), a.cols(), ops);
}

/// C += Aᵀ·B (Accumulate) or C = Aᵀ·B, A stored untransposed.
template <bool Accumulate>
void transposed_product(Eigen::Map<RowMatrix<float>> c, const Eigen::Ref<const RowMatrix<float>>& a,
                        const Eigen::Ref<const RowMatrix<float>>& b, Operands& ops) {
  pack_lhs_transposed(a.data(), a.outerStride(), a.rows(), a.cols(), ops);
  pack_rhs(b.data(), b.outerStride(), b.rows(), b.cols(), ops);
  product<Accumulate>(c.data(), c.outerStride(), c.rows(), c.cols(), a.rows(), ops);
}

/// C = A·Bᵀ, B stored untransposed, whatever C held.
inline void set_product_transposed(Eigen::Map<RowMatrix<float>> c, const Eigen::Ref<const RowMatrix<float>>& a,
                                   const Eigen::Ref<const RowMatrix<float>>& b, Operands& ops) {
  pack_lhs(a.data(), a.outerStride(), a.rows(), a.cols(), ops);
  pack_rhs_transposed(b.data(), b.outerStride(), b.rows(), b.cols(), ops);
  product<false>(c.data(), c.outerStride(), c.rows(), c.cols(), a.cols(), ops);
}

}  // namespace dptrain::detail::bf16

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
