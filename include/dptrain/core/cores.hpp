// SPDX-License-Identifier: MIT
// available_cores(): the CPUs a team started here may run on, to tell when a team has more threads than
// cores; CpuUsage and other_load(): how busy other work kept those CPUs, to tell a shared machine.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <span>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__linux__)
#include <sched.h>
#include <time.h>
#include <unistd.h>
#endif

#include "dptrain/core/types.hpp"

namespace dptrain {

#if defined(__linux__)
namespace detail {
/// The CPUs a team started here may run on (see available_cores()); false if unknown.
inline bool team_cpus(cpu_set_t& cpus) noexcept {
  CPU_ZERO(&cpus);
#if defined(_OPENMP)
  if (omp_get_proc_bind() != omp_proc_bind_false) {
    const int places = omp_get_partition_num_places();
    if (places > 0 && places <= CPU_SETSIZE) {
      std::array<int, CPU_SETSIZE> numbers, ids;  // the team's place numbers; one place's CPU ids
      omp_get_partition_place_nums(numbers.data());
      for (int i = 0; i < places; ++i) {
        const int place = numbers[static_cast<std::size_t>(i)];
        const int count = omp_get_place_num_procs(place);
        if (count <= 0 || count > CPU_SETSIZE) continue;
        omp_get_place_proc_ids(place, ids.data());
        for (const int id : std::span(ids.data(), static_cast<std::size_t>(count)))
          if (id >= 0 && id < CPU_SETSIZE) CPU_SET(id, &cpus);
      }
      if (CPU_COUNT(&cpus) > 0) return true;
    }
  }
#endif
  return sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0;
}
}  // namespace detail
#endif

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
 * cgroup's `cpu.max`) and other processes that keep the CPUs busy (CpuUsage and other_load()
 * measure those, FitReport::other_load reports them).
 *
 * Thread-safe; a system call each time (about a microsecond).
 */
[[nodiscard]] inline Index available_cores() noexcept {
#if defined(__linux__)
  cpu_set_t team;
  if (detail::team_cpus(team)) return CPU_COUNT(&team);
#elif defined(_OPENMP)
  if (omp_get_proc_bind() != omp_proc_bind_false) {
    std::array<int, 1024> numbers;  // place numbers
    const int places = omp_get_partition_num_places();
    if (places > 0 && places <= static_cast<int>(numbers.size())) {
      omp_get_partition_place_nums(numbers.data());
      Index cpus = 0;
      for (int i = 0; i < places; ++i) cpus += omp_get_place_num_procs(numbers[static_cast<std::size_t>(i)]);
      if (cpus > 0) return cpus;
    }
  }
#endif
  const unsigned cpus = std::thread::hardware_concurrency();  // 0: unknown
  return cpus > 0 ? static_cast<Index>(cpus) : 1;
}

/**
 * @brief What the CPUs of available_cores() had done at one moment: their busy time since boot,
 * whoever ran, and this process's own CPU time. Two of them, taken before and after a piece of
 * work, give other_load(): how much of the CPUs other work took meanwhile.
 *
 * On Linux from /proc/stat (every state but idle and iowait, counted in clock ticks of usually
 * 10 ms; in a VM, steal: time the host gave other guests) and the process's CPU clock;
 * elsewhere, or if /proc/stat cannot be read, NaN.
 */
struct CpuUsage {
  double busy = std::numeric_limits<double>::quiet_NaN();     ///< seconds the CPUs were busy
  double process = std::numeric_limits<double>::quiet_NaN();  ///< seconds this process ran

  /// Now. Thread-safe; reads /proc/stat (tens of microseconds): once per fit(), not per step.
  [[nodiscard]] static CpuUsage now() noexcept {
    CpuUsage usage;
#if defined(__linux__)
    cpu_set_t cpus;
    timespec own{};
    const long ticks = sysconf(_SC_CLK_TCK);
    if (!detail::team_cpus(cpus) || ticks <= 0 || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) != 0) return usage;
    std::FILE* stat = std::fopen("/proc/stat", "r");
    if (stat == nullptr) return usage;
    unsigned long long busy = 0;
    bool found = false;
    char line[512];
    while (std::fgets(line, sizeof(line), stat) != nullptr) {
      // "cpuN user nice system idle iowait irq softirq steal guest guest_nice": one line per CPU
      // (guest time is in user already). The first line, "cpu ", sums them all and is skipped.
      if (line[0] != 'c' || line[1] != 'p' || line[2] != 'u' || line[3] < '0' || line[3] > '9') continue;
      char* field = line + 3;
      const unsigned long cpu = std::strtoul(field, &field, 10);
      unsigned long long state[8] = {};
      for (unsigned long long& value : state) value = std::strtoull(field, &field, 10);
      if (cpu >= CPU_SETSIZE || !CPU_ISSET(static_cast<int>(cpu), &cpus)) continue;
      busy += state[0] + state[1] + state[2] + state[5] + state[6] + state[7];  // not idle (3), iowait (4)
      found = true;
    }
    std::fclose(stat);
    if (!found) return usage;
    usage.busy = static_cast<double>(busy) / static_cast<double>(ticks);
    usage.process = static_cast<double>(own.tv_sec) + 1e-9 * static_cast<double>(own.tv_nsec);
#endif
    return usage;
  }
};

/**
 * @brief The cores' worth of CPU time that other work (other processes, the kernel, other guests
 * of a VM) used on available_cores() between two CpuUsage readings `seconds` apart: about 0 on a
 * machine of its own, about 1 beside one busy process. NaN where CpuUsage is not available or
 * `seconds` is not positive. From clock ticks: within a few hundredths of a core over a second,
 * coarse over a short interval.
 */
[[nodiscard]] inline double other_load(const CpuUsage& before, const CpuUsage& after, double seconds) noexcept {
  const double others = (after.busy - before.busy) - (after.process - before.process);
  if (!(seconds > 0) || !std::isfinite(others)) return std::numeric_limits<double>::quiet_NaN();
  return std::max(0.0, others / seconds);  // the ticks' rounding can make a quiet machine's slightly negative
}

}  // namespace dptrain
