// SPDX-License-Identifier: MIT
// main() of dptrain_benchmarks: Google Benchmark's, plus context lines that make a result file
// self-describing (data source, thread count, array size, SIMD) in its JSON "context". The SIMD
// line is the examples' (common/machine.hpp): Eigen's own names neither FMA nor AVX2.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "common/machine.hpp"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::vector<std::int64_t> threads = bench::thread_counts();
  benchmark::AddCustomContext("dptrain_max_threads", std::to_string(threads.back()));
  benchmark::AddCustomContext("dptrain_stream_array_mib",
                              std::to_string(bench::stream_floats() * static_cast<bench::Index>(sizeof(float)) >> 20));
  benchmark::AddCustomContext("dptrain_training_data", bench::training_data_source());
  benchmark::AddCustomContext("dptrain_eigen_simd", examples::eigen_simd());
  benchmark::AddCustomContext("dptrain_compiler", __VERSION__);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
