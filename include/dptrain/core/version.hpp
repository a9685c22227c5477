// SPDX-License-Identifier: MIT
// dptrain's version: the one place it is written (CMakeLists.txt reads these macros), and dptrain::version().
#pragma once

#include <string_view>

// CMakeLists.txt reads the three numbers below with a regular expression before project(): keep each
// as `#define DPTRAIN_VERSION_<PART> <decimal number>`.

/// Major version: incremented for changes that break the API.
#define DPTRAIN_VERSION_MAJOR 0
/// Minor version: incremented for additions.
#define DPTRAIN_VERSION_MINOR 1
/// Patch version: incremented for fixes.
#define DPTRAIN_VERSION_PATCH 0

/**
 * @brief The version as one comparable number, major·10000 + minor·100 + patch (0.1.0 is 100).
 *
 * @code
 * #if DPTRAIN_VERSION >= 200  // 0.2.0 or later
 * #endif
 * @endcode
 */
#define DPTRAIN_VERSION (DPTRAIN_VERSION_MAJOR * 10000 + DPTRAIN_VERSION_MINOR * 100 + DPTRAIN_VERSION_PATCH)

#define DPTRAIN_DETAIL_STRINGIFY_(x) #x
#define DPTRAIN_DETAIL_STRINGIFY(x) DPTRAIN_DETAIL_STRINGIFY_(x)

namespace dptrain {

/**
 * @brief The version of the dptrain headers in use, "major.minor.patch" (e.g. "0.1.0").
 * @return a view of a string literal, valid for the whole program
 *
 * @code
 * std::printf("dptrain %.*s\n", static_cast<int>(dptrain::version().size()), dptrain::version().data());
 * @endcode
 */
[[nodiscard]] constexpr std::string_view version() noexcept {
  return DPTRAIN_DETAIL_STRINGIFY(DPTRAIN_VERSION_MAJOR) "." DPTRAIN_DETAIL_STRINGIFY(
      DPTRAIN_VERSION_MINOR) "." DPTRAIN_DETAIL_STRINGIFY(DPTRAIN_VERSION_PATCH);
}

}  // namespace dptrain
