// SPDX-License-Identifier: MIT
// Tests of available_cores(): the CPUs a team may run on, also where OpenMP pins the initial
// thread to one place (ctest runs this file's cases once more under OMP_PROC_BIND=close
// OMP_PLACES=cores, tests/CMakeLists.txt).
#include <catch2/catch.hpp>

#include <omp.h>
#include <sched.h>

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
