// SPDX-License-Identifier: MIT
// Shared pieces of the reader fuzz targets: the per-process input file, invariant checks, expected errors.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "dptrain/core/errors.hpp"

namespace fuzz {

/// Reports a broken invariant and aborts, so that libFuzzer records the input as a crash.
[[noreturn]] inline void fail(const char* condition, const char* file, int line, const std::string& detail = {}) {
  std::fprintf(stderr, "%s:%d: dptrain fuzz invariant broken: %s%s%s\n", file, line, condition,
               detail.empty() ? "" : " -- ", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// A macro, so that the message shows the condition's text and line.
#define DPTRAIN_FUZZ_CHECK(condition) ((condition) ? void(0) : ::fuzz::fail(#condition, __FILE__, __LINE__))
#define DPTRAIN_FUZZ_CHECK_MSG(condition, detail) \
  ((condition) ? void(0) : ::fuzz::fail(#condition, __FILE__, __LINE__, (detail)))

/// The file a reader reads: one per process and tag (the pid keeps -fork / -jobs workers apart),
/// rewritten for each input and removed when the process exits normally.
class InputFile {
 public:
  explicit InputFile(std::string_view tag) {
    std::error_code ignored;
    std::filesystem::path dir = std::filesystem::temp_directory_path(ignored);  // $TMPDIR, else /tmp
    if (dir.empty()) dir = "/tmp";
    path_ = (dir / ("dptrain_fuzz_" + std::string(tag) + "_" + std::to_string(::getpid()))).string();
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { std::remove(path_.c_str()); }

  /// Replaces the file's contents with `size` bytes from `data`; returns the path.
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    // Overwrite, then cut to size: opening with O_TRUNC would make ext4 flush the file to disk
    // on every close (auto_da_alloc), which costs more than the read itself.
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    DPTRAIN_FUZZ_CHECK_MSG(fd >= 0, "cannot create " + path_);
    std::size_t done = 0;
    while (done < size) {
      const ::ssize_t wrote = ::write(fd, data + done, size - done);
      DPTRAIN_FUZZ_CHECK_MSG(wrote > 0, "cannot write " + path_);
      done += static_cast<std::size_t>(wrote);
    }
    DPTRAIN_FUZZ_CHECK_MSG(::ftruncate(fd, static_cast<::off_t>(size)) == 0, "cannot truncate " + path_);
    DPTRAIN_FUZZ_CHECK_MSG(::close(fd) == 0, "cannot close " + path_);
    return path_;
  }

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// How a read ended.
enum class Outcome { returned, parse_error, error, invalid_argument };

[[nodiscard]] inline const char* name(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::returned:
      return "returned";
    case Outcome::parse_error:
      return "parse_error";
    case Outcome::error:
      return "error";
    case Outcome::invalid_argument:
      return "invalid_argument";
  }
  return "?";
}

/// Where the text after a message's "dptrain::<Owner>: " prefix starts (the owner a name such as
/// "read_csv" or "DataParallelTrainer::resume"); std::string_view::npos if it has no such prefix.
[[nodiscard]] inline std::size_t after_owner(std::string_view what) noexcept {
  constexpr std::string_view prefix = "dptrain::";
  if (!what.starts_with(prefix)) return std::string_view::npos;
  const std::size_t colon = what.find(": ", prefix.size());
  if (colon == std::string_view::npos || colon == prefix.size()) return std::string_view::npos;
  for (const char c : what.substr(prefix.size(), colon - prefix.size()))
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':'))
      return std::string_view::npos;
  return colon + 2;
}

/**
 * Runs `read` and classifies how it ended. dptrain's documented exceptions are expected results,
 * but their messages must start with "dptrain::<Owner>: ", and a parse_error must name one of
 * `files` (the paths the harness wrote) right after it. Any other exception propagates:
 * libFuzzer reports it as a crash (std::terminate).
 */
template <class Read>
[[nodiscard]] Outcome run_read(Read&& read, std::initializer_list<std::string_view> files) {
  const auto check_message = [](const std::exception& e) {
    const std::string_view what = e.what();
    DPTRAIN_FUZZ_CHECK_MSG(after_owner(what) != std::string_view::npos, std::string(what));
  };
  try {
    read();
    return Outcome::returned;
  } catch (const dptrain::parse_error& e) {
    check_message(e);
    bool named = false;
    for (const std::string_view file : files) named = named || e.file() == file;
    DPTRAIN_FUZZ_CHECK_MSG(named, std::string(e.what()));
    const std::string_view what = e.what();
    DPTRAIN_FUZZ_CHECK_MSG(what.substr(after_owner(what)).starts_with(e.file() + ", " + e.location() + ": "),
                           std::string(what));
    return Outcome::parse_error;
  } catch (const dptrain::error& e) {
    check_message(e);
    return Outcome::error;
  } catch (const dptrain::invalid_argument& e) {
    check_message(e);
    return Outcome::invalid_argument;
  }
}

/// Checks that an outcome is the expected one.
#define DPTRAIN_FUZZ_CHECK_OUTCOME(outcome, expected)                                                 \
  DPTRAIN_FUZZ_CHECK_MSG((outcome) == (expected), std::string("expected ") + ::fuzz::name(expected) + \
                                                      ", the reader's outcome was " + ::fuzz::name(outcome))

/// True for a value that is finite (any integer type counts as finite).
template <class T>
[[nodiscard]] bool finite(T value) noexcept {
  if constexpr (std::is_floating_point_v<T>)
    return std::isfinite(value);
  else
    return true;
}

}  // namespace fuzz
