// SPDX-License-Identifier: MIT
// Tests of available_cores(): the CPUs a team may run on, also where OpenMP pins the initial
// thread to one place (ctest runs this file's cases once more under OMP_PROC_BIND=close
// OMP_PLACES=cores, tests/CMakeLists.txt); and of CpuUsage and other_load(), which read how
// busy those CPUs are.
#include <catch2/catch.hpp>

#include <omp.h>
#include <sched.h>

#include <chrono>
#include <cmath>

#include "dptrain/core/cores.hpp"
#include "dptrain/core/omp.hpp"

TEST_CASE("available_cores: the team's CPUs, also after OpenMP has pinned this thread", "[core][cores]") {
  // The first parallel region is where a binding runtime pins the initial thread to one place.
  DPTRAIN_OMP(parallel num_threads(2)) {
    static_cast<void>(omp_get_thread_num());
  }
  const dptrain::Index cores = dptrain::available_cores();
  CHECK(cores >= 1);
  if (omp_get_proc_bind() == omp_proc_bind_false) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    REQUIRE(sched_getaffinity(0, sizeof(mask), &mask) == 0);
    CHECK(cores == CPU_COUNT(&mask));
  } else {
    // Every place's CPUs, counted independently of the partition query.
    int cpus = 0;
    for (int place = 0; place < omp_get_num_places(); ++place) cpus += omp_get_place_num_procs(place);
    CHECK(cores == cpus);
    INFO("places " << omp_get_num_places() << ", CPUs " << cpus);
    // The pinned thread's own mask is one place: what available_cores() must look past.
    cpu_set_t mask;
    CPU_ZERO(&mask);
    REQUIRE(sched_getaffinity(0, sizeof(mask), &mask) == 0);
    CHECK(CPU_COUNT(&mask) <= cores);
  }
}

TEST_CASE("other_load: the cores' worth of CPU time others used between two readings", "[core][cores]") {
  dptrain::CpuUsage before{.busy = 100.0, .process = 10.0}, after{.busy = 103.0, .process = 11.0};
  CHECK(dptrain::other_load(before, after, 2.0) == 1.0);  // 3 s busy, 1 s of it ours, over 2 s
  // Ticks rounded down: less busy time than this process's own.
  after.busy = 100.9;
  CHECK(dptrain::other_load(before, after, 2.0) == 0.0);
  CHECK(std::isnan(dptrain::other_load(before, after, 0.0)));
  CHECK(std::isnan(dptrain::other_load(dptrain::CpuUsage{}, after, 1.0)));  // not measured
}

TEST_CASE("CpuUsage: this process's CPU time and the CPUs' busy time, both growing", "[core][cores]") {
  const dptrain::CpuUsage first = dptrain::CpuUsage::now();
  REQUIRE(std::isfinite(first.busy));  // Linux: /proc/stat and a process CPU clock
  REQUIRE(std::isfinite(first.process));
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  volatile double x = 1;
  while (Clock::now() - start < std::chrono::milliseconds(50)) x = x * 1.0000001;
  const dptrain::CpuUsage second = dptrain::CpuUsage::now();
  CHECK(second.process > first.process);
  CHECK(second.busy >= first.busy);
}
