// SPDX-License-Identifier: MIT
// Internals shared by the optimizers and schedules: an exact sqrt functor, the split of a slice at
// its biases, the trainer's blockwise update of a slice (and of its parameter groups), squared
// norms and hyperparameter checks.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/eigen_internals.hpp"

// ExactSqrt's packets: Eigen's SSE2, AVX or AVX-512 packets (raw vector types in Eigen 3.4, whose
// functor_traits say which functors have packets; Eigen::internal, hence the guard).
#if DPTRAIN_DETAIL_EIGEN_INTERNALS && defined(__SSE2__) && defined(EIGEN_VECTORIZE_SSE2)
#define DPTRAIN_DETAIL_EXACT_SQRT_PACKETS 1
#include <immintrin.h>
#else
#define DPTRAIN_DETAIL_EXACT_SQRT_PACKETS 0
#endif

namespace dptrain::detail {

// Square roots of Eigen's float and double packets on x86 (sqrtps, sqrtpd and their AVX and
// AVX-512 forms: IEEE, correctly rounded, as sqrtss). Eigen's packets are these vector types.
#if DPTRAIN_DETAIL_EXACT_SQRT_PACKETS
inline __m128 packet_sqrt(__m128 x) {
  return _mm_sqrt_ps(x);
}
inline __m128d packet_sqrt(__m128d x) {
  return _mm_sqrt_pd(x);
}
#ifdef __AVX__
inline __m256 packet_sqrt(__m256 x) {
  return _mm256_sqrt_ps(x);
}
inline __m256d packet_sqrt(__m256d x) {
  return _mm256_sqrt_pd(x);
}
#endif
#ifdef __AVX512F__
// The masked forms with every lane set: GCC 12's _mm512_sqrt_ps starts from an undefined register
// and then warns that it is uninitialized (GCC bug 105593).
inline __m512 packet_sqrt(__m512 x) {
  return _mm512_mask_sqrt_ps(x, static_cast<__mmask16>(0xffffU), x);
}
inline __m512d packet_sqrt(__m512d x) {
  return _mm512_mask_sqrt_pd(x, static_cast<__mmask8>(0xffU), x);
}
#endif
#endif

/**
 * @brief Correctly rounded elementwise square root, for `array.unaryExpr(ExactSqrt<Scalar>{})`.
 *
 * Eigen's vectorised `sqrt()` is, under EIGEN_FAST_MATH (Eigen's default), an rsqrt
 * approximation plus one Newton step for float (and for double with AVX-512): its result then
 * depends on whether an element falls into a SIMD packet or into the scalar head or tail of
 * the loop, that is on where a thread's slice of θ begins and ends. This functor's packets take
 * the SSE, AVX and AVX-512 square-root instructions, which round correctly as std::sqrt does, so
 * every element is the same however θ is sliced (and matches PyTorch's correctly rounded sqrt),
 * and the adaptive optimizers' updates stay vectorised. Elsewhere (another architecture, or
 * DPTRAIN_PORTABLE_KERNELS) Eigen evaluates it element by element.
 */
template <class Scalar>
struct ExactSqrt {
  Scalar operator()(const Scalar& x) const {
    using std::sqrt;
    return sqrt(x);
  }
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    return packet_sqrt(x);
  }
};

}  // namespace dptrain::detail

// Tells Eigen that ExactSqrt has packets (for float and double, where packet_sqrt has them).
namespace Eigen::internal {
template <class Scalar>
struct functor_traits<dptrain::detail::ExactSqrt<Scalar>> {
  enum {
    Cost = 5 * NumTraits<Scalar>::MulCost,
    PacketAccess =
        DPTRAIN_DETAIL_EXACT_SQRT_PACKETS && (std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>)
  };
};
}  // namespace Eigen::internal

namespace dptrain::detail {

/// Elements [part.begin, part.end()) of slice `s`: views into the same memory, with no biases.
template <class Scalar, int Slots>
[[nodiscard]] UpdateSlice<Scalar, Slots> slice_part(const UpdateSlice<Scalar, Slots>& s, IndexRange part) {
  // Taken by value: a copy of a view is writable (s is const, its data are not).
  const auto cut = [&](VectorMap<Scalar> v) { return VectorMap<Scalar>(v.data() + part.begin, part.size); };
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return UpdateSlice<Scalar, Slots>{
        cut(s.theta), ConstVectorMap<Scalar>(s.grad.data() + part.begin, part.size), {cut(s.state[K])...}};
  }
  (std::make_index_sequence<static_cast<std::size_t>(Slots)>{});
}

/**
 * @brief The update of an optimizer `o` whose decay_biases is false: slice `s` in parts, each
 * bias range of s.biases as `o` with weight_decay = 0 updates it, every other part as `o` does.
 *
 * Optimizers call it only when the slice has biases to spare and weight_decay ≠ 0, so their
 * usual path is the one it was. The parts are views into s with no biases of their own (so
 * `o.update` on a part takes its usual path); nothing is allocated. The rules are
 * elementwise and their square roots exact (ExactSqrt), so cutting a slice into parts changes no
 * bit of any element.
 */
template <class O, class Scalar, int Slots>
void update_sparing_biases(const O& o, const UpdateSlice<Scalar, Slots>& s, const StepInfo& info) {
  O undecayed = o;
  undecayed.weight_decay = 0.0;
  Index at = 0;
  for (const IndexRange& bias : s.biases) {
    if (bias.begin > at) o.update(slice_part(s, {at, bias.begin - at}), info);
    undecayed.update(slice_part(s, bias), info);
    at = bias.end();
  }
  if (at < s.theta.size()) o.update(slice_part(s, {at, s.theta.size() - at}), info);
}

/// The bytes of each vector that scale_and_update hands to the optimizer at once.
inline constexpr Index update_block_bytes = 32 * 1024;

/**
 * @brief A part of a thread's slice of θ that lies in one parameter group (DeclaresParameterGroups),
 * for an optimizer that SumsOverGroups: where the part's sums go.
 */
struct GroupPiece {
  IndexRange range;     ///< relative to the slice's start
  Index group = 0;      ///< the parameter group, an index into the model's parameter_groups()
  bool counted = true;  ///< whether this process adds the part's sums (each process sums its own part of θ)
};

/**
 * @brief Calls `f(part, at, piece)` for the blocks of slice `s`, in order: `part` views elements
 * `at` of s (update_block_bytes of each vector at most), `piece` points to the GroupPiece that
 * holds them (null when `pieces` is empty; non-empty, they tile s).
 *
 * A rule written as whole-vector expressions (Momentum's v = μv + g, then θ −= lr·v) reads every
 * vector from L3 once per expression when the slice outgrows L2; a block's scaling and all of its
 * passes find it in L2 (a block of four vectors is 128 KiB), and its eight pages a vector keep the
 * hardware prefetchers streaming (blocks of 4 KiB were slower than whole passes where the data
 * came from L3 either way). Blocks are also cut at the bias ranges, so that each part is all bias
 * (its biases the whole part) or none, and at the pieces' edges. Rules are elementwise (the
 * Optimizer concept) and their square roots exact, so the blocks change no bit of any element.
 */
template <class Scalar, int Slots, class F>
void for_each_block(const UpdateSlice<Scalar, Slots>& s, std::span<const GroupPiece> pieces, F&& f) {
  constexpr Index block = update_block_bytes / static_cast<Index>(sizeof(Scalar));
  const Index n = s.theta.size();
  auto bias = s.biases.begin();
  auto piece = pieces.begin();
  for (Index at = 0; at < n;) {
    while (bias != s.biases.end() && bias->end() <= at) ++bias;
    while (piece != pieces.end() && piece->range.end() <= at) ++piece;
    const bool in_bias = bias != s.biases.end() && bias->begin <= at;
    Index end = std::min(n, (at / block + 1) * block);  // block ends stay aligned after a cut
    if (bias != s.biases.end()) end = std::min(end, in_bias ? bias->end() : bias->begin);
    if (piece != pieces.end()) end = std::min(end, piece->range.end());
    UpdateSlice<Scalar, Slots> part = slice_part(s, {at, end - at});
    const IndexRange whole{0, end - at};
    if (in_bias) part.biases = std::span<const IndexRange>(&whole, 1);
    f(part, IndexRange{at, end - at}, piece != pieces.end() ? &*piece : nullptr);
    at = end;
  }
}

/**
 * @brief The trainer's update of a slice: `grad` (the slice's gradient, which s.grad views) times
 * `scale`, in place, then `o.update`, block by block (for_each_block).
 */
template <class O, class Scalar, int Slots>
void scale_and_update(const O& o, VectorMap<Scalar> grad, Scalar scale, const UpdateSlice<Scalar, Slots>& s,
                      const StepInfo& info) {
  for_each_block(s, {}, [&](const UpdateSlice<Scalar, Slots>& part, IndexRange at, const GroupPiece*) {
    grad.segment(at.begin, at.size) *= scale;
    o.update(part, info);
  });
}

/**
 * @brief The first half of the update of an optimizer `o` that SumsOverGroups: `grad` times
 * `scale` in place, then `o.add_group_sums` block by block, into the piece's group of `sums`
 * (group_sums values a group) where the piece is counted, into `scratch` where not.
 */
template <class O, class Scalar, int Slots>
void scale_and_add_group_sums(const O& o, VectorMap<Scalar> grad, Scalar scale, const UpdateSlice<Scalar, Slots>& s,
                              std::span<const GroupPiece> pieces, const StepInfo& info, std::span<double> sums,
                              std::span<double> scratch) {
  constexpr auto width = static_cast<std::size_t>(O::group_sums);
  for_each_block(s, pieces, [&](const UpdateSlice<Scalar, Slots>& part, IndexRange at, const GroupPiece* piece) {
    grad.segment(at.begin, at.size) *= scale;
    o.add_group_sums(part, info,
                     piece->counted ? sums.subspan(static_cast<std::size_t>(piece->group) * width, width) : scratch);
  });
}

/// The second half: `o.update` block by block, with StepInfo::group the totals of the piece's
/// group in `totals` (group_sums values a group, summed over θ).
template <class O, class Scalar, int Slots>
void update_groups(const O& o, const UpdateSlice<Scalar, Slots>& s, std::span<const GroupPiece> pieces, StepInfo info,
                   std::span<const double> totals) {
  constexpr auto width = static_cast<std::size_t>(O::group_sums);
  for_each_block(s, pieces, [&](const UpdateSlice<Scalar, Slots>& part, IndexRange, const GroupPiece* piece) {
    info.group = totals.subspan(static_cast<std::size_t>(piece->group) * width, width);
    o.update(part, info);
  });
}

/// Σvᵢ² in double; float squares are summed in blocks that Eigen vectorizes.
template <class Scalar>
[[nodiscard]] double squared_norm(ConstVectorMap<Scalar> v) {
  if constexpr (!std::is_same_v<Scalar, float>) {
    return static_cast<double>(v.squaredNorm());
  } else {
    // A double cast of every value runs scalar: it was most of the trainer's own time per
    // step. A block whose float sum overflows is summed again in double.
    constexpr Index block = 1024;
    double sum = 0;
    for (Index begin = 0; begin < v.size(); begin += block) {
      const auto part = v.segment(begin, std::min(block, v.size() - begin));
      const float partial = part.squaredNorm();
      sum += std::isfinite(partial) ? static_cast<double>(partial) : part.template cast<double>().squaredNorm();
    }
    return sum;
  }
}

/// Shortest decimal that round-trips `value` ("0.1", "-1e-08", "nan", "inf").
[[nodiscard]] inline std::string format_hyperparameter(double value) {
  char buffer[64];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, r.ptr);
}

[[nodiscard]] inline std::string format_hyperparameter(Index value) {
  return std::to_string(value);
}

/// Throws dptrain::invalid_argument "<owner>: <name> must <requirement>, got <value>".
template <class Value>
[[noreturn]] void throw_bad_hyperparameter(std::string_view owner, std::string_view name, std::string_view requirement,
                                           Value value) {
  std::string what;
  what.append(owner).append(": ").append(name).append(" must ").append(requirement).append(", got ");
  what.append(format_hyperparameter(value));
  throw invalid_argument(what);
}

/// `value` is finite and > 0 (learning rates, epsilon).
inline void check_positive(std::string_view owner, std::string_view name, double value) {
  if (!(std::isfinite(value) && value > 0.0)) throw_bad_hyperparameter(owner, name, "be finite and > 0", value);
}

/// `value` is finite and ≥ 0 (weight decay).
inline void check_non_negative(std::string_view owner, std::string_view name, double value) {
  if (!(std::isfinite(value) && value >= 0.0)) throw_bad_hyperparameter(owner, name, "be finite and >= 0", value);
}

/// `value` is in [0, 1) (momentum, betas, alpha). NaN fails.
inline void check_unit_interval(std::string_view owner, std::string_view name, double value) {
  if (!(value >= 0.0 && value < 1.0)) throw_bad_hyperparameter(owner, name, "be in [0, 1)", value);
}

}  // namespace dptrain::detail
