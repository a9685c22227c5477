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

/// The instruction sets Eigen vectorises with in this build, in the order of Eigen's own list.
/// Eigen 3.4's SimdInstructionSetsInUse() names neither FMA nor AVX2 in an AVX2 build ("AVX SSE,
/// SSE2, …"), so an AVX2 + FMA machine would look like a plain AVX one; other ISAs take its list.
inline std::string eigen_simd() {
  std::string sets;
  [[maybe_unused]] const auto add = [&sets](const char* name) {
    sets += (sets.empty() ? "" : ", ") + std::string(name);
  };
#if defined(EIGEN_VECTORIZE_AVX512)
  add("AVX512");
#endif
#if defined(EIGEN_VECTORIZE_FMA)
  add("FMA");
#endif
#if defined(EIGEN_VECTORIZE_AVX2)
  add("AVX2");
#endif
#if defined(EIGEN_VECTORIZE_AVX)
  add("AVX");
#endif
#if defined(EIGEN_VECTORIZE_SSE)
  add("SSE");
#endif
#if defined(EIGEN_VECTORIZE_SSE2)
  add("SSE2");
#endif
#if defined(EIGEN_VECTORIZE_SSE3)
  add("SSE3");
#endif
#if defined(EIGEN_VECTORIZE_SSSE3)
  add("SSSE3");
#endif
#if defined(EIGEN_VECTORIZE_SSE4_1)
  add("SSE4.1");
#endif
#if defined(EIGEN_VECTORIZE_SSE4_2)
  add("SSE4.2");
#endif
  return sets.empty() ? Eigen::SimdInstructionSetsInUse() : sets;
}

/// "CPU: AMD EPYC; Eigen SIMD: AVX512, FMA, ... (512-bit packets: 16 floats); <threads>": numbers
/// from two machines differ for reasons this line shows.
inline std::string machine_line(const std::string& threads) {
  constexpr int floats = Eigen::internal::packet_traits<float>::size;
  return "CPU: " + cpu_model() + "; Eigen SIMD: " + eigen_simd() + " (" + std::to_string(32 * floats) +
         "-bit packets: " + std::to_string(floats) + " floats); " + threads;
}

}  // namespace examples
