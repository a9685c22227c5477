// SPDX-License-Identifier: MIT
// Internals shared by the optimizers and schedules: an exact sqrt functor and hyperparameter checks.
#pragma once

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain::detail {

/**
 * @brief Correctly rounded elementwise square root, for `array.unaryExpr(ExactSqrt<Scalar>{})`.
 *
 * Eigen's vectorised `sqrt()` is, under EIGEN_FAST_MATH (Eigen's default), an rsqrt
 * approximation plus one Newton step for float (and for double with AVX-512): its result then
 * depends on whether an element falls into a SIMD packet or into the scalar head or tail of
 * the loop, that is on where a thread's slice of θ begins and ends. This functor has no packet
 * path, so Eigen evaluates the expression element by element and every element is the same
 * however θ is sliced (and matches PyTorch's correctly rounded sqrt).
 */
template <class Scalar>
struct ExactSqrt {
  Scalar operator()(const Scalar& x) const {
    using std::sqrt;
    return sqrt(x);
  }
};

/// Shortest decimal that round-trips `value` ("0.1", "-1e-08", "nan", "inf").
[[nodiscard]] inline std::string format_hyperparameter(double value) {
  char buffer[64];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, r.ptr);
}

[[nodiscard]] inline std::string format_hyperparameter(Index value) {
  return std::to_string(value);
}

/// Throws dptrain::invalid_argument "<owner>: <name> must <requirement>, got <value>".
template <class Value>
[[noreturn]] void throw_bad_hyperparameter(std::string_view owner, std::string_view name, std::string_view requirement,
                                           Value value) {
  std::string what;
  what.append(owner).append(": ").append(name).append(" must ").append(requirement).append(", got ");
  what.append(format_hyperparameter(value));
  throw invalid_argument(what);
}

/// `value` is finite and > 0 (learning rates, epsilon).
inline void check_positive(std::string_view owner, std::string_view name, double value) {
  if (!(std::isfinite(value) && value > 0.0)) throw_bad_hyperparameter(owner, name, "be finite and > 0", value);
}

/// `value` is finite and ≥ 0 (weight decay).
inline void check_non_negative(std::string_view owner, std::string_view name, double value) {
  if (!(std::isfinite(value) && value >= 0.0)) throw_bad_hyperparameter(owner, name, "be finite and >= 0", value);
}

/// `value` is in [0, 1) (momentum, betas, alpha). NaN fails.
inline void check_unit_interval(std::string_view owner, std::string_view name, double value) {
  if (!(value >= 0.0 && value < 1.0)) throw_bad_hyperparameter(owner, name, "be in [0, 1)", value);
}

}  // namespace dptrain::detail
