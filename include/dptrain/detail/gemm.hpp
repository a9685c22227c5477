// SPDX-License-Identifier: MIT
// Matrix products C += op(A)·op(B) on Eigen's GEMM kernel with packing buffers that the caller owns.
//
// Why: `c.noalias() += a * b` packs its operands into scratch buffers that Eigen takes from the
// stack when they fit in EIGEN_STACK_ALLOCATION_LIMIT (128 KiB) and otherwise mallocs on every
// call (e.g. a 128-row batch through a 784 × 256 layer). Eigen also runs a product on several
// OpenMP threads when called outside a parallel region, or inside a team of one thread. Here
// the same kernel (Eigen::internal::general_matrix_matrix_product, Eigen 3.4) runs on one
// thread, with its cache blocking planned once for the largest sizes and its buffers sized in
// make_workspace(), so a model's step allocates nothing and its products are single-threaded.
// With another Eigen version, or with DPTRAIN_PORTABLE_KERNELS defined (detail/eigen_internals.hpp),
// the plain Eigen expressions are used instead (correct, but they may allocate for large products,
// and reserve() plans nothing).
#pragma once

#include <algorithm>

#include "dptrain/core/types.hpp"
#include "dptrain/detail/eigen_internals.hpp"

namespace dptrain::detail::gemm {

/// Eigen's cache blocking (kc: depth, mc and nc: panel sizes) for a product of at most some size.
struct Plan {
  Index kc = 0;
  Index mc = 0;
  Index nc = 0;
};

/// The packing buffers of one workspace's products; grown by reserve(), never during a product.
template <class Scalar>
struct Buffers {
  Vector<Scalar> lhs;  ///< kc·mc scalars
  Vector<Scalar> rhs;  ///< kc·nc scalars

  /// Plans the blocking of a row-major C (m × n) += A (m × k) · B (k × n) for any sizes up to
  /// these, and grows the buffers to fit it. Called by make_workspace(), not in a step.
  Plan reserve(Index m, Index n, Index k) {
    Plan plan;
#if DPTRAIN_DETAIL_EIGEN_INTERNALS
    if (m > 0 && n > 0 && k > 0) {
      // Eigen computes a row-major C as the column-major Cᵀ = Bᵀ·Aᵀ: n rows, m columns, depth k.
      plan = {k, n, m};
      Eigen::internal::computeProductBlockingSizes<Scalar, Scalar, 1>(plan.kc, plan.mc, plan.nc, Index{1});
      if (lhs.size() < plan.kc * plan.mc) lhs.resize(plan.kc * plan.mc);
      if (rhs.size() < plan.kc * plan.nc) rhs.resize(plan.kc * plan.nc);
    }
#else
    static_cast<void>(m), static_cast<void>(n), static_cast<void>(k);
#endif
    return plan;
  }
};

#if DPTRAIN_DETAIL_EIGEN_INTERNALS
/// Eigen's blocking interface, pointing at buffers owned elsewhere.
template <class Scalar>
class BorrowedBlocking : public Eigen::internal::level3_blocking<Scalar, Scalar> {
 public:
  BorrowedBlocking(const Plan& plan, Buffers<Scalar>& buffers) {
    this->m_blockA = buffers.lhs.data();
    this->m_blockB = buffers.rhs.data();
    this->m_kc = plan.kc;
    this->m_mc = plan.mc;
    this->m_nc = plan.nc;
  }
};

/// C (m × n, row-major, outer stride ldc) += A·B, with A and B stored as LhsOrder and RhsOrder.
template <int LhsOrder, int RhsOrder, class Scalar>
void kernel(Index m, Index n, Index k, const Scalar* a, Index lda, const Scalar* b, Index ldb, Scalar* c, Index ldc,
            const Plan& plan, Buffers<Scalar>& buffers) {
  if (m == 0 || n == 0 || k == 0) return;
  BorrowedBlocking<Scalar> blocking(plan, buffers);
  Eigen::internal::general_matrix_matrix_product<Index, Scalar, LhsOrder, false, Scalar, RhsOrder, false,
                                                 Eigen::RowMajor, 1>::run(m, n, k, a, lda, b, ldb, c, 1, ldc, Scalar(1),
                                                                          blocking, nullptr);
}
#endif

/// C += A·B, all row-major; `plan` from buffers.reserve() with sizes at least C's rows and
/// columns and A's columns. Allocates nothing.
template <class Scalar>
void add_product(Eigen::Map<RowMatrix<Scalar>> c, const Eigen::Ref<const RowMatrix<Scalar>>& a,
                 const Eigen::Ref<const RowMatrix<Scalar>>& b, const Plan& plan, Buffers<Scalar>& buffers) {
#if DPTRAIN_DETAIL_EIGEN_INTERNALS
  kernel<Eigen::RowMajor, Eigen::RowMajor>(c.rows(), c.cols(), a.cols(), a.data(), a.outerStride(), b.data(),
                                           b.outerStride(), c.data(), c.outerStride(), plan, buffers);
#else
  static_cast<void>(plan), static_cast<void>(buffers);
  c.noalias() += a * b;
#endif
}

/// C += Aᵀ·B, all row-major (A is stored untransposed); see add_product().
template <class Scalar>
void add_transposed_product(Eigen::Map<RowMatrix<Scalar>> c, const Eigen::Ref<const RowMatrix<Scalar>>& a,
                            const Eigen::Ref<const RowMatrix<Scalar>>& b, const Plan& plan, Buffers<Scalar>& buffers) {
#if DPTRAIN_DETAIL_EIGEN_INTERNALS
  // A stored row-major is Aᵀ stored column-major.
  kernel<Eigen::ColMajor, Eigen::RowMajor>(c.rows(), c.cols(), a.rows(), a.data(), a.outerStride(), b.data(),
                                           b.outerStride(), c.data(), c.outerStride(), plan, buffers);
#else
  static_cast<void>(plan), static_cast<void>(buffers);
  c.noalias() += a.transpose() * b;
#endif
}

/// C += A·Bᵀ, all row-major (B is stored untransposed); see add_product().
template <class Scalar>
void add_product_transposed(Eigen::Map<RowMatrix<Scalar>> c, const Eigen::Ref<const RowMatrix<Scalar>>& a,
                            const Eigen::Ref<const RowMatrix<Scalar>>& b, const Plan& plan, Buffers<Scalar>& buffers) {
#if DPTRAIN_DETAIL_EIGEN_INTERNALS
  kernel<Eigen::RowMajor, Eigen::ColMajor>(c.rows(), c.cols(), a.cols(), a.data(), a.outerStride(), b.data(),
                                           b.outerStride(), c.data(), c.outerStride(), plan, buffers);
#else
  static_cast<void>(plan), static_cast<void>(buffers);
  c.noalias() += a * b.transpose();
#endif
}

}  // namespace dptrain::detail::gemm
