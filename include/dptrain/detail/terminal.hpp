// SPDX-License-Identifier: MIT
// Whether an output stream is a terminal, and small text formatting for the logging callbacks.
#pragma once

#include <cmath>
#include <cstdio>
#include <iostream>
#include <ostream>

#if __has_include(<unistd.h>)
#include <unistd.h>
#define DPTRAIN_DETAIL_HAS_ISATTY 1
#else
#define DPTRAIN_DETAIL_HAS_ISATTY 0
#endif

namespace dptrain::detail {

/// True if `out` is std::cout and stdout is a terminal, or std::cerr/std::clog and stderr is one.
[[nodiscard]] inline bool is_terminal(const std::ostream& out) {
#if DPTRAIN_DETAIL_HAS_ISATTY
  if (&out == &std::cout) return ::isatty(::fileno(stdout)) != 0;
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(::fileno(stderr)) != 0;
#else
  static_cast<void>(out);
#endif
  return false;
}

/// Writes `seconds` as m:ss or h:mm:ss ("?" if not finite or negative) into buffer.
inline void format_duration(char (&buffer)[32], double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    std::snprintf(buffer, sizeof buffer, "?");
    return;
  }
  const auto total = static_cast<long long>(seconds + 0.5);
  const long long h = total / 3600, m = (total / 60) % 60, s = total % 60;
  if (h > 0)
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", h, m, s);
  else
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld", m, s);
}

}  // namespace dptrain::detail
