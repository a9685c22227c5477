// SPDX-License-Identifier: MIT
// detail::ExactSqrt: Eigen evaluates it in SIMD packets where the CPU has square-root
// instructions, and every element, in a packet or in a loop's head or tail, is std::sqrt's.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "dptrain/core/types.hpp"
#include "dptrain/detail/optimizer_support.hpp"

namespace {

// Positive and negative zeros, denormals, the normal range's ends, infinities, a NaN, and random
// bit patterns of every sign and exponent.
template <class Scalar>
std::vector<Scalar> sqrt_operands() {
  using Limits = std::numeric_limits<Scalar>;
  std::vector<Scalar> x = {
      Scalar(0),           -Scalar(0),          Limits::denorm_min(), Limits::min() / 2, Limits::min(),
      Scalar(1),           Scalar(2),           Scalar(0.25),         Limits::max(),     Limits::infinity(),
      -Limits::infinity(), Limits::quiet_NaN(), -Limits::min(),       Scalar(1e-3),      Scalar(3)};
  using Bits = std::conditional_t<sizeof(Scalar) == 4, std::uint32_t, std::uint64_t>;
  std::mt19937_64 random(7);
  for (int i = 0; i < 4000; ++i) {
    const auto bits = static_cast<Bits>(random());
    // Three in four positive: the optimizers take square roots of sums of squares.
    x.push_back(i % 4 == 0 ? std::bit_cast<Scalar>(bits) : std::abs(std::bit_cast<Scalar>(bits)));
  }
  return x;
}

template <class Scalar>
bool same_result(Scalar got, Scalar want) {
  return std::isnan(want)
             ? std::isnan(got)
             : std::bit_cast<Scalar>(got) == std::bit_cast<Scalar>(want) && std::signbit(got) == std::signbit(want);
}

}  // namespace

TEMPLATE_TEST_CASE("ExactSqrt: every element is std::sqrt's, in packets and in heads and tails", "[optimizers]", float,
                   double) {
  const std::vector<TestType> x = sqrt_operands<TestType>();
  dptrain::Vector<TestType> out(static_cast<dptrain::Index>(x.size()));
  // Every start (aligned or not) and length, so that each element falls into a packet in some
  // evaluations and into the scalar head or tail in others.
  for (dptrain::Index begin = 0; begin < 19; ++begin) {
    for (dptrain::Index size : {dptrain::Index(0), dptrain::Index(1), dptrain::Index(7), dptrain::Index(33),
                                static_cast<dptrain::Index>(x.size()) - begin}) {
      const dptrain::ConstVectorMap<TestType> in(x.data() + begin, size);
      dptrain::VectorMap<TestType> result(out.data() + begin, size);
      result.array() = in.array().unaryExpr(dptrain::detail::ExactSqrt<TestType>{});
      for (dptrain::Index i = 0; i < size; ++i) {
        const TestType want = std::sqrt(in[i]);
        if (!same_result(result[i], want)) FAIL("sqrt(" << in[i] << ") gave " << result[i] << ", not " << want);
      }
    }
  }
}

TEMPLATE_TEST_CASE("ExactSqrt: Eigen evaluates it in packets on x86 with Eigen 3.4", "[optimizers]", float, double) {
  const dptrain::Vector<TestType> v = dptrain::Vector<TestType>::Ones(64);
  const auto expression = v.array().unaryExpr(dptrain::detail::ExactSqrt<TestType>{});
  const bool packets =
      (Eigen::internal::evaluator<std::remove_const_t<decltype(expression)>>::Flags & Eigen::PacketAccessBit) != 0;
  // Without packets the adaptive optimizers' updates run element by element (Adam's epoch on the
  // MLP took a third longer than Momentum's).
  CHECK(packets == (DPTRAIN_DETAIL_EXACT_SQRT_PACKETS == 1));
#if DPTRAIN_DETAIL_EIGEN_INTERNALS && defined(__SSE2__)
  CHECK(packets);
#endif
}
