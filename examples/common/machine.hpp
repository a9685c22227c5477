// SPDX-License-Identifier: MIT
// One line that says what the examples run on: the CPU, the SIMD width Eigen uses, the threads.
#pragma once

#include <dptrain/dptrain.hpp>

#include <fstream>
#include <string>

namespace examples {

/// The CPU's model name from /proc/cpuinfo ("unknown CPU" elsewhere).
inline std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown CPU";
}

/// "CPU: AMD EPYC; Eigen SIMD: AVX512, FMA, ... (512-bit packets: 16 floats); <threads>": numbers
/// from two machines differ for reasons this line shows.
inline std::string machine_line(const std::string& threads) {
  constexpr int floats = Eigen::internal::packet_traits<float>::size;
  return "CPU: " + cpu_model() + "; Eigen SIMD: " + Eigen::SimdInstructionSetsInUse() + " (" +
         std::to_string(32 * floats) + "-bit packets: " + std::to_string(floats) + " floats); " + threads;
}

}  // namespace examples
