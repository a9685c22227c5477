// SPDX-License-Identifier: MIT
// Communication: each aggregator's all-reduce inside one persistent OpenMP team, a bare barrier,
// a cache line's round trip between two cores, and STREAM-like memory bandwidth (read, triad) to
// read the all-reduce GB/s against.
#include <dptrain/aggregators/reduce_scatter_aggregator.hpp>
#include <dptrain/aggregators/ring_all_reduce_aggregator.hpp>
#include <dptrain/aggregators/serial_aggregator.hpp>
#include <dptrain/aggregators/tree_aggregator.hpp>
#include <dptrain/core/aligned_buffer.hpp>
#include <dptrain/core/team_barrier.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "bench_common.hpp"

namespace bench {

namespace {

using dptrain::ReduceScatterAggregator;
using dptrain::RingAllReduceAggregator;
using dptrain::SerialAggregator;
using dptrain::TreeAggregator;

// The cost of one team barrier: the floor of every all-reduce below (and of each trainer step,
// which has three).
void BM_TeamBarrier(benchmark::State& state) {
  run_team(state, state.range(0), [&](const dptrain::TeamMember& team) { team_loop(state, team, [] {}); });
}
BENCHMARK(BM_TeamBarrier)->Apply(threads_arg)->UseRealTime();

// The same with dptrain's own barrier (WaitPolicy::spin_then_sleep, its default 50 us spin): on a
// quiet machine the spin catches every barrier, so it should cost what the OpenMP barrier costs.
void BM_SpinThenSleepBarrier(benchmark::State& state) {
  dptrain::TeamBarrier barrier;
  run_team(state, state.range(0), [&](const dptrain::TeamMember& omp) {
    const dptrain::TeamMember team{omp.rank, omp.size, nullptr, &barrier};
    team_loop(state, team, [] {});
  });
}
BENCHMARK(BM_SpinThenSleepBarrier)->Apply(threads_arg)->UseRealTime();

// One cache line from one core to the other and back (thread 0 writes it, thread 1 answers):
// the latency under every line the synchronous step moves between cores (gradient shards, θ).
// On an AMD EPYC Zen 2 VM (family 23 model 49) it switched between about 70 and 450 ns as the
// host placed the two vCPUs (benchmarks/RESULTS.md, session 18). Run it pinned:
// OMP_PROC_BIND=close OMP_PLACES=cores.
void BM_CacheLineRoundTrip(benchmark::State& state) {
  struct alignas(dptrain::cache_line_bytes) Line {
    std::atomic<std::int64_t> value{0};
  };
  Line line;
  const auto trips = static_cast<std::int64_t>(state.max_iterations);
  run_team(state, 2, [&](const dptrain::TeamMember& team) {
    team.barrier();
    if (team.rank == 0) {
      std::int64_t sent = 1;
      for (auto _ : state) {
        line.value.store(sent, std::memory_order_release);
        while (line.value.load(std::memory_order_acquire) != sent + 1) {
        }
        sent += 2;
      }
    } else {
      for (std::int64_t answer = 2; answer <= 2 * trips; answer += 2) {
        while (line.value.load(std::memory_order_acquire) != answer - 1) {
        }
        line.value.store(answer, std::memory_order_release);
      }
    }
  });
}
BENCHMARK(BM_CacheLineRoundTrip)->UseRealTime()->Unit(benchmark::kNanosecond);

// One all-reduce of N buffers of n floats, called by every thread as the trainer calls it after
// its barrier (here the previous iteration's). The buffers hold zeros so that repeated sums
// (the ring leaves the total in every buffer) never overflow or go denormal.
//
// Fresh: before each call (untimed) every thread rewrites its own buffer, as a worker has just
// written its gradient when the trainer all-reduces. The reduction then pulls each line from the
// cache of the core that wrote it; without it, repeated calls read lines that every core already
// holds, which a training step never sees.
template <class Aggregator, bool fresh>
void all_reduce(benchmark::State& state) {
  const Index n = state.range(0), threads = state.range(1);
  std::vector<dptrain::AlignedBuffer<float>> owned(static_cast<std::size_t>(threads));
  std::vector<float*> pointers(static_cast<std::size_t>(threads));
  const Aggregator aggregator{};
  run_team(state, threads, [&](const dptrain::TeamMember& team) {
    // Each thread allocates, and so first-touches, its own buffer: pages near its core on NUMA.
    const auto rank = static_cast<std::size_t>(team.rank);
    owned[rank] = dptrain::AlignedBuffer<float>(n);
    pointers[rank] = owned[rank].data();
    team.barrier();
    const dptrain::GradientBuffers<float> buffers{pointers, {n, team.size}};
    aggregator.all_reduce(team, buffers);  // warm caches and TLBs; team_loop starts with a barrier
    team_loop(state, team, [&] {
      if constexpr (fresh) {
        if (team.rank == 0) state.PauseTiming();
        std::fill_n(pointers[rank], n, 0.0f);
        team.barrier();
        if (team.rank == 0) state.ResumeTiming();
      }
      benchmark::DoNotOptimize(aggregator.all_reduce(team, buffers).data());
    });
  });
  // Algorithm bandwidth: the N·n gradient values consumed per all-reduce, whatever the algorithm
  // moves to do it, so the aggregators compare directly (higher is better).
  state.counters["GBps"] = giga_per_second(static_cast<double>(threads * n) * sizeof(float));
}

template <class Aggregator>
void BM_AllReduce(benchmark::State& state) {
  all_reduce<Aggregator, false>(state);
}
template <class Aggregator>
void BM_AllReduceFresh(benchmark::State& state) {
  all_reduce<Aggregator, true>(state);
}

// Every all-reduce benchmark: n = 1e3 … 1e7 at each thread count, wall-clock, in µs.
void all_reduce_runs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "threads"})->ArgsProduct({{1'000, 10'000, 100'000, 1'000'000, 10'000'000}, thread_counts()});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_TEMPLATE(BM_AllReduce, SerialAggregator)->Apply(all_reduce_runs);
BENCHMARK_TEMPLATE(BM_AllReduce, TreeAggregator)->Apply(all_reduce_runs);
BENCHMARK_TEMPLATE(BM_AllReduce, ReduceScatterAggregator)->Apply(all_reduce_runs);
BENCHMARK_TEMPLATE(BM_AllReduce, RingAllReduceAggregator)->Apply(all_reduce_runs);
BENCHMARK_TEMPLATE(BM_AllReduceFresh, SerialAggregator)->Apply(all_reduce_runs);
BENCHMARK_TEMPLATE(BM_AllReduceFresh, ReduceScatterAggregator)->Apply(all_reduce_runs);

// --- STREAM-like memory bandwidth ---------------------------------------------------------------

// An array of floats, cache-line aligned and left uninitialised, so that the thread that first
// writes a page (the one that later reads it) owns it.
struct FloatArray {
  struct Free {
    void operator()(float* p) const noexcept { ::operator delete[](p, std::align_val_t{dptrain::cache_line_bytes}); }
  };
  explicit FloatArray(Index n)
      : data(static_cast<float*>(::operator new[](static_cast<std::size_t>(n) * sizeof(float),
                                                  std::align_val_t{dptrain::cache_line_bytes}))) {}
  std::unique_ptr<float[], Free> data;
};

// Thread t's contiguous part of [0, n), in whole cache lines, as a static OpenMP schedule would.
dptrain::IndexRange chunk(Index n, const dptrain::TeamMember& team) {
  return dptrain::ShardLayout<float>{n, team.size}.shard(team.rank);
}

dptrain::VectorMap<float> part(const FloatArray& a, dptrain::IndexRange r) {
  return {a.data.get() + r.begin, r.size};
}

// Sum of the caller's part of `a`: reads n·4 bytes, writes nothing.
void BM_StreamRead(benchmark::State& state) {
  const Index n = stream_floats();
  const FloatArray a(n);
  run_team(state, state.range(0), [&](const dptrain::TeamMember& team) {
    dptrain::VectorMap<float> mine = part(a, chunk(n, team));
    mine.setConstant(1.0f);
    team_loop(state, team, [&] { benchmark::DoNotOptimize(mine.sum()); });
  });
  state.counters["GBps"] = giga_per_second(static_cast<double>(n) * sizeof(float));
}
BENCHMARK(BM_StreamRead)->Apply(threads_arg)->UseRealTime()->Unit(benchmark::kMillisecond);

// STREAM's triad a = b + s·c. Counted as STREAM counts it, 3·n·4 bytes; with write-allocate
// caches the hardware moves a fourth array's worth (reading a before writing it).
void BM_StreamTriad(benchmark::State& state) {
  const Index n = stream_floats();
  const FloatArray a(n), b(n), c(n);
  run_team(state, state.range(0), [&](const dptrain::TeamMember& team) {
    const dptrain::IndexRange r = chunk(n, team);
    dptrain::VectorMap<float> x = part(a, r);
    dptrain::VectorMap<float> y = part(b, r), z = part(c, r);
    x.setZero();
    y.setConstant(1.0f);
    z.setConstant(2.0f);
    team_loop(state, team, [&] {
      x = y + 3.0f * z;
      benchmark::DoNotOptimize(x.data());
      benchmark::ClobberMemory();
    });
  });
  state.counters["GBps"] = giga_per_second(3.0 * static_cast<double>(n) * sizeof(float));
}
BENCHMARK(BM_StreamTriad)->Apply(threads_arg)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

Index stream_floats() {
  // Each array at least 4× the last-level cache of the whole machine, and at least 256 MiB.
  const benchmark::CPUInfo& cpu = benchmark::CPUInfo::Get();
  int last_level = 0;
  for (const auto& cache : cpu.caches) last_level = std::max(last_level, cache.level);
  double llc_bytes = 0;
  for (const auto& cache : cpu.caches)
    if (cache.level == last_level && cache.type != "Instruction")
      llc_bytes = std::max(llc_bytes, static_cast<double>(cache.size) *
                                          std::max(1.0, static_cast<double>(cpu.num_cpus) /
                                                            static_cast<double>(std::max(1, cache.num_sharing))));
  const double bytes = std::max(256.0 * 1024 * 1024, 4 * llc_bytes);
  // Round to whole cache lines so that every thread's part is whole lines.
  const auto line = static_cast<Index>(dptrain::cache_line_bytes / sizeof(float));
  return (static_cast<Index>(bytes / sizeof(float)) + line - 1) / line * line;
}

}  // namespace bench
