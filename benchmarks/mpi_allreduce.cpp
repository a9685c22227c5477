// SPDX-License-Identifier: MIT
// mpi_allreduce: one cross-rank all-reduce of n = 1e3 … 1e7 values, three ways: a raw
// MPI_Allreduce of the whole vector, dptrain's path (the team's aggregator in shared memory, then
// MpiCommunicator sums the teams' sums across the ranks: in its shared-memory window, funneled and
// multiple, and without the window, each thread's shard through MPI_Allreduce), and the
// in-process aggregators alone with ranks × threads threads on rank 0 (the same workers without
// crossing processes), in one Markdown table printed by rank 0.
//   mpiexec -np 2 --bind-to none --mca btl self,vader benchmarks/mpi_allreduce --threads 2
// benchmarks/mpi_allreduce.sh runs it with those flags for a few ranks × threads.
//
// Google Benchmark cannot time across ranks (each process picks its own iteration count, and the
// collectives would not match), so every rank runs the same fixed number of steps: an
// MPI_Barrier before each, each step's time is the slowest rank's, the median is reported.
#include <dptrain/aggregators/reduce_scatter_aggregator.hpp>
#include <dptrain/aggregators/ring_all_reduce_aggregator.hpp>
#include <dptrain/aggregators/serial_aggregator.hpp>
#include <dptrain/aggregators/tree_aggregator.hpp>
#include <dptrain/communicators/single_process_communicator.hpp>
#include <dptrain/core/aligned_buffer.hpp>
#include <dptrain/core/gradient_buffers.hpp>
#include <dptrain/core/omp.hpp>
#include <dptrain/core/team_member.hpp>
#include <dptrain/mpi/mpi_communicator.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "mpi_common.hpp"

namespace {

using dptrain::Index;
using Clock = std::chrono::steady_clock;

using AnyAggregator = std::variant<dptrain::ReduceScatterAggregator, dptrain::TreeAggregator,
                                   dptrain::RingAllReduceAggregator, dptrain::SerialAggregator>;

struct NamedAggregator {
  const char* name;
  AnyAggregator aggregator;
};

// The in-process rows, in this order; the first is the trainer's default.
const std::array<NamedAggregator, 4> aggregators = {{{"reduce-scatter", dptrain::ReduceScatterAggregator{}},
                                                     {"tree", dptrain::TreeAggregator{}},
                                                     {"ring", dptrain::RingAllReduceAggregator{}},
                                                     {"serial", dptrain::SerialAggregator{}}}};

const char* const usage =
    "usage: mpiexec -np R --bind-to none mpi_allreduce [--threads T] [--double] [--aggregator NAME]\n"
    "         [--rounds K] [--reps S] [--sizes n1,n2,...]\n"
    "  --threads T      threads per rank (default 1)\n"
    "  --double         double instead of float\n"
    "  --aggregator A   the team's aggregator on dptrain's path: reduce-scatter (default), tree, ring, serial\n"
    "  --rounds K       rounds over all the modes, against the machine's drift (default 5)\n"
    "  --reps S         timed steps per mode and round (default: clamp(2e7 / n, 2, 200))\n"
    "  --sizes LIST     values per all-reduce (default 1e3,1e4,1e5,1e6,1e7)\n";

struct Options {
  Index threads = 1;
  Index rounds = 5;
  Index reps = 0;  // 0: by n
  bool use_double = false;
  std::size_t aggregator = 0;  // into aggregators
  std::vector<Index> sizes = {1'000, 10'000, 100'000, 1'000'000, 10'000'000};
};

Index count_argument(const std::string& option, const std::string& text) {
  return static_cast<Index>(bench::count_argument("mpi_allreduce", option, text));
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--double") {
      o.use_double = true;
      continue;
    }
    if (i + 1 == argc) throw std::invalid_argument("mpi_allreduce: unknown option or missing value: " + option);
    const std::string value = argv[++i];
    if (option == "--threads") {
      o.threads = count_argument(option, value);
    } else if (option == "--rounds") {
      o.rounds = count_argument(option, value);
    } else if (option == "--reps") {
      o.reps = count_argument(option, value);
    } else if (option == "--aggregator") {
      const auto found = std::find_if(aggregators.begin(), aggregators.end(),
                                      [&](const NamedAggregator& a) { return value == a.name; });
      if (found == aggregators.end()) throw std::invalid_argument("mpi_allreduce: unknown aggregator " + value);
      o.aggregator = static_cast<std::size_t>(found - aggregators.begin());
    } else if (option == "--sizes") {
      const std::vector<long long> sizes = bench::count_list("mpi_allreduce", option, value);
      o.sizes.assign(sizes.begin(), sizes.end());
    } else {
      throw std::invalid_argument("mpi_allreduce: unknown option " + option);
    }
  }
  return o;
}

struct World {
  int rank = 0, ranks = 1;
  bool multiple = false;  // MPI_THREAD_MULTIPLE provided
};

template <class Scalar>
MPI_Datatype mpi_type() {
  return std::is_same_v<Scalar, float> ? MPI_FLOAT : MPI_DOUBLE;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The checked step: worker w writes w + 1, so the sum over W workers is W(W + 1)/2 in every
// element, exact in a float for any worker count a machine has.
template <class Scalar>
bool holds_sum(const Scalar* data, Index n, Index workers) {
  const auto expected = static_cast<Scalar>(workers * (workers + 1) / 2);
  return std::all_of(data, data + n, [&](Scalar v) { return v == expected; });
}

// Steps of one mode in one round: the first untimed and checked, then `reps` timed ones whose
// seconds are appended to `times`. Every step starts from freshly written buffers (untimed), as
// the trainer's all-reduce follows the workers' writing their gradients; the timed steps write
// zeros, so that repeated sums neither grow nor go denormal.

// Raw: one MPI_Allreduce of the whole vector on this thread, the floor of any cross-rank path.
template <class Scalar>
void raw_steps(const World& world, Index n, Index reps, std::vector<double>& times) {
  dptrain::AlignedBuffer<Scalar> data(n);
  for (Index step = -1; step < reps; ++step) {
    std::fill_n(data.data(), n, step < 0 ? static_cast<Scalar>(world.rank + 1) : Scalar(0));
    MPI_Barrier(MPI_COMM_WORLD);
    const Clock::time_point start = Clock::now();
    MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(n), mpi_type<Scalar>(), MPI_SUM, MPI_COMM_WORLD);
    const double seconds = seconds_since(start);
    if (step >= 0)
      times.push_back(seconds);
    else if (!holds_sum(data.data(), n, world.ranks))
      throw std::runtime_error("mpi_allreduce: MPI_Allreduce returned a wrong sum");
  }
}

/**
 * @brief The trainer's reduce_gradients() on one team of `threads` threads, each with a gradient
 * buffer of n values: the aggregator inside the process, then `group.all_reduce(me, shard)`
 * across the processes (MpiCommunicator's, or SingleProcessCommunicator's: nothing).
 *
 * Before each step thread 0 lines up the ranks with an MPI_Barrier on `ranks` (MPI_COMM_NULL: one
 * process alone); the step ends at a team barrier, when every thread holds its shard of the sum.
 */
template <class Scalar, class Aggregator, class Group>
void team_steps(const Aggregator& aggregator, const Group& group, Index threads, Index n, Index reps, MPI_Comm ranks,
                std::vector<double>& times) {
  const auto team_size = static_cast<std::size_t>(threads);
  std::vector<dptrain::AlignedBuffer<Scalar>> owned(team_size);
  std::vector<Scalar*> pointers(team_size);
  std::vector<char> wrong(team_size, 0);
  const std::size_t first = times.size();
  times.resize(first + static_cast<std::size_t>(reps));
  bool complete = true;
  Clock::time_point start;  // thread 0's
  DPTRAIN_OMP(parallel num_threads(threads)) {
    const dptrain::TeamMember me{dptrain::detail::omp_thread_id(), dptrain::detail::omp_team_size()};
    if (me.size != threads) {
      if (me.rank == 0) complete = false;
    } else {
      // Each thread allocates, and so first-touches, its own buffer, as a worker does.
      const auto mine = static_cast<std::size_t>(me.rank);
      owned[mine] = dptrain::AlignedBuffer<Scalar>(n);
      pointers[mine] = owned[mine].data();
      me.barrier();
      const dptrain::GradientBuffers<Scalar> buffers{pointers, {n, threads}};
      for (Index step = -1; step < reps; ++step) {
        const auto value = step < 0 ? static_cast<Scalar>(group.first_worker() + me.rank + 1) : Scalar(0);
        std::fill_n(pointers[mine], n, value);
        me.barrier();
        if (me.rank == 0) {
          if (ranks != MPI_COMM_NULL) MPI_Barrier(ranks);
          start = Clock::now();
        }
        me.barrier();
        dptrain::VectorMap<Scalar> shard = aggregator.all_reduce(me, buffers);
        group.all_reduce(me, shard);
        me.barrier();
        if (step >= 0) {
          if (me.rank == 0) times[first + static_cast<std::size_t>(step)] = seconds_since(start);
        } else {
          wrong[mine] = holds_sum(shard.data(), shard.size(), group.workers()) ? 0 : 1;
          me.barrier();  // the shard may lie in another thread's buffer, rewritten next step
        }
      }
    }
  }
  if (!complete) throw std::runtime_error("mpi_allreduce: OpenMP gave the team fewer threads than asked for");
  if (std::find(wrong.begin(), wrong.end(), 1) != wrong.end())
    throw std::runtime_error("mpi_allreduce: the team's all-reduce returned a wrong sum");
}

// Every rank but 0 while rank 0 runs alone: asleep in a barrier rather than polling in
// MPI_Barrier, so that rank 0's threads have the cores to themselves.
void wait_for_everyone() {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

enum class Kind { raw, funneled, network, multiple, in_process };

struct Mode {
  std::string name;
  Kind kind;
  AnyAggregator aggregator;
  std::vector<double> times;  // seconds of every timed step, this rank's until reduced
};

template <class Scalar>
void measure(const Options& o, const World& world, Index n) {
  const Index workers = world.ranks * o.threads;
  const Index reps = o.reps > 0 ? o.reps : std::clamp<Index>(20'000'000 / n, 2, 200);
  const AnyAggregator& team_aggregator = aggregators[o.aggregator].aggregator;
  std::vector<Mode> modes;
  modes.push_back({"raw MPI_Allreduce", Kind::raw, {}, {}});
  modes.push_back({"dptrain funneled", Kind::funneled, team_aggregator, {}});
  modes.push_back({"dptrain funneled, no window", Kind::network, team_aggregator, {}});
  if (o.threads > 1 && world.multiple) modes.push_back({"dptrain multiple", Kind::multiple, team_aggregator, {}});
  for (const NamedAggregator& a : aggregators)
    modes.push_back({"in-process " + std::string(a.name), Kind::in_process, a.aggregator, {}});

  // The same signature on every rank; one group per size, since funneled plans its segments for n.
  const dptrain::RunSignature signature{
      .parameters = n, .samples = 1, .batch_size = 1, .epochs = 1, .model = "mpi_allreduce", .optimizer = "none"};
  const dptrain::MpiCommunicator::Group funneled =
      dptrain::MpiCommunicator{.threading = dptrain::MpiThreading::funneled}.connect(o.threads, signature);
  const dptrain::MpiCommunicator::Group network =
      dptrain::MpiCommunicator{.threading = dptrain::MpiThreading::funneled, .node = MPI_COMM_SELF}.connect(o.threads,
                                                                                                            signature);
  std::optional<dptrain::MpiCommunicator::Group> multiple;
  if (std::any_of(modes.begin(), modes.end(), [](const Mode& m) { return m.kind == Kind::multiple; }))
    multiple = dptrain::MpiCommunicator{.threading = dptrain::MpiThreading::multiple}.connect(o.threads, signature);
  const dptrain::SingleProcessCommunicator::Group alone =
      dptrain::SingleProcessCommunicator{}.connect(workers, signature);

  for (Index round = 0; round < o.rounds; ++round) {
    for (Mode& mode : modes) {
      std::visit(
          [&](const auto& aggregator) {
            switch (mode.kind) {
              case Kind::raw:
                raw_steps<Scalar>(world, n, reps, mode.times);
                break;
              case Kind::funneled:
                team_steps<Scalar>(aggregator, funneled, o.threads, n, reps, MPI_COMM_WORLD, mode.times);
                break;
              case Kind::network:
                team_steps<Scalar>(aggregator, network, o.threads, n, reps, MPI_COMM_WORLD, mode.times);
                break;
              case Kind::multiple:
                team_steps<Scalar>(aggregator, *multiple, o.threads, n, reps, MPI_COMM_WORLD, mode.times);
                break;
              case Kind::in_process:
                if (world.rank == 0)
                  team_steps<Scalar>(aggregator, alone, workers, n, reps, MPI_COMM_NULL, mode.times);
                else
                  mode.times.resize(mode.times.size() + static_cast<std::size_t>(reps), 0.0);
                wait_for_everyone();
                break;
            }
          },
          mode.aggregator);
    }
  }

  // Each step took as long as its slowest rank (the in-process steps: rank 0's, the others add 0).
  for (Mode& mode : modes)
    MPI_Allreduce(MPI_IN_PLACE, mode.times.data(), static_cast<int>(mode.times.size()), MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
  if (world.rank != 0) return;
  const double raw = bench::median(modes.front().times);
  // Bytes an optimal all-reduce moves through each rank's link: 2(R-1)/R of the vector.
  const double traffic = 2.0 * (world.ranks - 1) / world.ranks * static_cast<double>(n) * sizeof(Scalar);
  for (const Mode& mode : modes) {
    const double seconds = bench::median(mode.times);
    std::printf("| %ld | %s | %.3e | ", static_cast<long>(n), mode.name.c_str(), seconds);
    if (world.ranks > 1)
      std::printf("%.3g", traffic / seconds * 1e-9);
    else
      std::printf("-");
    std::printf(" | %.3g |\n", seconds / raw);
  }
  std::fflush(stdout);
}

std::string cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(std::min(line.find(':') + 2, line.size()));
  return "unknown CPU";
}

std::string mpi_library() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
  int length = 0;
  MPI_Get_library_version(text.data(), &length);
  const std::string version(text.data(), static_cast<std::size_t>(length));
  return version.substr(0, version.find_first_of(",\n"));
}

// The CPUs this process may run on (its affinity mask, which mpiexec's binding narrows).
Index cpus_for_this_rank() {
#if defined(_OPENMP)
  return omp_get_num_procs();
#else
  return 1;
#endif
}

void header(const Options& o, const World& world) {
  const Index workers = world.ranks * o.threads;
  const Index cpus = cpus_for_this_rank();
  std::printf("# mpi_allreduce: %d ranks x %ld threads, %s, dptrain's path with %s\n\n", world.ranks,
              static_cast<long>(o.threads), o.use_double ? "double" : "float", aggregators[o.aggregator].name);
  std::printf("- CPU: %s; rank 0 may use %ld CPUs\n", cpu_name().c_str(), static_cast<long>(cpus));
  std::printf("- MPI: %s, MPI_THREAD_MULTIPLE %s\n", mpi_library().c_str(),
              world.multiple ? "provided" : "not provided");
  std::printf("- %ld rounds; per mode and round one checked untimed step, then %s timed steps\n",
              static_cast<long>(o.rounds), o.reps > 0 ? std::to_string(o.reps).c_str() : "clamp(2e7 / n, 2, 200)");
  std::printf("- a step's time is its slowest rank's; the table gives the median step\n");
  std::printf("- in-process: the aggregator alone with %ld threads on rank 0 while the other ranks sleep\n",
              static_cast<long>(workers));
  std::printf("- GB/s: 2(R-1)/R * n * %zu bytes / time (the bytes an optimal all-reduce moves per rank)\n",
              o.use_double ? sizeof(double) : sizeof(float));
  if (o.threads > 1 && !world.multiple) std::printf("- no multiple row: MPI_THREAD_MULTIPLE not provided\n");
  if (cpus < workers)
    std::printf("- WARNING: rank 0 may use %ld CPUs, fewer than the %ld in-process threads (mpiexec --bind-to none)\n",
                static_cast<long>(cpus), static_cast<long>(workers));
  std::printf("\n| n | mode | median s | GB/s | vs raw |\n|---:|---|---:|---:|---:|\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  World world;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.ranks);
  world.multiple = provided >= MPI_THREAD_MULTIPLE;
  Options options;
  try {
    options = parse(argc, argv);  // the same arguments on every rank: all fail alike
  } catch (const std::invalid_argument& e) {
    if (world.rank == 0) std::fprintf(stderr, "%s\n%s", e.what(), usage);
    MPI_Finalize();
    return 2;
  }
  try {
    if (world.rank == 0) header(options, world);
    for (const Index n : options.sizes) {
      if (options.use_double)
        measure<double>(options, world, n);
      else
        measure<float>(options, world, n);
    }
  } catch (const std::exception& e) {
    // Another rank may wait in a collective for this one: end them all.
    std::fprintf(stderr, "mpi_allreduce: rank %d: %s\n", world.rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
}
