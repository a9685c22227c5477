// SPDX-License-Identifier: MIT
// Training on Fashion-MNIST's shape (batch 256, momentum 0.9): the trainer's step and epoch at
// 1 … all threads, two hand-written references for the same epoch (plain Eigen on one thread;
// Eigen + OpenMP without the trainer), so trainer / reference is the trainer's overhead, and N
// independent one-thread trainers side by side, the ceiling of any speedup on the machine.
#include <dptrain/dptrain.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "bench_models.hpp"
#include "common/fashion_mnist_data.hpp"

namespace bench {

namespace {

using Clock = std::chrono::steady_clock;
using Data = dptrain::DenseDataset<float, dptrain::Label>;

constexpr Index batch_size = 256;
// Timing does not depend on the step size; this one keeps θ finite over the hundreds of epochs a
// benchmark may train (a non-finite step would throw out of the trainer).
constexpr double lr = 0.01;
constexpr double momentum = 0.9;

// Loaded once, on first use: 60 000 training samples, real or generated.
const Data& fashion_train() {
  static const examples::FashionMnist data = examples::load_fashion_mnist();
  return data.train;
}

// The same samples with their pixels kept as bytes (dptrain::ByteDataset).
const examples::FashionMnistBytes::Data& fashion_train_bytes() {
  static const examples::FashionMnistBytes data = examples::load_fashion_mnist_bytes();
  return data.train;
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Callbacks that time fit() from inside, so the benchmarks leave out its set-up (allocating every
// buffer), which a real run pays once. No on_step_end: that hook would add a barrier per step;
// on_epoch_end adds one per epoch (235 steps), which is negligible.
struct EpochClock {
  std::vector<double> epochs;  // seconds of each epoch, reserved before fit()
  Clock::time_point last;
  void on_fit_begin(dptrain::TrainContext<float>&) { last = Clock::now(); }
  void on_epoch_end(dptrain::TrainContext<float>&) {
    const Clock::time_point now = Clock::now();
    epochs.push_back(seconds(last, now));
    last = now;
  }
};
struct FitClock {
  Clock::time_point begin, end;
  void on_fit_begin(dptrain::TrainContext<float>&) { begin = Clock::now(); }
  void on_fit_end(dptrain::TrainContext<float>&) { end = Clock::now(); }
};

dptrain::Momentum optimizer() {
  return {.lr = lr, .momentum = momentum};
}

void count_samples(benchmark::State& state, double per_iteration) {
  state.counters["samples_per_second"] =
      benchmark::Counter(per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

// --- the trainer ----------------------------------------------------------------------------------
// Each runs ONE fit() for all of Google Benchmark's iterations and reports the time measured by
// the callbacks as manual time (wall-clock, like UseRealTime(), which cannot be combined with it).

// Seconds per optimizer step (a full 256 minibatch: drop_last) in steady state: one fit() of
// `steps` steps, timed from inside. With `state`, also the workers' phases per step (FitReport),
// as counters in µs, the mean over the workers: where a step's time goes at N threads.
template <class Model>
double seconds_per_step(const Model& model, Index threads, Index steps, bool shuffle,
                        benchmark::State* state = nullptr) {
  dptrain::Vector<float> theta = model.init_parameters(1);
  dptrain::DataParallelTrainer trainer({.threads = threads,
                                        .batch_size = batch_size,
                                        .epochs = steps,
                                        .max_steps = steps,
                                        .shuffle = shuffle,
                                        .seed = 1,
                                        .drop_last = true},
                                       optimizer());
  FitClock clock;
  const dptrain::FitReport report = trainer.fit(model, theta, fashion_train(), clock);
  if (state != nullptr) {
    const double per = 1e6 / static_cast<double>(steps * std::ssize(report.workers));
    const auto phase = [&](double dptrain::WorkerReport::*part) {
      double sum = 0;
      for (const dptrain::WorkerReport& w : report.workers) sum += w.*part;
      return sum * per;
    };
    state->counters["compute_us"] = phase(&dptrain::WorkerReport::compute);
    state->counters["wait_us"] = phase(&dptrain::WorkerReport::wait);
    state->counters["aggregate_us"] = phase(&dptrain::WorkerReport::aggregate);
    state->counters["update_us"] = phase(&dptrain::WorkerReport::update);
  }
  return seconds(clock.begin, clock.end) / static_cast<double>(steps);
}

// One optimizer step of the model, and its phases.
template <class Spec>
void BM_TrainerStep(benchmark::State& state) {
  const double per_step = seconds_per_step(Spec::make(), state.range(0), state.max_iterations, true, &state);
  for (auto _ : state) state.SetIterationTime(per_step);
  count_samples(state, static_cast<double>(batch_size));
}

// The same step with ExchangeOnly<Spec>: what the synchronous step costs beyond the compute, at
// the real model's size. Unshuffled, so the trainer reads rows in place and gathers nothing.
template <class Spec>
void BM_TrainerStepExchange(benchmark::State& state) {
  const double per_step = seconds_per_step(ExchangeOnly<Spec>{}, state.range(0), state.max_iterations, false, &state);
  for (auto _ : state) state.SetIterationTime(per_step);
  count_samples(state, static_cast<double>(batch_size));
}

// The trainer's own time per step: everything but the model (the gather of the shuffled rows,
// zeroing, ‖g‖², scaling and the optimizer update of M's size), on one thread. ExchangeOnly<Spec>
// stands in for the model, so what remains is what the library's own code costs; built under two
// sets of flags it shows whether that code depends on the compiler's tuning (benchmarks/flags.sh).
template <class Spec>
void BM_TrainerOwnTime(benchmark::State& state) {
  const double per_step = seconds_per_step(ExchangeOnly<Spec>{}, 1, state.max_iterations, true);
  for (auto _ : state) state.SetIterationTime(per_step);
  count_samples(state, static_cast<double>(batch_size));
}

// One step's 256 shuffled rows of Fashion-MNIST, each iteration the next 256 of a shuffled
// order. read_only:0 copies them as a worker does (DenseDataset::gather), asking for the next
// `asks` rows (1, 2 or 4: GatherAsks::fix) or, with asks:0, as many as the buffer's GatherAsks
// chooses by timing its first calls (the `rows_ahead` counter says which). read_only:1 only reads
// them (summed as packets), the floor of any step that reads its rows from memory, asking for the
// coming rows' lines as it goes in one of these ways (`asks`):
//  - 0: not at all;
//  - 1: each line of the row three ahead, once (the gather before session 14);
//  - 2: each line of the next two rows, so every line is asked for twice, a row apart;
//  - 4: of the next four rows (the gather's fixed way in session 14, benchmarks/RESULTS.md);
//  - 6: of the next six rows.
void BM_ShuffledRows(benchmark::State& state) {
  const Data& data = fashion_train();
  const bool copy = state.range(0) == 0;
  const auto asks = static_cast<std::size_t>(state.range(1));
  const std::size_t nearest = asks == 1 ? 3 : 1;  // rows nearest … nearest + asks − 1 ahead
  std::vector<Index> order(static_cast<std::size_t>(data.size()));
  std::iota(order.begin(), order.end(), Index{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  Data::Buffer buffer = data.make_buffer(batch_size);
  if (copy && asks > 0) buffer.asks.fix(static_cast<int>(asks));
  // Eigen packets, kept in a register (a 16-float Eigen array stayed on the stack here).
  using Packet = dptrain::detail::narrow::Packet<float>;
  constexpr Index lanes = dptrain::detail::narrow::lanes<float>;
  const Index d = data.dim(), lines = d / 16;
  std::size_t first = 0;
  for (auto _ : state) {
    if (first + batch_size > order.size()) first = 0;
    const std::span<const Index> rows(order.data() + first, batch_size);
    if (copy) {
      benchmark::DoNotOptimize(data.gather(rows, buffer).features.data());
    } else {
      Packet sum = Eigen::internal::pset1<Packet>(0.0f);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const float* row = data.features.data() + rows[i] * d;
        std::array<const float*, 6> ahead{};
        for (std::size_t k = 0; k < asks; ++k)
          ahead[k] = data.features.data() + rows[std::min(i + nearest + k, rows.size() - 1)] * d;
        for (Index j = 0; j < lines; ++j) {
          for (std::size_t k = 0; k < asks; ++k) __builtin_prefetch(ahead[k] + 16 * j);
          for (Index k = 0; k < 16; k += lanes)
            sum = Eigen::internal::padd(sum, Eigen::internal::ploadu<Packet>(row + 16 * j + k));
        }
      }
      float total = Eigen::internal::predux(sum);
      benchmark::DoNotOptimize(total);
    }
    benchmark::ClobberMemory();
    first += batch_size;
  }
  state.counters["GBps"] = giga_per_second(static_cast<double>(batch_size * lines * 16 * Index{sizeof(float)}));
  if (copy) state.counters["rows_ahead"] = buffer.asks.rows_ahead();
}
// One step's 256 shuffled rows of the byte data set, expanded to floats as a worker reads them
// (ByteDataset::gather, the asks chosen by timing): against BM_ShuffledRows/read_only:0/asks:0,
// what keeping the pixels as bytes saves.
void BM_ShuffledBytes(benchmark::State& state) {
  const auto& data = fashion_train_bytes();
  std::vector<Index> order(static_cast<std::size_t>(data.size()));
  std::iota(order.begin(), order.end(), Index{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  auto buffer = data.make_buffer(batch_size);
  std::size_t first = 0;
  for (auto _ : state) {
    if (first + batch_size > order.size()) first = 0;
    benchmark::DoNotOptimize(data.gather({order.data() + first, batch_size}, buffer).features.data());
    benchmark::ClobberMemory();
    first += batch_size;
  }
  state.counters["rows_ahead"] = buffer.asks.rows_ahead();
}
BENCHMARK(BM_ShuffledBytes)->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_ShuffledRows)
    ->ArgNames({"read_only", "asks"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({0, 4})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({1, 4})
    ->Args({1, 6})
    ->Unit(benchmark::kMicrosecond);

// One epoch (60 000 samples, 235 steps, the last of 96 samples), shuffled, in steady state; with
// the default even split, or with the split that follows each core's measured speed. The first
// epoch of the fit() warms caches and page tables (and lets the balancing split settle) and is
// not reported: with few iterations per repetition it would weigh on the mean.
template <class Spec, class Partitioner, class D>
void run_epochs(benchmark::State& state, const D& data) {
  const typename Spec::Model model = Spec::make();
  dptrain::Vector<float> theta = model.init_parameters(1);
  const Index epochs = state.max_iterations + 1;
  dptrain::DataParallelTrainer trainer(
      {.threads = state.range(0), .batch_size = batch_size, .epochs = epochs, .seed = 1}, optimizer(), Partitioner{});
  EpochClock clock;
  clock.epochs.reserve(static_cast<std::size_t>(epochs));
  trainer.fit(model, theta, data, clock);
  if (clock.epochs.size() != static_cast<std::size_t>(epochs)) {
    state.SkipWithError("fit() ran fewer epochs than asked for");
    return;
  }
  std::size_t epoch = 1;
  for (auto _ : state) state.SetIterationTime(clock.epochs[epoch++]);
  count_samples(state, static_cast<double>(data.size()));
}

template <class Spec, class Partitioner = dptrain::EvenPartitioner>
void BM_TrainerEpoch(benchmark::State& state) {
  run_epochs<Spec, Partitioner>(state, fashion_train());
}

// The same epoch with the pixels kept as bytes (ByteDataset): a quarter of the bytes read per
// shuffled batch.
template <class Spec>
void BM_TrainerEpochBytes(benchmark::State& state) {
  run_epochs<Spec, dptrain::EvenPartitioner>(state, fashion_train_bytes());
}

// --- references: the same epoch without the trainer -------------------------------------------------

// Copies the shuffled rows order[first, first + count) into x, y, as the trainer's workers do.
void gather(const Data& data, const std::vector<Index>& order, Index first, Index count, dptrain::RowMatrix<float>& x,
            dptrain::Vector<dptrain::Label>& y) {
  for (Index i = 0; i < count; ++i) {
    const Index row = order[static_cast<std::size_t>(first + i)];
    x.row(i) = data.features.row(row);
    y[i] = data.targets[row];
  }
}

// (a) Plain Eigen on one thread: shuffle, then per minibatch gather, gradient, heavy-ball update.
template <class Spec>
void BM_ReferenceEigenEpoch(benchmark::State& state) {
  const Data& data = fashion_train();
  const typename Spec::Model model = Spec::make();
  const Index n = data.size(), p = model.num_parameters();
  dptrain::Vector<float> theta = model.init_parameters(1);
  dptrain::Vector<float> velocity = dptrain::Vector<float>::Zero(p), grad(p);
  auto workspace = model.make_workspace(batch_size);
  dptrain::RowMatrix<float> x(batch_size, data.dim());
  dptrain::Vector<dptrain::Label> y(batch_size);
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index{0});
  std::mt19937_64 rng(1);
  float loss = 0;
  for (auto _ : state) {
    std::shuffle(order.begin(), order.end(), rng);
    for (Index start = 0; start < n; start += batch_size) {
      const Index m = std::min(batch_size, n - start);
      gather(data, order, start, m, x, y);
      grad.setZero();
      loss += model.loss_and_gradient(theta, {x.topRows(m), y.head(m)}, grad, workspace);
      velocity = static_cast<float>(momentum) * velocity + (1.0f / static_cast<float>(m)) * grad;
      theta -= static_cast<float>(lr) * velocity;
    }
  }
  benchmark::DoNotOptimize(loss);
  count_samples(state, static_cast<double>(n));
}

// (b) Eigen + OpenMP, no dptrain trainer: one parallel region per epoch; per minibatch each
// thread computes the gradient of its contiguous share into its own buffer; barrier; thread t
// sums slice t of all buffers and updates slice t of θ and v; barrier.
template <class Spec>
void BM_ReferenceOmpEpoch(benchmark::State& state) {
  const Data& data = fashion_train();
  const typename Spec::Model model = Spec::make();
  const Index threads = state.range(0), n = data.size(), p = model.num_parameters();
  const Index max_rows = (batch_size + threads - 1) / threads;
  dptrain::Vector<float> theta = model.init_parameters(1);
  dptrain::Vector<float> velocity = dptrain::Vector<float>::Zero(p);
  struct alignas(64) Slot {  // everything one thread writes, allocated once
    dptrain::AlignedBuffer<float> grad;
    typename Spec::Model::workspace_type workspace;
    dptrain::RowMatrix<float> x;
    dptrain::Vector<dptrain::Label> y;
    float loss = 0;
  };
  std::vector<Slot> slots;
  for (Index t = 0; t < threads; ++t)
    slots.push_back({dptrain::AlignedBuffer<float>(p), model.make_workspace(max_rows),
                     dptrain::RowMatrix<float>(max_rows, data.dim()), dptrain::Vector<dptrain::Label>(max_rows)});
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index{0});
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    std::shuffle(order.begin(), order.end(), rng);
    run_team(state, threads, [&](const dptrain::TeamMember& team) {
      Slot& me = slots[static_cast<std::size_t>(team.rank)];
      // Slice of the parameters in whole cache lines (16 floats).
      const Index lines = (p + 15) / 16, per = (lines + team.size - 1) / team.size;
      const Index begin = std::min(p, team.rank * per * 16), end = std::min(p, (team.rank + 1) * per * 16);
      for (Index start = 0; start < n; start += batch_size) {
        const Index m = std::min(batch_size, n - start), base = m / team.size, extra = m % team.size;
        const Index first = start + team.rank * base + std::min(team.rank, extra);
        const Index count = base + (team.rank < extra ? 1 : 0);
        dptrain::VectorMap<float> grad = me.grad.map();
        grad.setZero();
        if (count > 0) {
          gather(data, order, first, count, me.x, me.y);
          me.loss += model.loss_and_gradient(theta, {me.x.topRows(count), me.y.head(count)}, grad, me.workspace);
        }
        team.barrier();
        auto sum = grad.segment(begin, end - begin);
        for (Index u = 0; u < team.size; ++u)
          if (u != team.rank) sum += slots[static_cast<std::size_t>(u)].grad.map().segment(begin, end - begin);
        auto v = velocity.segment(begin, end - begin);
        v = static_cast<float>(momentum) * v + (1.0f / static_cast<float>(m)) * sum;
        theta.segment(begin, end - begin) -= static_cast<float>(lr) * v;
        team.barrier();
      }
    });
    if (state.error_occurred()) break;
  }
  for (const Slot& slot : slots) benchmark::DoNotOptimize(slot.loss);
  count_samples(state, static_cast<double>(n));
}

// (c) The machine's ceiling for any data-parallel scheme: N one-thread trainers, one per core,
// each training its own θ on the shared data set at the same time, exchanging nothing. Their
// combined throughput (the sum of each one's samples/s after a warm-up epoch) over one trainer's
// is the speedup that shared memory bandwidth, caches, unequal cores and the VM's neighbours
// leave before any synchronisation or communication: the trainer at N threads, even with a
// perfectly balanced split, cannot beat it.
template <class Spec>
void BM_IndependentEpochs(benchmark::State& state) {
  const Data& data = fashion_train();
  const typename Spec::Model model = Spec::make();
  const Index threads = state.range(0), epochs = state.max_iterations;
  std::atomic<Index> ready{0};
  std::vector<double> epochs_per_second(static_cast<std::size_t>(threads));
  run_team(state, threads, [&](const dptrain::TeamMember& team) {
    // Starts the trainers together, then times each one from the end of its warm-up epoch.
    struct WarmClock : FitClock {
      std::atomic<Index>* ready;
      Index threads;
      void on_fit_begin(dptrain::TrainContext<float>&) {
        ready->fetch_add(1);
        while (ready->load() < threads) {
        }
      }
      void on_epoch_end(dptrain::TrainContext<float>& ctx) {
        if (ctx.epoch == 0) begin = Clock::now();
      }
    } clock{{}, &ready, threads};
    dptrain::Vector<float> theta = model.init_parameters(1);
    dptrain::DataParallelTrainer trainer({.threads = 1,
                                          .batch_size = batch_size,
                                          .epochs = epochs + 1,
                                          .seed = static_cast<std::uint64_t>(team.rank + 1)},
                                         optimizer());
    trainer.fit(model, theta, data, clock);
    epochs_per_second[static_cast<std::size_t>(team.rank)] =
        static_cast<double>(epochs) / seconds(clock.begin, clock.end);
  });
  if (state.error_occurred()) return;
  double combined = 0;
  for (const double rate : epochs_per_second) combined += rate;
  // One iteration: N epochs, one per trainer, at the combined rate.
  for (auto _ : state) state.SetIterationTime(static_cast<double>(threads) / combined);
  count_samples(state, static_cast<double>(threads * data.size()));
}

BENCHMARK_TEMPLATE(BM_TrainerStep, Softmax)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_TrainerStep, Mlp)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_TrainerStepExchange, Softmax)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_TrainerStepExchange, Mlp)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMicrosecond);
// The bf16 MLP: its compute is shorter, its exchange the same (θ and the gradients stay fp32).
BENCHMARK_TEMPLATE(BM_TrainerStep, MlpBf16)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_TrainerStepExchange, MlpBf16)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_TrainerOwnTime, Softmax)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_TrainerOwnTime, Mlp)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_TrainerEpoch, Softmax)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_TrainerEpoch, Mlp)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_TrainerEpoch, MlpBf16)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_TrainerEpochBytes, Softmax)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_TrainerEpochBytes, Mlp)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE2(BM_TrainerEpoch, Softmax, dptrain::BalancingPartitioner)
    ->Apply(threads_arg)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE2(BM_TrainerEpoch, Mlp, dptrain::BalancingPartitioner)
    ->Apply(threads_arg)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_ReferenceEigenEpoch, Softmax)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_ReferenceEigenEpoch, Mlp)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_ReferenceOmpEpoch, Softmax)->Apply(threads_arg)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_ReferenceOmpEpoch, Mlp)->Apply(threads_arg)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_IndependentEpochs, Softmax)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_IndependentEpochs, Mlp)->Apply(threads_arg)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

std::string training_data_source() {
  const std::string file = examples::fashion_mnist_dir + "/train-images-idx3-ubyte.gz";
  return std::filesystem::exists(file) ? "Fashion-MNIST from " + examples::fashion_mnist_dir
                                       : "generated, Fashion-MNIST's shape (dataset-fashion-mnist not installed)";
}

}  // namespace bench
