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
// Tiles use Eigen's packet functions (the widest vector of the build: AVX-512, AVX, SSE, NEON or
// plain scalars), and a tile's accumulators and operands together fit in the vector registers.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>

#include "dptrain/core/types.hpp"

// GCC 12's AVX-512 intrinsics, inlined here, start from deliberately undefined registers and
// then warn that they are uninitialized (GCC bug 105593); the warning is about GCC's own header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace dptrain::detail::narrow {

template <class Scalar>
using Packet = typename Eigen::internal::packet_traits<Scalar>::type;

/// Scalars per packet (16 floats with AVX-512).
template <class Scalar>
inline constexpr Index lanes = Eigen::internal::unpacket_traits<Packet<Scalar>>::size;

/// Vector registers of the build's ISA (32 with AVX-512 or AArch64 NEON, 16 with AVX or SSE on
/// x86-64, 8 for plain scalars or 32-bit SSE).
inline constexpr int registers = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS;

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

/// Rows (scores) or feature packets (gradient) per tile for C columns: the most, up to 4, whose
/// R·C accumulators, R row operands and one shared operand fit in the registers without spilling.
template <int C>
inline constexpr int tile_depth = std::clamp((registers - 1) / (C + 1), 1, 4);

/// Z(r, c) += Σᵢ X(r, i) Wᵀ(c, i) for R rows of X and all C rows of Wᵀ.
template <int R, int C, class Scalar>
void score_tile(const Scalar* x, Index ldx, Index d, const Scalar* wt, Index ldw, Scalar* z, Index ldz) {
  using namespace Eigen::internal;
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
  using namespace Eigen::internal;
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

/// Z (m × C, row-major, stride ldz) += X (m × d, stride ldx) · (Wᵀ)ᵀ, Wᵀ C × d with stride ldw.
template <int C, class Scalar>
void add_scores(const Scalar* x, Index ldx, Index m, Index d, const Scalar* wt, Index ldw, Scalar* z, Index ldz) {
  constexpr int R = tile_depth<C>;
  Index r = 0;
  for (; r + R <= m; r += R) score_tile<R, C>(x + r * ldx, ldx, d, wt, ldw, z + r * ldz, ldz);
  for (; r < m; ++r) score_tile<1, C>(x + r * ldx, ldx, d, wt, ldw, z + r * ldz, ldz);
}

/// Gᵀ (C × d, stride ldg) += Dᵀ · X, D m × C (stride ldd), X m × d (stride ldx).
template <int C, class Scalar>
void add_gradient(const Scalar* x, Index ldx, Index m, Index d, const Scalar* dz, Index ldd, Scalar* gt, Index ldg) {
  constexpr int F = tile_depth<C>;
  constexpr Index L = lanes<Scalar>;
  // Bounds computed up front: a tail loop continuing from the packet loops' index makes GCC warn
  // (-Waggressive-loop-optimizations) where d is a compile-time constant.
  const Index wide = d - d % (F * L), packed = d - d % L;
  for (Index i = 0; i < wide; i += F * L) gradient_tile<F, C>(x + i, ldx, m, dz, ldd, gt + i, ldg);
  for (Index i = wide; i < packed; i += L) gradient_tile<1, C>(x + i, ldx, m, dz, ldd, gt + i, ldg);
  for (Index i = packed; i < d; ++i)
    for (int c = 0; c < C; ++c) {
      Scalar s(0);
      for (Index r = 0; r < m; ++r) s += dz[r * ldd + c] * x[r * ldx + i];
      gt[c * ldg + i] += s;
    }
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
