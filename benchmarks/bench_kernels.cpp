// SPDX-License-Identifier: MIT
// Single-core compute: each model's gradient on one micro-batch (time and GFLOP/s), the MLP's in
// a worker (its gradient zeroed first, or written by the model), and the fp32 FMA peak and the
// bf16 dot-product peak of one core, so kernel efficiency = BM_Gradient GFLOPS / BM_FmaPeak GFLOPS
// (BM_Gradient<MlpBf16> / BM_Bf16Peak for the bf16 products); and each optimizer's update of a
// θ of the MLP's size, whose ratios to Momentum's show what the adaptive rules cost.
#include <dptrain/core/training_state.hpp>
#include <dptrain/core/update_slice.hpp>
#include <dptrain/data/dense_dataset.hpp>
#include <dptrain/detail/optimizer_support.hpp>
#include <dptrain/models/precision.hpp>
#include <dptrain/optimizers/adagrad.hpp>
#include <dptrain/optimizers/adam.hpp>
#include <dptrain/optimizers/adamw.hpp>
#include <dptrain/optimizers/momentum.hpp>
#include <dptrain/optimizers/rmsprop.hpp>
#include <dptrain/workers/gradient_worker.hpp>

#include <benchmark/benchmark.h>

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>

#include "bench_common.hpp"
#include "bench_models.hpp"

namespace bench {
namespace {

// Uniform pixels in [0, 1) and random labels: a dense product costs the same whatever the values.
dptrain::DenseDataset<float, dptrain::Label> random_batch(Index rows, Index features, Index classes) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  dptrain::DenseDataset<float, dptrain::Label> data{dptrain::RowMatrix<float>(rows, features),
                                                    dptrain::Vector<dptrain::Label>(rows)};
  for (Index i = 0; i < rows; ++i) {
    data.targets[i] = static_cast<dptrain::Label>(rng() % static_cast<std::uint64_t>(classes));
    for (Index j = 0; j < features; ++j) data.features(i, j) = pixel(rng);
  }
  return data;
}

// One loss_and_gradient on `rows` samples, as a worker computes it in a step. rows = 256 is the
// issue's micro-batch; 256/N is a worker's share of a 256 minibatch on N threads.
template <class Spec>
void BM_Gradient(benchmark::State& state) {
  const Index rows = state.range(0);
  const typename Spec::Model model = Spec::make();
  const dptrain::DenseDataset<float, dptrain::Label> data = random_batch(rows, model.inputs(), model.classes());
  const dptrain::Vector<float> theta = model.init_parameters(1);
  dptrain::Vector<float> grad = dptrain::Vector<float>::Zero(model.num_parameters());
  auto workspace = model.make_workspace(rows);
  const auto batch = data.rows(0, rows);
  // The gradient accumulates (the model adds to it) rather than being zeroed: zeroing is the
  // worker's job and not part of the kernel.
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.loss_and_gradient(theta, batch, grad, workspace));
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = giga_per_second(Spec::gradient_flops(rows));
  state.counters["samples_per_second"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_TEMPLATE(BM_Gradient, Softmax)
    ->ArgName("rows")
    ->RangeMultiplier(2)
    ->Range(16, 256)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_Gradient, Mlp)
    ->ArgName("rows")
    ->RangeMultiplier(2)
    ->Range(16, 256)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_Gradient, MlpBf16)
    ->ArgName("rows")
    ->RangeMultiplier(2)
    ->Range(16, 256)
    ->Unit(benchmark::kMicrosecond);

// A model seen without its loss_and_gradient_overwrite (dptrain::OverwritesGradient), so that the
// worker zeroes the gradient before the model adds to it: BM_WorkerGradient's writes:0.
template <class M>
struct AddsOnly {
  using scalar_type = typename M::scalar_type;
  using batch_type = typename M::batch_type;
  using workspace_type = typename M::workspace_type;
  M model;
  [[nodiscard]] Index num_parameters() const { return model.num_parameters(); }
  [[nodiscard]] workspace_type make_workspace(Index rows) const { return model.make_workspace(rows); }
  scalar_type loss_and_gradient(dptrain::ConstVectorRef<scalar_type> theta, const batch_type& batch,
                                dptrain::VectorRef<scalar_type> grad, workspace_type& ws) const {
    return model.loss_and_gradient(theta, batch, grad, ws);
  }
  scalar_type loss(dptrain::ConstVectorRef<scalar_type> theta, const batch_type& batch, workspace_type& ws) const {
    return model.loss(theta, batch, ws);
  }
  void validate(const batch_type& all) const { model.validate(all); }
};

// The MLP's part of a step in one worker, on one micro-batch: zero() and accumulate(). With
// writes:0 the worker zeroes the whole gradient (814 KB) first; with writes:1 the model writes it
// (OverwritesGradient: each block of ∇W₁ is zeroed just before its product adds into it).
void BM_WorkerGradient(benchmark::State& state) {
  const Index rows = state.range(0);
  const Mlp::Model mlp = Mlp::make();
  const dptrain::DenseDataset<float, dptrain::Label> data = random_batch(rows, mlp.inputs(), mlp.classes());
  const dptrain::Vector<float> theta = mlp.init_parameters(1);
  const auto batch = data.rows(0, rows);
  const auto run = [&](const auto& model) {
    auto worker = dptrain::GradientWorker{}.make(model, 0, rows);
    for (auto _ : state) {
      worker.zero();
      worker.accumulate(model, theta, batch);
      benchmark::DoNotOptimize(worker.gradient().data());
      benchmark::ClobberMemory();
    }
  };
  if (state.range(1) == 1)
    run(mlp);
  else
    run(AddsOnly<Mlp::Model>{mlp});
  state.counters["GFLOPS"] = giga_per_second(Mlp::gradient_flops(rows));
}
BENCHMARK(BM_WorkerGradient)
    ->ArgNames({"rows", "writes"})
    ->ArgsProduct({{128, 256}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// --- fp32 FMA peak of one core ------------------------------------------------------------------
// `chains` independent accumulators hide the FMA latency (4 cycles on Skylake-X and Zen 4/5, two
// FMA pipes: 8 in flight saturate them; 12 leave margin and still fit in the 16/32 registers).
// Each step is acc ← acc·a + b, which converges to b/(1 − a) ≈ 1: no overflow, no denormals.
// Check the loop with `objdump -d --no-show-raw-insn dptrain_benchmarks | grep -c vfmadd`.
constexpr int chains = 12;
constexpr int unroll = 256;  // FMAs per chain per benchmark iteration

#if defined(__AVX512F__)
struct Avx512 {
  using V = __m512;
  static constexpr int lanes = 16;
  static V set(float x) { return _mm512_set1_ps(x); }
  static V fma(V x, V a, V b) { return _mm512_fmadd_ps(x, a, b); }
  static float first(V x) { return _mm512_cvtss_f32(x); }
};
#endif
#if defined(__FMA__)
struct Avx2 {
  using V = __m256;
  static constexpr int lanes = 8;
  static V set(float x) { return _mm256_set1_ps(x); }
  static V fma(V x, V a, V b) { return _mm256_fmadd_ps(x, a, b); }
  static float first(V x) { return _mm256_cvtss_f32(x); }
};
#endif
#if !defined(__FMA__)
// Without FMA instructions (DPTRAIN_NATIVE=OFF): a multiply and an add, NOT the core's peak.
struct Portable {
  using V = float;
  static constexpr int lanes = 1;
  static V set(float x) { return x; }
  static V fma(V x, V a, V b) { return x * a + b; }
  static float first(V x) { return x; }
};
#endif

template <class Isa>
void BM_FmaPeak(benchmark::State& state) {
  using V = typename Isa::V;
  V acc[chains];  // a plain array: std::array<__m512> drops the vector type's alignment attribute
  for (int c = 0; c < chains; ++c) acc[c] = Isa::set(1.0f + 0.01f * static_cast<float>(c));
  const V a = Isa::set(0.999f), b = Isa::set(0.001f);
  for (auto _ : state) {
    for (int r = 0; r < unroll; ++r)
      for (V& x : acc) x = Isa::fma(x, a, b);
  }
  float sum = 0;
  for (const V& x : acc) sum += Isa::first(x);
  benchmark::DoNotOptimize(sum);
  state.counters["GFLOPS"] = giga_per_second(2.0 * Isa::lanes * chains * unroll);
}

#if defined(__AVX512F__)
BENCHMARK_TEMPLATE(BM_FmaPeak, Avx512);
#endif
#if defined(__FMA__)
BENCHMARK_TEMPLATE(BM_FmaPeak, Avx2);
#endif
#if !defined(__FMA__)
BENCHMARK_TEMPLATE(BM_FmaPeak, Portable);
#endif

// --- One optimizer update of a θ of the MLP's size (784-256-10: 203 530 parameters), one core ---
// What a thread does with its slice after the gradient's reduction, here on the whole θ: the
// gradient scaled to the mean (here by 1) and the update, in the trainer's blocks
// (detail::scale_and_update). The state stays small and finite (lr 1e-4). Counters: parameters
// updated per second.
template <class Optimizer>
void BM_Update(benchmark::State& state, Optimizer optimizer) {
  constexpr int slots = Optimizer::state_slots;
  const Index n = 784 * 256 + 256 + 256 * 10 + 10;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  dptrain::Vector<float> theta(n), grad(n);
  for (Index i = 0; i < n; ++i) theta[i] = normal(rng), grad[i] = normal(rng);
  std::array<dptrain::Vector<float>, static_cast<std::size_t>(slots)> moments;
  for (auto& m : moments) m = dptrain::Vector<float>::Zero(n);
  const dptrain::UpdateSlice<float, slots> slice = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return dptrain::UpdateSlice<float, slots>{dptrain::VectorMap<float>(theta.data(), n),
                                              dptrain::ConstVectorMap<float>(grad.data(), n),
                                              {dptrain::VectorMap<float>(moments[K].data(), n)...}};
  }
  (std::make_index_sequence<static_cast<std::size_t>(slots)>{});
  dptrain::StepInfo info{.lr = 1e-4};
  for (auto _ : state) {
    dptrain::detail::scale_and_update(optimizer, dptrain::VectorMap<float>(grad.data(), n), 1.0f, slice, info);
    ++info.step;
    benchmark::ClobberMemory();
  }
  state.counters["parameters_per_second"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_Update, Momentum, dptrain::Momentum{.lr = 1e-4, .momentum = 0.9});
BENCHMARK_CAPTURE(BM_Update, Adam, dptrain::Adam{.lr = 1e-4});
BENCHMARK_CAPTURE(BM_Update, AdamW, dptrain::AdamW{.lr = 1e-4, .weight_decay = 0.01});
BENCHMARK_CAPTURE(BM_Update, RMSProp, dptrain::RMSProp{.lr = 1e-4});
BENCHMARK_CAPTURE(BM_Update, AdaGrad, dptrain::AdaGrad{.lr = 1e-4});

// --- bf16 dot-product peak of one core (vdpbf16ps: 16 lanes × 2 products, 64 flops) ------------
// As BM_FmaPeak, on the instruction the Precision::bf16 kernel runs: each step adds about 0.002
// (the bf16 pairs 0.999·0.001 + 0.001·1), so the accumulators grow slowly and stay normal.
// Compiled with the kernel's target attribute, and skipped on a CPU without AVX512-BF16. 16 chains:
// vdpbf16ps's latency is longer than an FMA's; on an AMD EPYC Zen 5, 8, 12 and 16 chains reached
// 300, 415 and 447 GFLOPS.
#if DPTRAIN_DETAIL_BF16_NATIVE
constexpr int bf16_chains = 16;

DPTRAIN_DETAIL_BF16_TARGET void bf16_dot_chains(benchmark::State& state) {
  __m512 acc[bf16_chains];
  for (int c = 0; c < bf16_chains; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(c));
  const auto a = (__m512bh)_mm512_set1_epi32(static_cast<int>(dptrain::detail::bf16::pack(0.999f, 0.001f)));
  const auto b = (__m512bh)_mm512_set1_epi32(static_cast<int>(dptrain::detail::bf16::pack(0.001f, 1.0f)));
  for (auto _ : state) {
    for (int r = 0; r < unroll; ++r)
      for (__m512& x : acc) x = _mm512_dpbf16_ps(x, a, b);
  }
  float sum = 0;
  for (const __m512& x : acc) sum += _mm512_cvtss_f32(x);
  benchmark::DoNotOptimize(sum);
}

void BM_Bf16Peak(benchmark::State& state) {
  if (!dptrain::detail::bf16::cpu_has_avx512_bf16()) {
    state.SkipWithError("this CPU has no AVX512-BF16");
    return;
  }
  bf16_dot_chains(state);
  state.counters["GFLOPS"] = giga_per_second(2.0 * 32 * bf16_chains * unroll);
}
BENCHMARK(BM_Bf16Peak);
#endif

}  // namespace
}  // namespace bench
