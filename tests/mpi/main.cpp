// SPDX-License-Identifier: MIT
// The MPI tests' main: MPI with the most thread support it offers, Catch2 on every rank.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int failed = Catch::Session().run(argc, argv);
  // A rank whose test failed must fail the job: mpiexec returns the worst exit status.
  MPI_Finalize();
  return failed;
}
