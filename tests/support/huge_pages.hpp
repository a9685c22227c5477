// SPDX-License-Identifier: MIT
// Whether memory sits on transparent huge pages, as Linux reports it in /proc/self/smaps.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace test {

/// The transparent huge pages setting of this Linux: "always", "madvise" (only for advised
/// memory) or "never"; empty elsewhere.
inline std::string transparent_huge_pages_setting() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(file, line);
  for (const char* setting : {"always", "madvise", "never"})
    if (line.find(std::string("[") + setting + "]") != std::string::npos) return setting;
  return {};
}

/// Whether this Linux backs advised memory with transparent huge pages.
inline bool transparent_huge_pages_available() {
  const std::string setting = transparent_huge_pages_setting();
  return setting == "always" || setting == "madvise";
}

/// KiB of the mapping that holds `address` which sit on huge pages (its AnonHugePages line);
/// -1 when no mapping holds it.
inline long huge_page_kib(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-') {  // a mapping's first line
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

}  // namespace test
