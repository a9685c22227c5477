// SPDX-License-Identifier: MIT
// The two products of a linear layer with few outputs (a softmax regression's k classes), on
// register tiles, without packing.
//
// Why: Eigen's GEMM is shaped for wide outputs. With k = 10 columns it packs the whole batch X
// for each of the two products and runs its micro-kernel partly empty: a softmax-regression step
// reached a quarter of the FMA peak. Here the weights are held class-major (Wᵀ, k × d), so both
// products run along the features, contiguous in X's rows and in Wᵀ's rows, and X is read in
// place:
//  - scores:   Z (m × k) += X W = X (Wᵀ)ᵀ, R rows × k classes of vector accumulators per tile,
//    one horizontal sum per score;
//  - gradient: Gᵀ (k × d) += Dᵀ X, k classes × F vectors of features per tile, one broadcast of
//    D(r, c) per class and row.
// Where the registers hold only one row of all k classes (16 registers: k > 6), the classes are
// split into groups, each computed as above in tiles two or more deep (group_width).
// θ keeps W feature-major (d × k), so each call turns W into Wᵀ and adds Gᵀ back into G; with
// AVX-512 both run 16 features at a time through an in-register transpose (about 1.3 µs together
// for 784 × 10 floats on an AMD EPYC Zen 5 core, against 4.6 µs element by element), with AVX 8
// features and 8 classes at a time (2.1 µs against 5.0 on a Zen 2 core).
// Tiles use Eigen's packet functions (the widest vector of the build: AVX-512, AVX, SSE, NEON or
// plain scalars), and a tile's accumulators and operands together fit in the vector registers.
// Those functions are Eigen::internal, written against Eigen 3.4 (detail/eigen_internals.hpp):
// with another Eigen, or with DPTRAIN_PORTABLE_KERNELS defined, the same tiles run on packets of
// one scalar (standard C++ only, no intrinsics) and W is transposed element by element.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "dptrain/core/types.hpp"
#include "dptrain/detail/eigen_internals.hpp"

// The AVX-512 transposes go with the packet tiles: the portable path uses no intrinsics.
#if DPTRAIN_DETAIL_EIGEN_INTERNALS && defined(EIGEN_VECTORIZE_AVX512)
#define DPTRAIN_DETAIL_NARROW_AVX512 1
#else
#define DPTRAIN_DETAIL_NARROW_AVX512 0
#endif
// Without AVX-512, AVX's 8 × 8 transposes (Eigen's ptranspose of 8 packets of 8 floats) turn the
// first 8 columns; the others go element by element.
#if DPTRAIN_DETAIL_EIGEN_INTERNALS && defined(EIGEN_VECTORIZE_AVX) && !DPTRAIN_DETAIL_NARROW_AVX512
#define DPTRAIN_DETAIL_NARROW_AVX 1
#else
#define DPTRAIN_DETAIL_NARROW_AVX 0
#endif

// GCC 12's AVX-512 intrinsics, inlined here, start from deliberately undefined registers and
// then warn that they are uninitialized (GCC bug 105593); the warning is about GCC's own header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Eigen's PacketBlock of AVX packets: GCC warns that __m256's vector attribute does not take
// part in the template argument, which is what Eigen itself relies on.
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif

namespace dptrain::detail::narrow {

#if DPTRAIN_DETAIL_EIGEN_INTERNALS
template <class Scalar>
using Packet = typename Eigen::internal::packet_traits<Scalar>::type;

/// Scalars per packet (16 floats with AVX-512).
template <class Scalar>
inline constexpr Index lanes = Eigen::internal::unpacket_traits<Packet<Scalar>>::size;

/// Vector registers of the build's ISA (32 with AVX-512 or AArch64 NEON, 16 with AVX or SSE on
/// x86-64, 8 for plain scalars or 32-bit SSE).
inline constexpr int registers = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS;

/// The packet functions the tiles call: Eigen's.
namespace ops {
using Eigen::internal::ploadu;
using Eigen::internal::pmadd;
using Eigen::internal::predux;
using Eigen::internal::pset1;
using Eigen::internal::pstoreu;
}  // namespace ops
#else
// The portable path: a packet is one scalar.
template <class Scalar>
using Packet = Scalar;

template <class Scalar>
inline constexpr Index lanes = 1;

/// Scalar registers assumed for the tiles' shape (x86-64's 16; AArch64 has 32).
inline constexpr int registers = 16;

/// The packet functions the tiles call, on one scalar, with the signatures of Eigen's.
namespace ops {
template <class P>
P pmadd(const P& a, const P& b, const P& c) noexcept {
  return a * b + c;
}
template <class P>
P predux(const P& a) noexcept {
  return a;
}
template <class P>
P pset1(const P& a) noexcept {
  return a;
}
template <class P>
P ploadu(const P* from) noexcept {
  return *from;
}
template <class P>
void pstoreu(P* to, const P& from) noexcept {
  *to = from;
}
}  // namespace ops
#endif

/// The most columns (classes) these kernels take: a tile holds every column's accumulator plus
/// two operands (16 with 32 registers, 12 with 16, 6 with 8).
inline constexpr Index max_columns = std::min(16, registers * 3 / 4);

/// Keeps v in a vector register: otherwise GCC folds the load of a Wᵀ packet into each of the R
/// FMAs that use it, and the tile issues R loads per packet instead of one.
template <class P>
EIGEN_ALWAYS_INLINE void keep_in_register(P& v) noexcept {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && defined(__SSE2__)
  if constexpr (sizeof(P) >= 16) __asm__("" : "+v"(v));
#else
  static_cast<void>(v);
#endif
}

/// Rows (scores) or feature packets (gradient) of a tile of `columns` columns: the most, up to 4,
/// whose R·columns accumulators, R row operands and one shared operand fit in the registers
/// without spilling.
constexpr int depth_of(int columns) noexcept {
  return std::clamp((registers - 1) / (columns + 1), 1, 4);
}

/// Columns per tile for C columns: all C while a tile of them is at least two deep; otherwise the
/// fewest groups of (nearly) equal width that are. A one-deep tile loads one operand per FMA or
/// more (with 16 registers, 10 columns: 11 loads per 10 FMAs), and its C rows of Wᵀ outgrow a
/// 32 KB L1 (31 KB for 784 features); two groups of 5, two deep, load 7 per 10 and read 16 KB.
template <int C>
inline constexpr int group_width = [] {
  int groups = 1;
  while ((C + groups - 1) / groups > 1 && depth_of((C + groups - 1) / groups) < 2) ++groups;
  return (C + groups - 1) / groups;
}();

/// Rows (scores) or feature packets (gradient) per tile for C columns.
template <int C>
inline constexpr int tile_depth = depth_of(group_width<C>);

/// Z(r, c) += Σᵢ X(r, i) Wᵀ(c, i) for R rows of X and all C rows of Wᵀ.
template <int R, int C, class Scalar>
void score_tile(const Scalar* x, Index ldx, Index d, const Scalar* wt, Index ldw, Scalar* z, Index ldz) {
  using namespace ops;
  using P = Packet<Scalar>;
  constexpr Index L = lanes<Scalar>;
  P acc[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[r][c] = pset1<P>(Scalar(0));
  const Index packed = d - d % L;
  for (Index i = 0; i < packed; i += L) {
    P xs[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) xs[r] = ploadu<P>(x + r * ldx + i);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      P w = ploadu<P>(wt + c * ldw + i);
      keep_in_register(w);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r][c] = pmadd(xs[r], w, acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      Scalar s = predux(acc[r][c]);
      for (Index t = packed; t < d; ++t) s += x[r * ldx + t] * wt[c * ldw + t];
      z[r * ldz + c] += s;
    }
}

/// Gᵀ(c, i) += Σ_r D(r, c) X(r, i) for all C columns, F packets of features from `x` and `gt`,
/// and `rows` rows.
template <int F, int C, class Scalar>
void gradient_tile(const Scalar* x, Index ldx, Index rows, const Scalar* dz, Index ldd, Scalar* gt, Index ldg) {
  using namespace ops;
  using P = Packet<Scalar>;
  constexpr Index L = lanes<Scalar>;
  P acc[C][F];
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 4
    for (int f = 0; f < F; ++f) acc[c][f] = ploadu<P>(gt + c * ldg + f * L);
  for (Index r = 0; r < rows; ++r) {
    P xs[F];
#pragma GCC unroll 4
    for (int f = 0; f < F; ++f) xs[f] = ploadu<P>(x + r * ldx + f * L);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const P dc = pset1<P>(dz[r * ldd + c]);
#pragma GCC unroll 4
      for (int f = 0; f < F; ++f) acc[c][f] = pmadd(xs[f], dc, acc[c][f]);
    }
  }
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 4
    for (int f = 0; f < F; ++f) pstoreu(gt + c * ldg + f * L, acc[c][f]);
}

/// Calls fn.template operator()<First, Width>() for each group of C columns, in order: groups of
/// group_width<C>, the last one narrower where C is not a multiple of it.
template <int C, int First = 0, class Fn>
EIGEN_ALWAYS_INLINE void for_each_group(Fn&& fn) {
  if constexpr (First < C) {
    constexpr int Width = std::min(group_width<C>, C - First);
    fn.template operator()<First, Width>();
    for_each_group<C, First + Width>(fn);
  }
}

/// Z (m × C, row-major, stride ldz) += X (m × d, stride ldx) · (Wᵀ)ᵀ, Wᵀ C × d with stride ldw.
/// One group of columns at a time, so that its rows of Wᵀ stay in L1 over all of X's rows (on an
/// AMD EPYC Zen 2 core, each tile of rows for every group in turn was slower: 48.0 against 46.7 µs).
template <int C, class Scalar>
void add_scores(const Scalar* x, Index ldx, Index m, Index d, const Scalar* wt, Index ldw, Scalar* z, Index ldz) {
  for_each_group<C>([&]<int First, int G>() {
    constexpr int R = depth_of(G);
    const Scalar* wg = wt + First * ldw;
    Index r = 0;
    for (; r + R <= m; r += R) score_tile<R, G>(x + r * ldx, ldx, d, wg, ldw, z + r * ldz + First, ldz);
    for (; r < m; ++r) score_tile<1, G>(x + r * ldx, ldx, d, wg, ldw, z + r * ldz + First, ldz);
  });
}

/// Gᵀ (C × d, stride ldg) += Dᵀ · X, D m × C (stride ldd), X m × d (stride ldx). Each strip of
/// features is read for every group of columns in turn, while it is in L1.
template <int C, class Scalar>
void add_gradient(const Scalar* x, Index ldx, Index m, Index d, const Scalar* dz, Index ldd, Scalar* gt, Index ldg) {
  constexpr int F = tile_depth<C>;
  constexpr Index L = lanes<Scalar>;
  // Bounds computed up front: a tail loop continuing from the packet loops' index makes GCC warn
  // (-Waggressive-loop-optimizations) where d is a compile-time constant.
  const Index wide = d - d % (F * L), packed = d - d % L;
  const auto strip = [&]<int Depth>(Index i) {
    for_each_group<C>([&]<int First, int G>() {
      gradient_tile<Depth, G>(x + i, ldx, m, dz + First, ldd, gt + First * ldg + i, ldg);
    });
  };
  for (Index i = 0; i < wide; i += F * L) strip.template operator()<F>(i);
  for (Index i = wide; i < packed; i += L) strip.template operator()<1>(i);
  for (Index i = packed; i < d; ++i)
    for (int c = 0; c < C; ++c) {
      Scalar s(0);
      for (Index r = 0; r < m; ++r) s += dz[r * ldd + c] * x[r * ldx + i];
      gt[c * ldg + i] += s;
    }
}

#if DPTRAIN_DETAIL_NARROW_AVX512
/// Lane j of the new row i (upper) or i + B (lower), for i & B = 0, as an index into the pair
/// (row i, row i + B) of _mm512_permutex2var_ps: 0–15 from row i, 16–31 from row i + B.
template <int B>
constexpr std::array<std::int32_t, 16> swap_lanes(bool lower) {
  std::array<std::int32_t, 16> lanes{};
  for (int j = 0; j < 16; ++j) lanes[j] = (j & B) == 0 ? (lower ? j + B : j) : (lower ? 16 + j : 16 + j - B);
  return lanes;
}

/// One round of transpose_16x16: swaps the off-diagonal B × B blocks of every 2B × 2B block.
template <int B>
EIGEN_ALWAYS_INLINE void swap_blocks(__m512 (&rows)[16]) noexcept {
  static constexpr std::array<std::int32_t, 16> upper = swap_lanes<B>(false), lower = swap_lanes<B>(true);
  const __m512i from_upper = _mm512_loadu_si512(upper.data()), from_lower = _mm512_loadu_si512(lower.data());
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    if ((i & B) != 0) continue;
    const __m512 top = rows[i], bottom = rows[i + B];
    rows[i] = _mm512_permutex2var_ps(top, from_upper, bottom);
    rows[i + B] = _mm512_permutex2var_ps(top, from_lower, bottom);
  }
}

/// Transposes the 16 × 16 floats held one row per register, in place, in four rounds of 16
/// two-source permutes. (Eigen's ptranspose of 16 Packet16f does the same with unpack
/// intrinsics, which GCC 12 reports as reading uninitialized registers, bug 105593.)
EIGEN_ALWAYS_INLINE void transpose_16x16(__m512 (&rows)[16]) noexcept {
  swap_blocks<8>(rows);
  swap_blocks<4>(rows);
  swap_blocks<2>(rows);
  swap_blocks<1>(rows);
}

/// Whether a row of C scalars fits one register's lanes, so that the two transposes below run
/// 16 rows at a time.
template <int C, class Scalar>
inline constexpr bool row_in_register = std::is_same_v<Scalar, float>&& C <= 16;

/// Lanes 0 … C − 1: one row of C floats.
template <int C>
inline constexpr auto row_lanes = static_cast<__mmask16>((1u << C) - 1);
#endif

#if DPTRAIN_DETAIL_NARROW_AVX
/// Whether the two transposes below turn 8 rows at a time: floats, and at least 8 columns, so
/// that a row's first 8 columns are one packet inside the row.
template <int C, class Scalar>
inline constexpr bool eight_columns_in_packet = std::is_same_v<Scalar, float>&& C >= 8;
#endif

/// Wᵀ (C × d, stride ldt) = W, W d × C row-major and contiguous (row i at w + i·C): the weights
/// in the class-major order the tiles read.
template <int C, class Scalar>
void transpose_to_class_major(const Scalar* w, Index d, Scalar* wt, Index ldt) {
  Index i = 0;
#if DPTRAIN_DETAIL_NARROW_AVX
  // 8 rows at a time: their first 8 columns, one packet each, turned into 8 class rows of 8
  // features; the columns past 8 one by one. On an AMD EPYC Zen 2 core (family 23 model 49),
  // 784 × 10 floats in 0.97 µs instead of 2.4, and add_transposed() in 1.1 instead of 2.6.
  if constexpr (eight_columns_in_packet<C, Scalar>) {
    using Eigen::internal::ploadu;
    using Eigen::internal::pstoreu;
    for (; i + 8 <= d; i += 8) {
      Eigen::internal::PacketBlock<Packet<float>, 8> block;
      for (int r = 0; r < 8; ++r) block.packet[r] = ploadu<Packet<float>>(w + (i + r) * C);
      Eigen::internal::ptranspose(block);
      for (int c = 0; c < 8; ++c) pstoreu(wt + c * ldt + i, block.packet[c]);
      for (int c = 8; c < C; ++c)
        for (int r = 0; r < 8; ++r) wt[c * ldt + i + r] = w[(i + r) * C + c];
    }
  }
#endif
#if DPTRAIN_DETAIL_NARROW_AVX512
  // 16 rows at a time, one per register (C of its 16 lanes), turned by one in-register transpose
  // into C class rows of 16 features.
  if constexpr (row_in_register<C, Scalar>) {
    for (; i + 16 <= d; i += 16) {
      __m512 block[16];
      for (int r = 0; r < 16; ++r) block[r] = _mm512_maskz_loadu_ps(row_lanes<C>, w + (i + r) * C);
      transpose_16x16(block);
      for (int c = 0; c < C; ++c) _mm512_storeu_ps(wt + c * ldt + i, block[c]);
    }
  }
#endif
  for (; i < d; ++i)
    for (int c = 0; c < C; ++c) wt[c * ldt + i] = w[i * C + c];
}

/// G += (Gᵀ)ᵀ, G d × C row-major and contiguous, Gᵀ C × d with stride ldt: the tiles' class-major
/// gradient added back in θ's order.
template <int C, class Scalar>
void add_transposed(const Scalar* gt, Index ldt, Index d, Scalar* g) {
  Index i = 0;
#if DPTRAIN_DETAIL_NARROW_AVX
  if constexpr (eight_columns_in_packet<C, Scalar>) {
    using Eigen::internal::padd;
    using Eigen::internal::ploadu;
    using Eigen::internal::pstoreu;
    for (; i + 8 <= d; i += 8) {
      Eigen::internal::PacketBlock<Packet<float>, 8> block;
      for (int c = 0; c < 8; ++c) block.packet[c] = ploadu<Packet<float>>(gt + c * ldt + i);
      Eigen::internal::ptranspose(block);
      // All 8 rows are read before any is written (as with AVX-512 below).
      for (int r = 0; r < 8; ++r) block.packet[r] = padd(ploadu<Packet<float>>(g + (i + r) * C), block.packet[r]);
      for (int r = 0; r < 8; ++r) pstoreu(g + (i + r) * C, block.packet[r]);
      for (int c = 8; c < C; ++c)
        for (int r = 0; r < 8; ++r) g[(i + r) * C + c] += gt[c * ldt + i + r];
    }
  }
#endif
#if DPTRAIN_DETAIL_NARROW_AVX512
  if constexpr (row_in_register<C, Scalar>) {
    for (; i + 16 <= d; i += 16) {
      __m512 block[16];
      for (int c = 0; c < 16; ++c) block[c] = c < C ? _mm512_loadu_ps(gt + c * ldt + i) : _mm512_setzero_ps();
      transpose_16x16(block);
      // All 16 rows are read before any is written: a row's masked store and the next row's
      // masked load share a 64-byte window, and a load after such a store waits for it to retire
      // (row by row, this took longer than the whole transposition).
      for (int r = 0; r < 16; ++r)
        block[r] = _mm512_add_ps(_mm512_maskz_loadu_ps(row_lanes<C>, g + (i + r) * C), block[r]);
      for (int r = 0; r < 16; ++r) _mm512_mask_storeu_ps(g + (i + r) * C, row_lanes<C>, block[r]);
    }
  }
#endif
  for (; i < d; ++i)
    for (int c = 0; c < C; ++c) g[i * C + c] += gt[c * ldt + i];
}

/// Calls fn(std::integral_constant<int, k>{}) for 1 ≤ k ≤ max_columns: the column count as a
/// compile-time constant, so that a tile's accumulators are registers.
template <class Fn>
decltype(auto) with_columns(Index k, Fn&& fn) {
  eigen_assert(k >= 1 && k <= max_columns && "with_columns: k out of range");
  return [&]<int... Cs>(std::integer_sequence<int, Cs...>) {
    using Result = decltype(fn(std::integral_constant<int, 1>{}));
    if constexpr (std::is_void_v<Result>) {
      static_cast<void>(((k == Cs + 1 ? (fn(std::integral_constant<int, Cs + 1>{}), true) : false) || ...));
    } else {
      Result result{};
      static_cast<void>(((k == Cs + 1 ? (result = fn(std::integral_constant<int, Cs + 1>{}), true) : false) || ...));
      return result;
    }
  }
  (std::make_integer_sequence<int, static_cast<int>(max_columns)>{});
}

}  // namespace dptrain::detail::narrow

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
