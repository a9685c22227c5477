// SPDX-License-Identifier: MIT
// mpi_overlap: would overlapping the cross-rank all-reduce with the backward pass pay here?
//
// The step of the MLP 784-256-10, reduced to its first layer (200 704 of its 203 530 gradient
// values, and most of its arithmetic): forward X·W₁ and ReLU, then the weight gradient Xᵀ·δ in
// row blocks, each a contiguous range of θ. Three ways, in alternating rounds:
//   compute    the arithmetic and an MPI_Barrier: the floor;
//   blocking   the arithmetic, then one MPI_Allreduce of the gradient (what MpiCommunicator does);
//   overlap B  an MPI_Iallreduce of each of B blocks as soon as it is computed, MPI_Testall after
//              each block (Open MPI progresses a request only inside MPI calls), MPI_Waitall at
//              the end: the overlap a model that hands out finished ranges would allow;
//   after B    the same B requests posted after the arithmetic: what the non-blocking
//              collectives cost without any overlap;
//   thread B   each of B blocks handed, as soon as it is computed, to a thread of the rank's own
//              that all-reduces it with a blocking MPI_Allreduce (the background thread of
//              Horovod and PyTorch DDP); needs MPI_THREAD_MULTIPLE.
// Rank 0 prints the median µs per step over the rounds, and how much of the blocking all-reduce's
// time each overlap hid.
//   mpiexec -np 2 --bind-to none --mca btl self,tcp benchmarks/mpi_overlap --rows 128 --blocks 2,4,8
#include <mpi.h>

#include <Eigen/Dense>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mpi_common.hpp"

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Layer {
  Matrix x, w, z, gradient;
  Layer(int rows, int in, int out)
      : x(Matrix::Random(rows, in)), w(Matrix::Random(in, out) * 0.05f), z(rows, out), gradient(in, out) {}

  void forward() {
    z.noalias() = x * w;
    z = z.cwiseMax(0.0f);  // ReLU; z stands in for δ below
  }
  // Rows [begin, end) of Xᵀ·δ: the gradient of the weights from inputs begin…end−1.
  void gradient_rows(int begin, int end) {
    gradient.middleRows(begin, end - begin).noalias() = x.middleCols(begin, end - begin).transpose() * z;
  }
};

// A thread of the rank's own that all-reduces every block it is handed, in order, with a
// blocking MPI_Allreduce on a communicator of its own.
class Sender {
 public:
  Sender(float* data, int width) : data_(data), width_(width) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    thread_ = std::thread([this] { run(); });
  }
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;
  ~Sender() {
    {
      const std::lock_guard lock(mutex_);
      quit_ = true;
    }
    posted_.notify_one();
    thread_.join();
    MPI_Comm_free(&comm_);
  }
  void post(int begin, int end) {
    {
      const std::lock_guard lock(mutex_);
      queue_.emplace_back(begin, end);
    }
    posted_.notify_one();
  }
  // Until `count` blocks have been summed since the last wait.
  void wait(int count) {
    std::unique_lock lock(mutex_);
    summed_.wait(lock, [&] { return done_ == count; });
    done_ = 0;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      posted_.wait(lock, [&] { return quit_ || !queue_.empty(); });
      if (queue_.empty()) return;
      const auto [begin, end] = queue_.front();
      queue_.pop_front();
      lock.unlock();
      MPI_Allreduce(MPI_IN_PLACE, data_ + static_cast<std::ptrdiff_t>(begin) * width_, (end - begin) * width_,
                    MPI_FLOAT, MPI_SUM, comm_);
      lock.lock();
      ++done_;
      summed_.notify_one();
    }
  }
  float* data_;
  int width_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::mutex mutex_;
  std::condition_variable posted_, summed_;
  std::deque<std::pair<int, int>> queue_;
  int done_ = 0;
  bool quit_ = false;
  std::thread thread_;
};

// Ways of a step.
enum Mode { compute, blocking, overlap, after, thread };

// Block b of `blocks`: rows [begin, end) of the gradient.
struct Block {
  int begin, end;
  Block(int in, int b, int blocks) : begin(in * b / blocks), end(in * (b + 1) / blocks) {}
};

// Starts the all-reduce of one block of the gradient.
void post(Layer& layer, Block block, std::vector<MPI_Request>& requests) {
  const auto out = static_cast<int>(layer.gradient.cols());
  requests.emplace_back();
  MPI_Iallreduce(MPI_IN_PLACE, layer.gradient.data() + static_cast<std::ptrdiff_t>(block.begin) * out,
                 (block.end - block.begin) * out, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &requests.back());
}

void step(Layer& layer, Sender& sender, Mode mode, int blocks) {
  const int in = static_cast<int>(layer.gradient.rows()), out = static_cast<int>(layer.gradient.cols());
  layer.forward();
  std::vector<MPI_Request> requests;
  requests.reserve(static_cast<std::size_t>(blocks));
  for (int b = 0; b < blocks; ++b) {
    const Block block(in, b, blocks);
    layer.gradient_rows(block.begin, block.end);
    if (mode == thread) sender.post(block.begin, block.end);
    if (mode == overlap) {
      post(layer, block, requests);
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    }
  }
  if (mode == after)
    for (int b = 0; b < blocks; ++b) post(layer, Block(in, b, blocks), requests);
  if (mode == compute) MPI_Barrier(MPI_COMM_WORLD);
  if (mode == blocking)
    MPI_Allreduce(MPI_IN_PLACE, layer.gradient.data(), in * out, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (mode == overlap || mode == after)
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  if (mode == thread) sender.wait(blocks);
}

struct Options {
  int rows = 128, rounds = 7, steps = 200;
  std::vector<long long> blocks = {2, 4, 8};  // the block counts to overlap with
};

Options parse(int argc, char** argv) {
  Options o;
  const auto count = [](const std::string& option, const std::string& text) {
    return static_cast<int>(bench::count_argument("mpi_overlap", option, text));
  };
  for (int i = 1; i < argc; i += 2) {
    const std::string option = argv[i];
    if (i + 1 == argc) throw std::invalid_argument("mpi_overlap: unknown option or missing value: " + option);
    const std::string value = argv[i + 1];
    if (option == "--rows") {
      o.rows = count(option, value);
    } else if (option == "--rounds") {
      o.rounds = count(option, value);
    } else if (option == "--steps") {
      o.steps = count(option, value);
    } else if (option == "--blocks") {
      o.blocks = bench::count_list("mpi_overlap", option, value);
    } else {
      throw std::invalid_argument("mpi_overlap: unknown option " + option);
    }
  }
  return o;
}

// Every way in every round, then rank 0's table; the sender's thread ends before MPI does.
void measure(const Options& o, bool multiple) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Layer layer(o.rows, 784, 256);
  Sender sender(layer.gradient.data(), static_cast<int>(layer.gradient.cols()));
  // The ways, in the order every round runs them: {mode, blocks}.
  std::vector<std::pair<Mode, int>> ways = {{compute, 1}, {blocking, 1}};
  for (const long long count : o.blocks) {
    const int blocks = static_cast<int>(count);
    ways.emplace_back(overlap, blocks);
    ways.emplace_back(after, blocks);
    if (multiple) ways.emplace_back(thread, blocks);
  }
  std::vector<std::vector<double>> times(ways.size());
  for (int round = 0; round < o.rounds; ++round) {
    for (std::size_t w = 0; w < ways.size(); ++w) {
      step(layer, sender, ways[w].first, ways[w].second);  // warm
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = std::chrono::steady_clock::now();
      for (int s = 0; s < o.steps; ++s) step(layer, sender, ways[w].first, ways[w].second);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times[w].push_back(seconds / o.steps * 1e6);
    }
  }
  if (rank == 0) {
    const double floor = bench::median(times[0]), blocking = bench::median(times[1]);
    std::printf("%d ranks, %d rows each, %d rounds of %d steps: median µs per step\n\n", ranks, o.rows, o.rounds,
                o.steps);
    std::printf("| way | µs per step | communication exposed, µs | of the blocking all-reduce hidden |\n");
    std::printf("|---|---|---|---|\n");
    std::printf("| compute + barrier | %.0f | — | — |\n", floor);
    std::printf("| blocking MPI_Allreduce | %.0f | %.0f | — |\n", blocking, blocking - floor);
    for (std::size_t w = 2; w < ways.size(); ++w) {
      const double t = bench::median(times[w]);
      const char* way = ways[w].first == overlap ? "overlap: MPI_Iallreduce per block"
                        : ways[w].first == after ? "no overlap: MPI_Iallreduce per block after the arithmetic"
                                                 : "overlap: a thread's MPI_Allreduce per block";
      std::printf("| %s, B = %d | %.0f | %.0f | %.0f%% |\n", way, ways[w].second, t, t - floor,
                  100.0 * (blocking - t) / (blocking - floor));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Eigen::setNbThreads(1);  // one core per rank, as a trainer's worker runs its products
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    measure(parse(argc, argv), provided == MPI_THREAD_MULTIPLE);  // the same arguments on every rank
  } catch (const std::invalid_argument& e) {
    if (rank == 0)
      std::fprintf(stderr,
                   "%s\nusage: mpiexec -np R mpi_overlap [--rows N] [--rounds K] [--steps S] [--blocks B1,B2,...]\n",
                   e.what());
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
}
