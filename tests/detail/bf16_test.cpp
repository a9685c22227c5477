// SPDX-License-Identifier: MIT
// Tests of detail/bf16.hpp: the rounding, the packing, and the products against a reference that
// rounds the same inputs to bf16 and sums in double; the native and portable kernels bit for bit.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "dptrain/detail/bf16.hpp"

namespace {

namespace bf16 = dptrain::detail::bf16;
using dptrain::Index;
using dptrain::RowMatrix;

float bf16_rounded(float x) {
  return bf16::widen(bf16::to_bf16(x));
}

// Entries over several binades, so that the accumulation's rounding matters.
RowMatrix<float> bf16_random_matrix(Index rows, Index cols, std::mt19937& engine) {
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-6, 6);
  RowMatrix<float> m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = std::ldexp(mantissa(engine), exponent(engine));
  return m;
}

// C0 + op(A)·op(B) with the operands rounded to bf16, in double, and the bound of an fp32 sum of
// `depth` products onto C0: γ_{depth+1} · (|C0| + Σ|a||b|), γ_n = n·u / (1 − n·u), u = 2⁻²⁴.
struct Bf16Reference {
  RowMatrix<double> value;
  RowMatrix<double> bound;
};

Bf16Reference bf16_reference(const RowMatrix<float>& c0, const RowMatrix<float>& a, const RowMatrix<float>& b) {
  const Index depth = a.cols();
  const double u = std::ldexp(1.0, -24), n = static_cast<double>(depth + 1);
  const double gamma = n * u / (1.0 - n * u);
  Bf16Reference ref{RowMatrix<double>(c0.rows(), c0.cols()), RowMatrix<double>(c0.rows(), c0.cols())};
  for (Index i = 0; i < c0.rows(); ++i)
    for (Index j = 0; j < c0.cols(); ++j) {
      double sum = c0(i, j), magnitude = std::fabs(c0(i, j));
      for (Index k = 0; k < depth; ++k) {
        const double product = static_cast<double>(bf16_rounded(a(i, k))) * static_cast<double>(bf16_rounded(b(k, j)));
        sum += product;
        magnitude += std::fabs(product);
      }
      ref.value(i, j) = sum;
      ref.bound(i, j) = gamma * magnitude;
    }
  return ref;
}

void require_within_bf16_bound(const RowMatrix<float>& got, const Bf16Reference& ref) {
  Index outside = 0;
  for (Index i = 0; i < got.size(); ++i)
    if (std::fabs(static_cast<double>(got.data()[i]) - ref.value.data()[i]) > ref.bound.data()[i]) ++outside;
  REQUIRE(outside == 0);
}

bool bf16_same_bits(const RowMatrix<float>& x, const RowMatrix<float>& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() &&
         std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.size()) * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("detail::bf16: round is to nearest even, denormals to zero, NaN stays NaN", "[models][bf16]") {
  CHECK(bf16_rounded(1.0f) == 1.0f);
  CHECK(bf16_rounded(-2.5f) == -2.5f);
  // 1 + 2⁻⁸ is halfway between 1 and 1 + 2⁻⁷: to the even one, 1. 1 + 3·2⁻⁸: to 1 + 2⁻⁶.
  CHECK(bf16_rounded(1.0f + 0x1.0p-8f) == 1.0f);
  CHECK(bf16_rounded(1.0f + 0x3.0p-8f) == 1.0f + 0x1.0p-6f);
  CHECK(bf16_rounded(1.0f + 0x1.2p-8f) == 1.0f + 0x1.0p-7f);  // above halfway: up
  CHECK(std::bit_cast<std::uint32_t>(bf16_rounded(-0x1.0p-130f)) == 0x80000000U);
  CHECK(bf16_rounded(0x1.0p-126f) == 0x1.0p-126f);  // the smallest normal stays
  CHECK(std::isnan(bf16_rounded(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(bf16_rounded(std::bit_cast<float>(0x7f800001U))));  // a NaN whose payload is in the low bits
  CHECK(bf16_rounded(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(bf16_rounded(std::numeric_limits<float>::max()) == std::numeric_limits<float>::infinity());
  CHECK(bf16::pack(1.0f, -2.0f) == (0x3f80U | (0xc000U << 16)));
}

TEST_CASE("detail::bf16: packing rounds each element as to_bf16() does, on the kernel this CPU takes",
          "[models][bf16]") {
  // Ties, denormals, NaNs, infinities, overflow and ordinary values; odd sizes for every tail.
  std::mt19937 engine(11);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  const Index rows = 37, cols = 45;
  RowMatrix<float> a(rows, cols);
  for (Index i = 0; i < a.size(); ++i) a.data()[i] = std::bit_cast<float>(any_bits(engine));
  a(0, 0) = 1.0f + 0x1.0p-8f;
  a(1, 0) = -0x1.0p-140f;
  a(2, 0) = std::numeric_limits<float>::max();
  a(3, 0) = -std::numeric_limits<float>::infinity();
  a(4, 0) = std::bit_cast<float>(0xff800001U);
  bf16::Operands ops;
  ops.reserve(rows, cols, cols);
  bf16::pack_lhs(a.data(), cols, rows, cols, ops);  // along rows
  Index wrong = 0;
  for (Index i = 0; i < rows; ++i)
    for (Index p = 0; p < bf16::pairs(cols); ++p)
      wrong += ops.lhs[static_cast<std::size_t>(i * ops.lhs_row + p * ops.lhs_pair)] !=
               bf16::pack(a(i, 2 * p), 2 * p + 1 < cols ? a(i, 2 * p + 1) : 0.0f);
  bf16::pack_rhs(a.data(), cols, rows, cols, ops);  // across rows
  for (Index p = 0; p < bf16::pairs(rows); ++p)
    for (Index j = 0; j < bf16::padded_columns(cols); ++j)
      wrong += ops.rhs[static_cast<std::size_t>(p * bf16::padded_columns(cols) + j)] !=
               (j < cols ? bf16::pack(a(2 * p, j), 2 * p + 1 < rows ? a(2 * p + 1, j) : 0.0f) : 0U);
  CHECK(wrong == 0);
}

TEST_CASE("detail::bf16: products are within fp32 accumulation's bound of the bf16 inputs summed in double",
          "[models][bf16]") {
  // Rows around the 6-row tile, columns around the 16-wide vectors and 64-wide panels, depths odd
  // and even, one pair and several blocks of 96 pairs.
  const Index rows = GENERATE(1, 5, 6, 7, 13);
  const Index cols = GENERATE(1, 15, 16, 17, 64, 65, 130);
  const Index depth = GENERATE(1, 2, 3, 64, 193, 400);
  CAPTURE(rows, cols, depth);
  std::mt19937 engine(static_cast<unsigned>(rows * 10007 + cols * 101 + depth));
  const RowMatrix<float> a = bf16_random_matrix(rows, depth, engine), b = bf16_random_matrix(depth, cols, engine);
  const RowMatrix<float> c0 = bf16_random_matrix(rows, cols, engine);
  bf16::Operands ops;
  ops.reserve(std::max(rows, depth), std::max(cols, rows), std::max({rows, cols, depth}));

  SECTION("C += A B") {
    RowMatrix<float> c = c0;
    bf16::add_product(Eigen::Map<RowMatrix<float>>(c.data(), rows, cols), a, b, ops);
    require_within_bf16_bound(c, bf16_reference(c0, a, b));
  }
  SECTION("C = A^T B and C += A^T B, A stored untransposed") {
    const RowMatrix<float> at = a.transpose();
    RowMatrix<float> c = RowMatrix<float>::Constant(rows, cols, std::numeric_limits<float>::quiet_NaN());
    bf16::transposed_product<false>(Eigen::Map<RowMatrix<float>>(c.data(), rows, cols), at, b, ops);
    require_within_bf16_bound(c, bf16_reference(RowMatrix<float>::Zero(rows, cols), a, b));
    c = c0;
    bf16::transposed_product<true>(Eigen::Map<RowMatrix<float>>(c.data(), rows, cols), at, b, ops);
    require_within_bf16_bound(c, bf16_reference(c0, a, b));
  }
  SECTION("C = A B^T, B stored untransposed") {
    const RowMatrix<float> bt = b.transpose();
    RowMatrix<float> c = RowMatrix<float>::Constant(rows, cols, std::numeric_limits<float>::quiet_NaN());
    bf16::set_product_transposed(Eigen::Map<RowMatrix<float>>(c.data(), rows, cols), a, bt, ops);
    require_within_bf16_bound(c, bf16_reference(RowMatrix<float>::Zero(rows, cols), a, b));
  }
}

TEST_CASE("detail::bf16: operands may be blocks with an outer stride", "[models][bf16]") {
  std::mt19937 engine(3);
  const RowMatrix<float> big_a = bf16_random_matrix(20, 50, engine), big_b = bf16_random_matrix(60, 40, engine);
  RowMatrix<float> c_big = bf16_random_matrix(12, 30, engine);
  const RowMatrix<float> before = c_big;
  const RowMatrix<float> a = big_a.block(2, 3, 9, 37), b = big_b.block(5, 1, 37, 21), c0 = c_big.block(1, 2, 9, 21);
  bf16::Operands ops;
  ops.reserve(9, 21, 37);
  bf16::pack_lhs(big_a.data() + 2 * 50 + 3, 50, 9, 37, ops);
  bf16::pack_rhs(big_b.data() + 5 * 40 + 1, 40, 37, 21, ops);
  bf16::product<true>(c_big.data() + 1 * 30 + 2, 30, 9, 21, 37, ops);
  require_within_bf16_bound(c_big.block(1, 2, 9, 21), bf16_reference(c0, a, b));
  // Outside the block C is untouched: the column tail is stored under a mask.
  RowMatrix<float> outside = c_big, outside_before = before;
  outside.block(1, 2, 9, 21).setZero();
  outside_before.block(1, 2, 9, 21).setZero();
  CHECK(bf16_same_bits(outside, outside_before));
}

TEST_CASE("detail::bf16: the native and the portable kernels give the same bits", "[models][bf16]") {
#if DPTRAIN_DETAIL_BF16_NATIVE
  if (!bf16::cpu_has_avx512_bf16()) {
    WARN("this CPU has no AVX512-BF16: only the portable kernel ran here");
    return;
  }
  const Index rows = GENERATE(1, 6, 11, 128);
  const Index cols = GENERATE(3, 16, 70, 256);
  const Index depth = GENERATE(1, 7, 200, 785);
  CAPTURE(rows, cols, depth);
  std::mt19937 engine(static_cast<unsigned>(rows + 7 * cols + 31 * depth));
  RowMatrix<float> a = bf16_random_matrix(rows, depth, engine), b = bf16_random_matrix(depth, cols, engine);
  RowMatrix<float> c0 = bf16_random_matrix(rows, cols, engine);
  // Tiny accumulators and operands: the sums underflow, and both kernels flush them alike.
  for (Index j = 0; j < cols; j += 3) c0(0, j) = std::ldexp(c0(0, j), -130);
  for (Index k = 0; k < depth; k += 5) a(rows - 1, k) = std::ldexp(a(rows - 1, k), -60);
  for (Index j = 0; j < cols; j += 2) b(0, j) = std::ldexp(b(0, j), -66);
  bf16::Operands ops;
  ops.reserve(rows, cols, depth);
  const Index np = bf16::pairs(depth);
  // Both layouts of the left operand: A's rows (C = A B) and A stored transposed (C = Aᵀ B).
  const RowMatrix<float> at = a.transpose();
  for (const bool transposed : {false, true}) {
    if (transposed)
      bf16::pack_lhs_transposed(at.data(), rows, depth, rows, ops);
    else
      bf16::pack_lhs(a.data(), depth, rows, depth, ops);
    bf16::pack_rhs(b.data(), cols, depth, cols, ops);
    for (const bool accumulate : {true, false}) {
      CAPTURE(transposed, accumulate);
      RowMatrix<float> native = c0, portable = c0;
      if (accumulate) {
        bf16::native_product<true>(native.data(), cols, rows, cols, np, ops);
        bf16::portable_product<true>(portable.data(), cols, rows, cols, np, ops);
      } else {
        bf16::native_product<false>(native.data(), cols, rows, cols, np, ops);
        bf16::portable_product<false>(portable.data(), cols, rows, cols, np, ops);
      }
      CHECK(bf16_same_bits(native, portable));
    }
  }
#else
  WARN("the native kernel is not compiled in this build (DPTRAIN_PORTABLE_KERNELS or not x86-64)");
#endif
}

TEST_CASE(
    "detail::bf16: a product that fp32 cannot hold exactly is added with one rounding, as the instruction adds it",
    "[models][bf16]") {
  // One pair, its even element 0: C = fma(a, b, c0). Both cases would come out otherwise from
  // c0 + a·b rounded twice, which is all the portable kernel computes where products are exact.
  const auto one_pair = [](float a, float b, float c0) {
    const RowMatrix<float> lhs{{0.0f, a}}, rhs{{0.0f}, {b}};
    bf16::Operands ops;
    ops.reserve(1, 1, 2);
    bf16::pack_lhs(lhs.data(), 2, 1, 2, ops);
    bf16::pack_rhs(rhs.data(), 1, 2, 1, ops);
    std::vector<float> results;
    float c = c0;
    bf16::portable_product<true>(&c, 1, 1, 1, 1, ops);
    results.push_back(c);
#if DPTRAIN_DETAIL_BF16_NATIVE
    if (bf16::cpu_has_avx512_bf16()) {
      c = c0;
      bf16::native_product<true>(&c, 1, 1, 1, 1, ops);
      results.push_back(c);
    }
#endif
    return results;
  };
  // 2⁻⁷⁵ · 2⁻⁷⁵ = 2⁻¹⁵⁰, half the smallest denormal: onto an odd c0 it is a tie, to even: c0 + 2⁻¹⁴⁹.
  const float odd = std::ldexp(1.0f + 0x1.0p-23f, -126);
  for (const float got : one_pair(0x1.0p-75f, 0x1.0p-75f, odd)) CHECK(got == std::ldexp(1.0f + 0x1.0p-22f, -126));
  // 2⁶⁴ · 2⁶⁴ = 2¹²⁸ overflows fp32, but 2¹²⁸ − FLT_MAX = 2¹⁰⁴ does not.
  for (const float got : one_pair(0x1.0p64f, 0x1.0p64f, -std::numeric_limits<float>::max())) CHECK(got == 0x1.0p104f);
}

TEST_CASE("detail::bf16: an empty depth writes zero or leaves C, an empty C is not touched", "[models][bf16]") {
  bf16::Operands ops;
  ops.reserve(3, 4, 0);
  RowMatrix<float> c = RowMatrix<float>::Constant(3, 4, 0x1.0p-140f);  // denormal: kept, not flushed
  bf16::product<true>(c.data(), 4, 3, 4, 0, ops);
  CHECK((c.array() == 0x1.0p-140f).all());
  bf16::product<false>(c.data(), 4, 3, 4, 0, ops);
  CHECK(c.isZero(0.0f));
  bf16::product<false>(nullptr, 4, 0, 4, 5, ops);
}
