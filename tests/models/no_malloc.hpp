// SPDX-License-Identifier: MIT
// Counts Eigen's heap allocations, for the no-allocation tests; included FIRST, before anything
// that includes Eigen.
//
// With EIGEN_RUNTIME_NO_MALLOC every Eigen heap allocation first checks is_malloc_allowed()
// through eigen_assert, which Release builds compile away; here eigen_assert goes to a counter
// instead. Both macros must precede Eigen's headers. The files that include this form a program
// of their own (dptrain_no_malloc_tests, tests/CMakeLists.txt): the linker keeps one copy of each
// inline function, and every copy in that program is compiled with these same macros.
#pragma once

#define EIGEN_RUNTIME_NO_MALLOC
#define eigen_assert(x) ((x) ? static_cast<void>(0) : ::no_malloc::record_eigen_assert())

namespace no_malloc {
inline long eigen_asserts = 0;  // failed eigen_asserts: forbidden allocations (or any other Eigen assert)
inline void record_eigen_assert() noexcept {
  ++eigen_asserts;
}
}  // namespace no_malloc

#include <Eigen/Core>

namespace no_malloc {

/// Forbids Eigen's heap allocations while it lives; attempts() counts those tried meanwhile.
class NoMalloc {
 public:
  NoMalloc() : before_(eigen_asserts) { Eigen::internal::set_is_malloc_allowed(false); }
  ~NoMalloc() { Eigen::internal::set_is_malloc_allowed(true); }
  NoMalloc(const NoMalloc&) = delete;
  NoMalloc& operator=(const NoMalloc&) = delete;
  [[nodiscard]] long attempts() const noexcept { return eigen_asserts - before_; }

 private:
  long before_;
};

}  // namespace no_malloc
