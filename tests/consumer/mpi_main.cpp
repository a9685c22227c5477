// SPDX-License-Identifier: MIT
// Fits y = 2x + 1 over MPI ranks from another project (dptrain::mpi); every rank exits non-zero
// if its fit is off.
#include <dptrain/dptrain.hpp>
#include <dptrain/mpi/mpi_communicator.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
  int provided = 0, rank = 0, ranks = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>(64, 1), dptrain::Vector<double>(64)};
  for (dptrain::Index i = 0; i < 64; ++i) {
    data.features(i, 0) = static_cast<double>(i) / 32.0 - 1.0;
    data.targets[i] = 2.0 * data.features(i, 0) + 1.0;
  }
  const dptrain::LinearRegression<double> model(1);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 16, .epochs = 300}, dptrain::Sgd{.lr = 0.2},
                                       dptrain::MpiCommunicator{});
  trainer.fit(model, theta, data);
  std::printf("rank %d of %d: w = %.6f, b = %.6f\n", rank, ranks, theta[0], theta[1]);
  const bool fitted = std::abs(theta[0] - 2.0) < 1e-6 && std::abs(theta[1] - 1.0) < 1e-6;
  MPI_Finalize();
  return fitted ? 0 : 1;
}
