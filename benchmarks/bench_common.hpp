// SPDX-License-Identifier: MIT
// Shared by the benchmark sources: thread-count lists, counters, and running a timed loop on
// one persistent OpenMP team with Google Benchmark's State driven by thread 0.
#pragma once

#include <dptrain/core/omp.hpp>
#include <dptrain/core/gradient_buffers.hpp>
#include <dptrain/core/team_member.hpp>
#include <dptrain/core/types.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

using dptrain::Index;

/// 1, 2, 4, … below the processors OpenMP may use, then that number itself, so the same binary
/// covers a 2-core laptop and a 64-core server.
inline std::vector<std::int64_t> thread_counts() {
  std::int64_t procs = 1;
#if defined(_OPENMP)
  procs = omp_get_num_procs();
#endif
  std::vector<std::int64_t> counts;
  for (std::int64_t t = 1; t < procs; t *= 2) counts.push_back(t);
  counts.push_back(procs);
  return counts;
}

/// Floats in each array of the STREAM benchmarks: far larger than the caches (bench_aggregators.cpp).
Index stream_floats();

/// Where the training benchmarks' data come from: the real Fashion-MNIST or generated (bench_training.cpp).
std::string training_data_source();

/// For Benchmark::Apply: one run per thread count, argument named "threads".
inline void threads_arg(benchmark::internal::Benchmark* b) {
  b->ArgName("threads");
  for (std::int64_t t : thread_counts()) b->Arg(t);
}

/// A counter in units of 1e9 per second of the benchmark's time: `amount` is per iteration.
/// (GFLOPS and GBps in the JSON are then directly GFLOP/s and GB/s, not bytes or FLOPs.)
inline benchmark::Counter giga_per_second(double amount_per_iteration) {
  return benchmark::Counter(amount_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/**
 * @brief Runs `body()` once per benchmark iteration on every thread of the calling team, with a
 * barrier after each, so an iteration ends when the slowest thread is done. Call it from every
 * thread of the team; thread 0 must be the thread that owns `state`.
 *
 * Thread 0 drives Google Benchmark's loop (which starts and stops the clock); the others run
 * the same number of iterations, State::max_iterations, which the loop runs exactly.
 */
template <class Body>
void team_loop(benchmark::State& state, const dptrain::TeamMember& team, Body&& body) {
  const benchmark::IterationCount iterations = state.max_iterations;
  team.barrier();  // every thread is in the region before the clock starts
  if (team.rank == 0) {
    for (auto _ : state) {
      body();
      team.barrier();
    }
  } else {
    for (benchmark::IterationCount i = 0; i < iterations; ++i) {
      body();
      team.barrier();
    }
  }
}

/**
 * @brief Opens one OpenMP parallel region of `threads` threads and calls `per_thread(team)` on
 * each; marks the benchmark as failed if OpenMP gives fewer threads (e.g. OMP_THREAD_LIMIT).
 */
template <class PerThread>
void run_team(benchmark::State& state, Index threads, PerThread&& per_thread) {
  bool complete = true;
  DPTRAIN_OMP(parallel num_threads(threads)) {
    const dptrain::TeamMember team{dptrain::detail::omp_thread_id(), dptrain::detail::omp_team_size()};
    if (team.size != threads) {
      if (team.rank == 0) complete = false;
    } else {
      per_thread(team);
    }
  }
  if (!complete) state.SkipWithError("OpenMP gave the region fewer threads than asked for");
}

}  // namespace bench
