// SPDX-License-Identifier: MIT
// Whether the kernels may use Eigen::internal: only with Eigen 3.4, and not under DPTRAIN_PORTABLE_KERNELS.
//
// Why: detail/gemm.hpp calls Eigen's GEMM kernel and its cache-blocking planner, and
// detail/narrow_product.hpp writes its register tiles with Eigen's packet functions. Both live in
// Eigen::internal, which Eigen may change in any release. Each use is therefore guarded by
// DPTRAIN_DETAIL_EIGEN_INTERNALS, 1 with Eigen 3.4 only; otherwise the kernels take their portable
// paths: plain Eigen products (correct with any Eigen, but large ones may allocate) and loops over
// scalars (correct, slower).
//
// DPTRAIN_PORTABLE_KERNELS, when defined, forces the portable paths with Eigen 3.4 as well, e.g.
// to tell a wrong result of the kernels from one of the model. Define it for the whole program
// (`-DDPTRAIN_PORTABLE_KERNELS`), not in some translation units only: the inline functions would
// differ between them (an ODR violation), and a workspace made by the portable path lacks the
// other's buffers. The kernels' and models' tests are also built so (tests/CMakeLists.txt).
#pragma once

#include "dptrain/core/types.hpp"  // <Eigen/Core>, which defines the version macros

#if !defined(DPTRAIN_PORTABLE_KERNELS) && EIGEN_WORLD_VERSION == 3 && EIGEN_MAJOR_VERSION == 4
#define DPTRAIN_DETAIL_EIGEN_INTERNALS 1
#else
#define DPTRAIN_DETAIL_EIGEN_INTERNALS 0
#endif
