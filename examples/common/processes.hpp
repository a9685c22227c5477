// SPDX-License-Identifier: MIT
// The processes an example runs in: this one alone, or the ranks of `mpirun` when the examples
// were built with the MPI component (DPTRAIN_EXAMPLES_MPI) and mpirun launched them.
#pragma once

#include <dptrain/dptrain.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#ifdef DPTRAIN_EXAMPLES_MPI
#include <mpi.h>

#include <dptrain/mpi/mpi_communicator.hpp>
#endif

namespace examples {

/// "1 thread", "4 threads".
inline std::string threads_text(dptrain::Index n) {
  return std::to_string(n) + (n == 1 ? " thread" : " threads");
}

class Processes {
 public:
  /// Starts MPI (thread 0 calls it: MPI_THREAD_FUNNELED) when mpirun launched this process.
  Processes(int& argc, char**& argv) {
    const int launched = env("OMPI_COMM_WORLD_SIZE", 1);
#ifdef DPTRAIN_EXAMPLES_MPI
    if (launched > 1 || std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
      int provided = 0;
      MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
      if (provided < MPI_THREAD_FUNNELED) {
        std::fprintf(stderr, "this MPI offers no MPI_THREAD_FUNNELED: the threads of a rank cannot train together\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
      mpi_ = true;
    }
#else
    (void)argc;
    (void)argv;
    if (launched > 1 && env("OMPI_COMM_WORLD_RANK", 0) == 0)
      std::printf("note: built without MPI (no dptrain::mpi target): each of the %d processes trains alone\n",
                  launched);
#endif
  }
  Processes(const Processes&) = delete;
  Processes& operator=(const Processes&) = delete;
  ~Processes() {
#ifdef DPTRAIN_EXAMPLES_MPI
    if (mpi_) MPI_Finalize();
#endif
  }

  [[nodiscard]] int rank() const noexcept {
    return rank_;
  }
  [[nodiscard]] int ranks() const noexcept {
    return ranks_;
  }
  /// Whether this process prints: rank 0 does.
  [[nodiscard]] bool lead() const noexcept {
    return rank_ == 0;
  }

  /// The default threads of a rank: its cores. Unbound (--bind-to none) the ranks on this
  /// machine share all of them; bound, mpirun already gave each rank its own.
  [[nodiscard]] static dptrain::Index default_threads() {
    const bool bound = dptrain::available_cores() < static_cast<dptrain::Index>(std::thread::hardware_concurrency());
    const int sharing = bound ? 1 : std::max(1, env("OMPI_COMM_WORLD_LOCAL_SIZE", 1));
    return std::max<dptrain::Index>(1, dptrain::default_threads() / sharing);
  }

  /// "2 ranks × 4 threads", or "4 threads" in one process.
  [[nodiscard]] std::string describe(const std::string& threads) const {
    return ranks_ > 1 ? std::to_string(ranks_) + " ranks × " + threads : threads;
  }

  /// f(communicator): MpiCommunicator over every rank under mpirun, the default otherwise.
  template <class F>
  decltype(auto) with_communicator(F&& f) const {
#ifdef DPTRAIN_EXAMPLES_MPI
    if (mpi_) return f(dptrain::MpiCommunicator{});
#endif
    return f(dptrain::SingleProcessCommunicator{});
  }

  /// f(communicator) on ranks 0 … ranks − 1 together while the others sleep (they would take cores
  /// from the measured ranks if they waited in a spinning MPI_Barrier); then every rank goes on.
  template <class F>
  void on_first_ranks(int ranks, F&& f) const {
#ifdef DPTRAIN_EXAMPLES_MPI
    if (mpi_) {
      MPI_Comm first = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, rank_ < ranks ? 0 : MPI_UNDEFINED, rank_, &first);
      if (first != MPI_COMM_NULL) {
        f(dptrain::MpiCommunicator{.comm = first});
        MPI_Comm_free(&first);
      }
      MPI_Request all_here = MPI_REQUEST_NULL;
      MPI_Ibarrier(MPI_COMM_WORLD, &all_here);
      for (int done = 0; MPI_Test(&all_here, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0;)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return;
    }
#endif
    if (ranks == 1) f(dptrain::SingleProcessCommunicator{});
  }

 private:
  static int env(const char* name, int otherwise) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::max(0, std::atoi(value)) : otherwise;
  }

  int rank_ = 0, ranks_ = 1;
  bool mpi_ = false;
};

}  // namespace examples
