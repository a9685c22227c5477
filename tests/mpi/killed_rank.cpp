// SPDX-License-Identifier: MIT
// A rank killed by a signal in the middle of training (run by killed_rank.cmake under mpiexec):
// the other ranks wait in a collective that will never complete, and Open MPI must end the job.
#include <mpi.h>

#include <atomic>
#include <csignal>

#include "dptrain/dptrain.hpp"
#include "dptrain/mpi/mpi_communicator.hpp"
#include "support/data.hpp"

namespace {

// The last rank kills itself with SIGKILL (no handler, no clean-up) at its fifth gradient.
struct KilledOnLastRank : dptrain::LinearRegression<double> {
  bool killed = false;  // this rank dies (its rank is read before fit(): workers do not call MPI)
  mutable std::atomic<int> calls{0};
  KilledOnLastRank(dptrain::Index inputs, bool this_rank_dies) : LinearRegression(inputs), killed(this_rank_dies) {}
  double loss_and_gradient(dptrain::ConstVectorRef<double> theta, const batch_type& batch,
                           dptrain::VectorRef<double> grad, workspace_type& ws) const {
    if (killed && calls.fetch_add(1) + 1 == 5) std::raise(SIGKILL);
    return LinearRegression::loss_and_gradient(theta, batch, grad, ws);
  }
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto data = test::linear_data<double>(4096, 8, 1);
  const KilledOnLastRank model(8, rank == size - 1);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 64, .epochs = 1000}, dptrain::Sgd{.lr = 0.01},
                               dptrain::MpiCommunicator{})
      .fit(model, theta, data);
  MPI_Finalize();
  return 0;  // not reached: the job is ended when the last rank dies
}
