// SPDX-License-Identifier: MIT
// The exceptions dptrain throws: bad arguments, non-finite training, runtime failures.
//
// Every message has one form, "dptrain::<Owner>: <what> must ..., got ...", where <Owner> is the
// class or function that made the check, e.g. "dptrain::DataParallelTrainer: batch_size must be
// at least 1, got 0"; a sentence of another kind keeps the same "dptrain::<Owner>: " prefix.
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

/// Input that cannot be read: the message names the reader, the file, the line or byte offset,
/// and what was expected there: "dptrain::read_csv: x.csv, line 3, column 2: expected a number, found \"abc\"".
class parse_error : public error {
 public:
  /// @param owner    the function that reads the file, e.g. "dptrain::read_csv"
  /// @param file     the file's path
  /// @param location where in the file, e.g. "line 17" or "byte 16"
  /// @param problem  what was expected and what was found
  parse_error(const std::string& owner, const std::string& file, const std::string& location,
              const std::string& problem)
      : error(owner + ": " + file + ", " + location + ": " + problem), file_(file), location_(location) {}
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
