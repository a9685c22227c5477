// SPDX-License-Identifier: MIT
// Tests of detail/narrow_product.hpp: each kernel equals its definition for every column count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include "dptrain/detail/narrow_product.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::RowMatrix;

template <class Scalar>
double narrow_relative_error(const RowMatrix<Scalar>& got, const RowMatrix<Scalar>& expected) {
  return (got - expected).norm() / std::max(1.0, static_cast<double>(expected.norm()));
}

}  // namespace

// Feature counts below, at and past a packet and the 16-feature transposes (with a partial
// one), row counts below and past a score tile; X is read from inside wider rows.
TEMPLATE_TEST_CASE("detail::narrow: the four kernels equal their definitions for every column count",
                   "[models][narrow]", float, double) {
  const Index d = GENERATE(1, 7, 16, 37, 64);
  const Index m = GENERATE(1, 3, 9);
  const double tol = 100 * dptrain::test::Tolerance<TestType>::relative;
  std::uint32_t seed = 500;
  for (Index k = 1; k <= dptrain::detail::narrow::max_columns; ++k) {
    INFO("k = " << k << ", d = " << d << ", m = " << m);
    dptrain::detail::narrow::with_columns(k, [&](auto columns) {
      constexpr int C = decltype(columns)::value;
      const RowMatrix<TestType> wide = dptrain::test::random_features<TestType>(m, d + 3, ++seed);
      const Index ldx = d + 3;
      const RowMatrix<TestType> x = wide.leftCols(d);
      const RowMatrix<TestType> w = dptrain::test::random_features<TestType>(d, C, ++seed);

      RowMatrix<TestType> wt(C, d);
      dptrain::detail::narrow::transpose_to_class_major<C>(w.data(), d, wt.data(), d);
      const RowMatrix<TestType> w_transposed = w.transpose();
      CHECK(wt == w_transposed);

      const RowMatrix<TestType> z0 = dptrain::test::random_features<TestType>(m, C, ++seed);
      RowMatrix<TestType> z = z0;
      dptrain::detail::narrow::add_scores<C>(wide.data(), ldx, m, d, wt.data(), d, z.data(), C);
      const RowMatrix<TestType> scores = z0 + x * w;
      CHECK(narrow_relative_error(z, scores) < tol);

      const RowMatrix<TestType> dz = dptrain::test::random_features<TestType>(m, C, ++seed);
      const RowMatrix<TestType> gt0 = dptrain::test::random_features<TestType>(C, d, ++seed);
      RowMatrix<TestType> gt = gt0;
      dptrain::detail::narrow::add_gradient<C>(wide.data(), ldx, m, d, dz.data(), C, gt.data(), d);
      const RowMatrix<TestType> gradient = gt0 + dz.transpose() * x;
      CHECK(narrow_relative_error(gt, gradient) < tol);

      const RowMatrix<TestType> g0 = dptrain::test::random_features<TestType>(d, C, ++seed);
      RowMatrix<TestType> g = g0;
      dptrain::detail::narrow::add_transposed<C>(gt0.data(), d, d, g.data());
      const RowMatrix<TestType> sum = g0 + gt0.transpose();
      CHECK(g == sum);
    });
  }
}

TEST_CASE("detail::narrow: Eigen's packets with Eigen 3.4, packets of one scalar on the portable path",
          "[models][narrow]") {
#if DPTRAIN_DETAIL_EIGEN_INTERNALS
  // Eigen 3.4 without DPTRAIN_PORTABLE_KERNELS: Eigen's packets, as wide as the build's vectors.
  CHECK(dptrain::detail::narrow::lanes<float> == Eigen::internal::packet_traits<float>::size);
  CHECK(dptrain::detail::narrow::lanes<double> == Eigen::internal::packet_traits<double>::size);
#else
  CHECK(dptrain::detail::narrow::lanes<float> == 1);
  CHECK(dptrain::detail::narrow::lanes<double> == 1);
#endif
#if defined(DPTRAIN_PORTABLE_KERNELS)
  CHECK(DPTRAIN_DETAIL_EIGEN_INTERNALS == 0);
#endif
}
