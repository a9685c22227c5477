// SPDX-License-Identifier: MIT
// detail::gzip::Input: a data file read through zlib, gzipped (detected by its magic bytes) or plain.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

#include "dptrain/core/errors.hpp"

namespace dptrain::detail::gzip {

// One file opened through zlib: gzread decompresses a gzip stream (magic 1f 8b, whatever the
// file's name) and copies any other file through unchanged, reading large requests straight into
// the caller's buffer. `owner` is the reader that opened it ("dptrain::read_idx_images"), for its
// error messages; they locate read errors by byte offset (of the decompressed data for a gzip
// stream). The readers of IDX and CSV files share it, so both accept gzip the same way.
class Input {
 public:
  // `open_location` is where a failure to open the file is reported: the reader's first
  // location, "byte 0" or "line 1".
  Input(const std::string& path, const char* owner, const std::string& open_location) : path_(path), owner_(owner) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      const int code = errno;
      throw parse_error(owner_, path_, open_location,
                        "cannot open the file: " +
                            (code != 0 ? std::generic_category().message(code) : std::string("out of memory")));
    }
    gzbuffer(file_, 1U << 17);           // must precede the first read, gzdirect included
    compressed_ = gzdirect(file_) == 0;  // looks for the gzip magic 1f 8b
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input() { gzclose(file_); }

  // "byte N", where N counts decompressed bytes for a gzipped file.
  [[nodiscard]] std::string where(std::uint64_t offset) const {
    return "byte " + std::to_string(offset) + (compressed_ ? " of the decompressed data" : "");
  }

  // Reads up to `count` bytes; fewer only at the end of the file. Throws on read errors and on
  // corrupt gzip data.
  std::size_t read(unsigned char* destination, std::size_t count) {
    std::size_t done = 0;
    while (done < count) {
      const std::size_t request = std::min<std::size_t>(count - done, std::size_t{1} << 30);
      const int got = gzread(file_, destination + done, static_cast<unsigned>(request));
      if (got < 0) fail();
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    if (done < count) {
      // A gzip stream cut short reads as the end of the file (Z_BUF_ERROR); anything else is an
      // error of its own (a bad CRC, a read failure) and is reported as such.
      int code = Z_OK;
      gzerror(file_, &code);
      if (code != Z_OK && code != Z_BUF_ERROR) fail();
      cut_short_ = code == Z_BUF_ERROR;
    }
    offset_ += done;
    return done;
  }

  // Reads the rest of the file, whole: the text readers parse it in memory. The string grows in
  // doubling blocks as data arrives, so its size never has to be known (or trusted) up front.
  [[nodiscard]] std::string read_all() {
    constexpr std::size_t largest_block = std::size_t{16} << 20;
    std::size_t block = std::size_t{64} << 10;
    std::string text;
    for (;;) {
      const std::size_t before = text.size();
      text.resize(before + block);
      const std::size_t got = read(reinterpret_cast<unsigned char*>(text.data() + before), block);
      text.resize(before + got);
      if (got < block) break;
      block = std::min(block * 2, largest_block);
    }
    expect_complete();
    return text;
  }

  // Once the end of the data has been read: all of it came out, but without the gzip trailer its
  // CRC-32 was never checked, so a download cut short is rejected rather than half-trusted.
  void expect_complete() const {
    if (cut_short_)
      throw parse_error(owner_, path_, where(offset_),
                        "the gzip data is cut short: its CRC-32 and length trailer are missing");
  }

  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }
  [[nodiscard]] const char* owner() const noexcept { return owner_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  [[noreturn]] void fail() const {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    std::string text = message != nullptr ? message : "";
    if (code == Z_ERRNO) text = std::generic_category().message(errno);
    throw parse_error(owner_, path_, where(offset_),
                      std::string(compressed_ ? "cannot decompress the gzip data: " : "cannot read the file: ") + text);
  }

  std::string path_;
  const char* owner_;
  gzFile file_ = nullptr;
  bool compressed_ = false;
  bool cut_short_ = false;  // the gzip stream ended before its trailer
  std::uint64_t offset_ = 0;
};

}  // namespace dptrain::detail::gzip
