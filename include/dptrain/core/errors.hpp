// SPDX-License-Identifier: MIT
// The exceptions dptrain throws: bad arguments, non-finite training, runtime failures.
#pragma once

#include <stdexcept>
#include <string>

#include "dptrain/core/types.hpp"

namespace dptrain {

/// A configuration, data set or parameter vector that cannot be trained on
/// (dimension mismatch, empty data, zero batch size, labels out of range, ...).
class invalid_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Base of the failures that happen while training or reading data.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Input that cannot be read: the message names the file, the line or byte offset, and what was
/// expected there.
class parse_error : public error {
 public:
  /// @param file     the file's path
  /// @param location where in the file, e.g. "line 17" or "byte 16"
  /// @param problem  what was expected and what was found
  parse_error(const std::string& file, const std::string& location, const std::string& problem)
      : error("dptrain: " + file + ", " + location + ": " + problem), file_(file), location_(location) {}
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] const std::string& location() const noexcept { return location_; }

 private:
  std::string file_, location_;
};

/// Training produced a non-finite loss or gradient; θ holds its last finite value.
class non_finite_error : public error {
 public:
  non_finite_error(const std::string& what, Index step) : error(what), step_(step) {}
  /// The 1-based optimizer step whose loss or gradient was not finite.
  [[nodiscard]] Index step() const noexcept { return step_; }

 private:
  Index step_;
};

}  // namespace dptrain
