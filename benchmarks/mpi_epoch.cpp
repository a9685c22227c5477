// SPDX-License-Identifier: MIT
// mpi_epoch: seconds per Fashion-MNIST epoch under mpiexec (MpiCommunicator, funneled or multiple,
// both summing in a shared-memory window on one machine; network: funneled through MPI_Allreduce
// alone, as between machines) or in one process (single), the share of the step spent reducing
// (the aggregate phase) and the test accuracy (for benchmarks/compare/pytorch_fmnist.py --ddp,
// trained alike: momentum 0.9, lr 0.05). A fourth argument S > 0 trains under Reproducible{.shards
// = S} instead of the synchronous step; each line also gives the rank's peak memory (max RSS).
//   mpiexec -np 2 --bind-to none benchmarks/mpi_epoch funneled 1 mlp    # 2 ranks x 1 thread
//   benchmarks/mpi_epoch single 2 mlp                                   # 1 rank x 2 threads
//   benchmarks/mpi_epoch single 2 mlp 8                                 # the same, reproducible
// benchmarks/mpi_rounds.sh runs them in alternating rounds.
#include <dptrain/dptrain.hpp>
#include <dptrain/mpi/mpi_communicator.hpp>

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/fashion_mnist_data.hpp"

namespace {

template <class Model>
void epochs(const Model& model, const std::string& mode, dptrain::Index threads, dptrain::Index shards,
            const dptrain::DenseDataset<float, dptrain::Label>& data,
            const dptrain::DenseDataset<float, dptrain::Label>& test) {
  dptrain::Vector<float> theta = model.init_parameters(1);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 256, .epochs = 2, .seed = 1};
  const dptrain::Momentum momentum{.lr = 0.05, .momentum = 0.9};
  const dptrain::MpiCommunicator mpi{
      .threading = mode == "multiple" ? dptrain::MpiThreading::multiple : dptrain::MpiThreading::funneled,
      .node = mode == "network" ? MPI_COMM_SELF : MPI_COMM_NULL};
  const auto fit = [&](auto synchronizer) {
    return mode == "single"
               ? dptrain::DataParallelTrainer(options, momentum, synchronizer).fit(model, theta, data)
               : dptrain::DataParallelTrainer(options, momentum, synchronizer, mpi).fit(model, theta, data);
  };
  const dptrain::FitReport report =
      shards > 0 ? fit(dptrain::Reproducible{.shards = shards}) : fit(dptrain::EveryStepSynchronizer{});
  double aggregate = 0, total = 0;
  for (const dptrain::WorkerReport& worker : report.workers) {
    aggregate += worker.aggregate;
    total += worker.seconds();
  }
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const double accuracy = dptrain::accuracy(model, theta, test, threads);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  if (rank == 0)
    std::printf(
        "%s ranks %d threads %ld shards %ld: %.4f s/epoch, aggregate share %.3f, test accuracy %.4f, max RSS %.1f "
        "MiB\n",
        mode.c_str(), ranks, long(threads), long(shards), report.seconds / static_cast<double>(report.epochs),
        aggregate / total, accuracy, static_cast<double>(usage.ru_maxrss) / 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const std::string mode = argc > 1 ? argv[1] : "funneled";
  const dptrain::Index threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const std::string model = argc > 3 ? argv[3] : "mlp";
  const dptrain::Index shards = argc > 4 ? std::atoi(argv[4]) : 0;
  const examples::FashionMnist fashion = examples::load_fashion_mnist();
  if (model == "mlp")
    epochs(dptrain::Mlp<float>({784, 256, 10}), mode, threads, shards, fashion.train, fashion.test);
  else
    epochs(dptrain::SoftmaxRegression<float>(784, 10), mode, threads, shards, fashion.train, fashion.test);
  MPI_Finalize();
}
