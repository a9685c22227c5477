// SPDX-License-Identifier: MIT
// available_cores(): the CPUs a team started here may run on, to tell when a team has more threads than cores.
#pragma once

#include <array>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__linux__)
#include <sched.h>
#endif

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The CPUs (hardware threads) a team started here may run on.
 *
 * Where OpenMP binds threads to places (`OMP_PROC_BIND`, `OMP_PLACES`), the CPUs of the places
 * this thread's team spreads over: the runtime pins the initial thread to a single place at the
 * first parallel region, so its own affinity mask then names one place's CPUs, not the team's.
 * Otherwise, on Linux, the CPUs of the affinity mask (`sched_getaffinity`), which `taskset`,
 * `numactl`, cpusets, `mpirun --bind-to` and container runtimes narrow; elsewhere, or if that
 * call fails (more than 1024 CPUs), `std::thread::hardware_concurrency()`. At least 1.
 *
 * A team with more threads than this is *oversubscribed*: some thread always waits for one that
 * is not running (FitReport::oversubscribed()). Not seen here: a CPU quota (`docker --cpus`, a
 * cgroup's `cpu.max`) and other processes that keep the CPUs busy.
 *
 * Thread-safe; a system call each time (about a microsecond).
 */
[[nodiscard]] inline Index available_cores() noexcept {
#if defined(_OPENMP)
  if (omp_get_proc_bind() != omp_proc_bind_false) {
    std::array<int, 1024> numbers;  // place numbers, up to the CPUs a cpu_set_t can name
    const int places = omp_get_partition_num_places();
    if (places > 0 && places <= static_cast<int>(numbers.size())) {
      omp_get_partition_place_nums(numbers.data());
      Index cpus = 0;
      for (int i = 0; i < places; ++i) cpus += omp_get_place_num_procs(numbers[static_cast<std::size_t>(i)]);
      if (cpus > 0) return cpus;
    }
  }
#endif
#if defined(__linux__)
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    const int cpus = CPU_COUNT(&mask);
    if (cpus > 0) return cpus;
  }
#endif
  const unsigned cpus = std::thread::hardware_concurrency();  // 0: unknown
  return cpus > 0 ? static_cast<Index>(cpus) : 1;
}

}  // namespace dptrain
