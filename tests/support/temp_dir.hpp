// SPDX-License-Identifier: MIT
// A uniquely named temporary directory for tests that write files; removed with its contents.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace test {

/// Creates std::filesystem::temp_directory_path() / "dptrain_<tag>_<random>_<time>_<count>".
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static std::atomic<unsigned> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = std::filesystem::temp_directory_path() / ("dptrain_" + tag + "_" + std::to_string(std::random_device{}()) +
                                                      "_" + std::to_string(now) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  /// The path of `name` inside the directory, as a string.
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// Writes `text` to `name` (binary, exactly these bytes) and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string where = file(name);
    std::ofstream(where, std::ios::binary) << text;
    return where;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace test
