// SPDX-License-Identifier: MIT
// available_cores(): the CPUs this process may run on, to tell when a team has more threads than cores.
#pragma once

#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The CPUs (hardware threads) this process may run on: on Linux the CPUs of its affinity
 * mask (`sched_getaffinity`), which `taskset`, `numactl`, cpusets and container runtimes narrow;
 * elsewhere, or if that call fails (more than 1024 CPUs), `std::thread::hardware_concurrency()`.
 * At least 1.
 *
 * A team with more threads than this is *oversubscribed*: some thread always waits for one that
 * is not running (FitReport::oversubscribed()). Not seen here: a CPU quota (`docker --cpus`, a
 * cgroup's `cpu.max`) and other processes that keep the CPUs busy.
 *
 * Thread-safe; a system call each time (about a microsecond).
 */
[[nodiscard]] inline Index available_cores() noexcept {
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
