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

/// C = Aᵀ·B, all row-major (A is stored untransposed), whatever C held; see add_product().
///
/// Why not zero C and add: for a whole-gradient product (the Mlp's ∇W = Xᵀ·Δ, 803 KB) the zeroing
/// is a pass of its own, after which C is out of L2 when the kernel reads it back. Here C is done
/// in blocks of rows, each zeroed just before the kernel adds into it, while it is in cache.
template <class Scalar>
void set_transposed_product(Eigen::Map<RowMatrix<Scalar>> c, const Eigen::Ref<const RowMatrix<Scalar>>& a,
                            const Eigen::Ref<const RowMatrix<Scalar>>& b, const Plan& plan, Buffers<Scalar>& buffers) {
#if DPTRAIN_DETAIL_EIGEN_INTERNALS
  // Eigen 3.4's sequential loop (general_matrix_matrix_product::run) on the column-major
  // Cᵀ = Bᵀ·A: its `rows` are C's columns and its `cols` C's rows, each a contiguous row of C.
  namespace internal = Eigen::internal;
  using Traits = internal::gebp_traits<Scalar, Scalar>;
  using LhsMapper = internal::const_blas_data_mapper<Scalar, Index, Eigen::ColMajor>;
  using RhsMapper = internal::const_blas_data_mapper<Scalar, Index, Eigen::RowMajor>;
  using ResMapper = internal::blas_data_mapper<Scalar, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
  const Index rows = c.cols(), cols = c.rows(), depth = a.rows(), ldc = c.outerStride();
  if (depth == 0) {
    c.setZero();
    return;
  }
  const LhsMapper lhs(b.data(), b.outerStride());
  const RhsMapper rhs(a.data(), a.outerStride());
  const ResMapper res(c.data(), ldc, 1);
  internal::gemm_pack_lhs<Scalar, Index, LhsMapper, Traits::mr, Traits::LhsProgress, typename Traits::LhsPacket4Packing,
                          Eigen::ColMajor>
      pack_lhs;
  internal::gemm_pack_rhs<Scalar, Index, RhsMapper, Traits::nr, Eigen::RowMajor> pack_rhs;
  internal::gebp_kernel<Scalar, Scalar, Index, ResMapper, Traits::mr, Traits::nr, false, false> gebp;
  // All of Bᵀ's rows in one panel if the buffer holds them: this loop packs A again for each
  // panel. Blocks of C hold about two L1 caches (64 KB: 64 rows of 256 floats), so that each
  // stays in L2 from its zeroing to the kernel; 8 to 128 such rows measured alike, all faster
  // than a separate pass (benchmarks/RESULTS.md, session 19).
  const Index kc = plan.kc;
  const Index mc = std::min(rows, std::max(plan.mc, static_cast<Index>(buffers.lhs.size()) / kc));
  const Index block_rows = 2 * static_cast<Index>(Eigen::l1CacheSize()) / (mc * Index{sizeof(Scalar)});
  const Index nc = std::min({cols, plan.nc, std::max<Index>(Traits::nr, block_rows / Traits::nr * Traits::nr)});
  for (Index i2 = 0; i2 < rows; i2 += mc) {
    const Index actual_mc = std::min(i2 + mc, rows) - i2;
    for (Index k2 = 0; k2 < depth; k2 += kc) {
      const Index actual_kc = std::min(k2 + kc, depth) - k2;
      pack_lhs(buffers.lhs.data(), lhs.getSubMapper(i2, k2), actual_kc, actual_mc);
      for (Index j2 = 0; j2 < cols; j2 += nc) {
        const Index actual_nc = std::min(j2 + nc, cols) - j2;
        pack_rhs(buffers.rhs.data(), rhs.getSubMapper(k2, j2), actual_kc, actual_nc);
        if (k2 == 0)
          for (Index j = j2; j < j2 + actual_nc; ++j) std::fill_n(c.data() + j * ldc + i2, actual_mc, Scalar(0));
        gebp(res.getSubMapper(i2, j2), buffers.lhs.data(), buffers.rhs.data(), actual_mc, actual_kc, actual_nc,
             Scalar(1));
      }
    }
  }
#else
  static_cast<void>(plan), static_cast<void>(buffers);
  c.noalias() = a.transpose() * b;
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
