// SPDX-License-Identifier: MIT
// FirstError: the first exception thrown on any thread of a fit(), rethrown once the team has left.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "dptrain/core/omp.hpp"

namespace dptrain {

/**
 * @brief Keeps the first exception of a fit(); later ones are dropped. Thread-safe.
 *
 * A worker never lets an exception leave the team's region (that would std::terminate): it keeps
 * it here, marks its own part of the step as failed, and goes on to the next collective, where
 * every worker learns of the failure together and leaves.
 */
class FirstError {
 public:
  /// Runs f; returns false, keeping its exception if it is the first, when f threw.
  template <class F>
  bool guard(F&& f) noexcept {
    try {
      std::forward<F>(f)();
      return true;
    } catch (...) {
      keep(std::current_exception());
      return false;
    }
  }

  /// Keeps `error` unless an earlier one is kept.
  void keep(std::exception_ptr error) noexcept {
    DPTRAIN_OMP(critical(dptrain_first_error)) {
      if (!error_) error_ = std::move(error);
    }
  }

  /// Whether an exception is kept; read it only where no thread may still keep one.
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(error_); }

  /// The kept exception's what() (empty if none); read it only where no thread may still keep one.
  [[nodiscard]] std::string message() const {
    if (!error_) return {};
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "an exception not derived from std::exception";
    }
  }

  /// Rethrows the kept exception, if any, with its original type.
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
};

}  // namespace dptrain
