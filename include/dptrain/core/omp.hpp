// SPDX-License-Identifier: MIT
// One macro for OpenMP pragmas, and the runtime calls dptrain uses (with serial fallbacks).
#pragma once

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>

#include "dptrain/core/types.hpp"

/// `DPTRAIN_OMP(barrier)` expands to `#pragma omp barrier`; to nothing without OpenMP.
#define DPTRAIN_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP)
#define DPTRAIN_OMP(x) DPTRAIN_PRAGMA(omp x)
#else
#define DPTRAIN_OMP(x)
#endif

namespace dptrain {

/**
 * @brief Threads OpenMP would use for a parallel region here (honours OMP_NUM_THREADS).
 *
 * Not capped by available_cores(): without OMP_NUM_THREADS libgomp and libomp already start
 * from the CPUs of the process's affinity mask, and a thread count set on purpose (to measure
 * oversubscription, say) is kept. FitReport::oversubscribed() tells when a run had more threads
 * than cores.
 */
[[nodiscard]] inline Index default_threads() noexcept {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

namespace detail {

[[nodiscard]] inline Index omp_thread_id() noexcept {
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

[[nodiscard]] inline Index omp_team_size() noexcept {
#if defined(_OPENMP)
  return omp_get_num_threads();
#else
  return 1;
#endif
}

/// The most threads a `parallel num_threads(n)` region opened here can get: one where this level
/// may not open another active region (max-active-levels), at most OpenMP's thread limit. (With
/// dynamic adjustment on, the runtime may still give fewer.)
[[nodiscard]] inline Index omp_threads_allowed(Index n) noexcept {
#if defined(_OPENMP)
  if (omp_get_active_level() >= omp_get_max_active_levels()) return 1;
  return std::min<Index>(n, omp_get_thread_limit());
#else
  return n > 0 ? 1 : n;
#endif
}

/// Whether the caller runs inside an active parallel region (then a nested one gets one thread).
[[nodiscard]] inline bool omp_in_parallel() noexcept {
#if defined(_OPENMP)
  return ::omp_in_parallel() != 0;
#else
  return false;
#endif
}

}  // namespace detail
}  // namespace dptrain
