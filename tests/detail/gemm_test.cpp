// SPDX-License-Identifier: MIT
// Tests of detail/gemm.hpp: the product shapes the models use agree with Eigen's own products.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

#include "dptrain/detail/gemm.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::RowMatrix;
using dptrain::detail::gemm::Buffers;
using dptrain::detail::gemm::Plan;

template <class Scalar>
double relative_difference(const RowMatrix<Scalar>& got, const RowMatrix<Scalar>& expected) {
  return (got - expected).norm() / std::max(1.0, static_cast<double>(expected.norm()));
}

}  // namespace

TEMPLATE_TEST_CASE("detail::gemm: products with caller-owned buffers equal Eigen's, up to the planned sizes",
                   "[models][gemm]", float, double) {
  // (max m, max n, max k) planned; (m, n, k) used: equal, smaller, and tiny. The large shapes
  // need several cache blocks along every dimension.
  const auto [pm, pn, pk, m, n, k] = GENERATE(table<Index, Index, Index, Index, Index, Index>({
      {7, 5, 3, 7, 5, 3},
      {256, 10, 784, 256, 10, 784},
      {256, 10, 784, 37, 10, 784},
      {784, 256, 128, 784, 256, 128},
      {784, 256, 128, 784, 256, 1},
      {600, 700, 900, 600, 700, 900},
      {600, 700, 900, 1, 1, 1},
  }));
  INFO("planned " << pm << " x " << pn << " x " << pk << ", used " << m << " x " << n << " x " << k);
  const double tol = 100 * dptrain::test::Tolerance<TestType>::relative;
  Buffers<TestType> buffers;
  static_cast<void>(buffers.reserve(3, 3, 3));  // a second, smaller plan shares the buffers
  const Plan plan = buffers.reserve(pm, pn, pk);
  const RowMatrix<TestType> c0 = dptrain::test::random_features<TestType>(m, n, 401);

  SECTION("C += A B") {
    const RowMatrix<TestType> a = dptrain::test::random_features<TestType>(m, k, 402);
    const RowMatrix<TestType> b = dptrain::test::random_features<TestType>(k, n, 403);
    RowMatrix<TestType> c = c0;
    dptrain::detail::gemm::add_product<TestType>({c.data(), m, n}, a, b, plan, buffers);
    const RowMatrix<TestType> expected = c0 + a * b;
    CHECK(relative_difference(c, expected) < tol);
  }
  SECTION("C += A^T B") {
    const RowMatrix<TestType> a = dptrain::test::random_features<TestType>(k, m, 404);
    const RowMatrix<TestType> b = dptrain::test::random_features<TestType>(k, n, 405);
    RowMatrix<TestType> c = c0;
    dptrain::detail::gemm::add_transposed_product<TestType>({c.data(), m, n}, a, b, plan, buffers);
    const RowMatrix<TestType> expected = c0 + a.transpose() * b;
    CHECK(relative_difference(c, expected) < tol);
  }
  SECTION("C = A^T B, whatever C held") {
    const RowMatrix<TestType> a = dptrain::test::random_features<TestType>(k, m, 404);
    const RowMatrix<TestType> b = dptrain::test::random_features<TestType>(k, n, 405);
    RowMatrix<TestType> c = RowMatrix<TestType>::Constant(m, n, std::numeric_limits<TestType>::quiet_NaN());
    dptrain::detail::gemm::set_transposed_product<TestType>({c.data(), m, n}, a, b, plan, buffers);
    const RowMatrix<TestType> expected = a.transpose() * b;
    CHECK(relative_difference(c, expected) < tol);
  }
  SECTION("C += A B^T") {
    const RowMatrix<TestType> a = dptrain::test::random_features<TestType>(m, k, 406);
    const RowMatrix<TestType> b = dptrain::test::random_features<TestType>(n, k, 407);
    RowMatrix<TestType> c = c0;
    dptrain::detail::gemm::add_product_transposed<TestType>({c.data(), m, n}, a, b, plan, buffers);
    const RowMatrix<TestType> expected = c0 + a * b.transpose();
    CHECK(relative_difference(c, expected) < tol);
  }
}

TEST_CASE("detail::gemm: operands may be blocks with an outer stride", "[models][gemm]") {
  Buffers<double> buffers;
  const Plan plan = buffers.reserve(40, 30, 50);
  const RowMatrix<double> big_a = dptrain::test::random_features<double>(60, 70, 411);
  const RowMatrix<double> big_b = dptrain::test::random_features<double>(80, 90, 412);
  const Eigen::Ref<const RowMatrix<double>> a = big_a.block(3, 5, 40, 50);
  const Eigen::Ref<const RowMatrix<double>> b = big_b.block(7, 2, 50, 30);
  REQUIRE(a.outerStride() == 70);
  RowMatrix<double> c = RowMatrix<double>::Zero(40, 30);
  dptrain::detail::gemm::add_product<double>({c.data(), 40, 30}, a, b, plan, buffers);
  const RowMatrix<double> expected = a * b;
  CHECK(relative_difference(c, expected) < 1e-12);
}

TEST_CASE("detail::gemm: an empty dimension leaves C unchanged, or zero when C is written", "[models][gemm]") {
  Buffers<float> buffers;
  const Plan plan = buffers.reserve(4, 4, 4);
  const RowMatrix<float> a(4, 0), b(0, 4);
  RowMatrix<float> c = RowMatrix<float>::Constant(4, 4, 2.5f);
  dptrain::detail::gemm::add_product<float>({c.data(), 4, 4}, a, b, plan, buffers);
  CHECK(c == RowMatrix<float>::Constant(4, 4, 2.5f));
  dptrain::detail::gemm::set_transposed_product<float>({c.data(), 4, 4}, b, RowMatrix<float>(0, 4), plan, buffers);
  CHECK(c == RowMatrix<float>::Zero(4, 4));  // an empty sum, written
  const Plan none = buffers.reserve(0, 4, 4);
  CHECK(none.kc == 0);
}

TEST_CASE("detail::gemm: Eigen 3.4's kernel plans and owns buffers, the portable path plans none", "[models][gemm]") {
#if defined(DPTRAIN_PORTABLE_KERNELS)
  constexpr bool eigen_kernel = false;
#else
  constexpr bool eigen_kernel = EIGEN_WORLD_VERSION == 3 && EIGEN_MAJOR_VERSION == 4;
#endif
  Buffers<double> buffers;
  const Plan plan = buffers.reserve(64, 48, 32);
  if (eigen_kernel) {
    CHECK(plan.kc > 0);
    CHECK(plan.mc > 0);
    CHECK(plan.nc > 0);
    CHECK(buffers.lhs.size() >= plan.kc * plan.mc);
    CHECK(buffers.rhs.size() >= plan.kc * plan.nc);
  } else {
    CHECK(plan.kc == 0);
    CHECK(buffers.lhs.size() == 0);
    CHECK(buffers.rhs.size() == 0);
  }
}
