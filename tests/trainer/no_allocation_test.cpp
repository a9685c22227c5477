// SPDX-License-Identifier: MIT
// Steady state allocates nothing: operator new is replaced to count every allocation.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

namespace {
std::atomic<long> allocations{0};

void* counted(std::size_t size, std::size_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (size + align - 1) / align * align)
                                              : std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

// The replacements cover the whole test executable; they only count and forward to malloc.
void* operator new(std::size_t size) {
  return counted(size, 0);
}
void* operator new[](std::size_t size) {
  return counted(size, 0);
}
void* operator new(std::size_t size, std::align_val_t a) {
  return counted(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return counted(size, static_cast<std::size_t>(a));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted(size, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

// Counts the allocations made between the end of step 10 and the end of step 100.
struct AllocationWindow {
  long at_10 = -1, at_100 = -1;
  void on_step_end(dptrain::TrainContext<float>& ctx) {
    if (ctx.step == 10) at_10 = allocations.load();
    if (ctx.step == 100) at_100 = allocations.load();
  }
};

template <class Aggregator, class Partitioner = dptrain::EvenPartitioner, class Optimizer, class Model, class Data>
void check_no_allocation(const Model& model, const Data& data, dptrain::Index threads, Optimizer optimizer,
                         dptrain::WaitPolicy policy = dptrain::WaitPolicy::openmp) {
  dptrain::Vector<float> theta = model.init_parameters(1);
  AllocationWindow window;
  dptrain::DataParallelTrainer trainer(
      {.threads = threads, .batch_size = 20, .epochs = 20, .max_steps = 120, .clip_norm = 1.0, .wait_policy = policy},
      optimizer, Aggregator{}, Partitioner{});
  trainer.fit(model, theta, data, window);
  REQUIRE(window.at_10 >= 0);
  REQUIRE(window.at_100 >= 0);
  CHECK(window.at_100 - window.at_10 == 0);
}

// Counts the allocations made between the ends of epochs 1 and 8: without a step hook,
// BackupWorkers runs each epoch's steps as one span.
struct EpochWindow {
  long at_1 = -1, at_8 = -1;
  void on_epoch_end(dptrain::TrainContext<float>& ctx) {
    if (ctx.epoch == 1) at_1 = allocations.load();
    if (ctx.epoch == 8) at_8 = allocations.load();
  }
};

template <class Model, class Data>
void check_backup_workers(const Model& model, const Data& data, dptrain::Index threads) {
  const dptrain::TrainerOptions options{.threads = threads,
                                        .batch_size = 20,
                                        .epochs = 10,
                                        .clip_norm = 1.0,
                                        .wait_policy = dptrain::WaitPolicy::spin_then_sleep};
  dptrain::DataParallelTrainer trainer(options, dptrain::Momentum{}, dptrain::BackupWorkers{.chunks = 3});
  dptrain::Vector<float> theta = model.init_parameters(1);
  EpochWindow epochs;
  trainer.fit(model, theta, data, epochs);
  REQUIRE(epochs.at_8 >= 0);
  CHECK(epochs.at_8 - epochs.at_1 == 0);
  theta = model.init_parameters(1);
  AllocationWindow steps;  // a step hook: one step per span, θ copied back after each
  trainer.fit(model, theta, data, steps);
  REQUIRE(steps.at_100 >= 0);
  CHECK(steps.at_100 - steps.at_10 == 0);
}

}  // namespace

TEST_CASE("Svrg: steps and the anchor's refreshes make no heap allocation", "[trainer][allocation][workers]") {
  const dptrain::Index threads = GENERATE(1, 2, 3);
  const dptrain::Mlp<float> model({6, 16, 3});
  const auto data = test::cluster_data<float>(230, 6, 3, 2);
  dptrain::Svrg svrg(model, data);  // refreshes at every epoch's start, on the trainer's team
  dptrain::Vector<float> theta = model.init_parameters(1);
  EpochWindow epochs;
  dptrain::DataParallelTrainer({.threads = threads, .batch_size = 20, .epochs = 10, .clip_norm = 1.0},
                               dptrain::Momentum{}, svrg.worker())
      .fit(model, theta, data, svrg, epochs);
  REQUIRE(epochs.at_8 >= 0);
  CHECK(epochs.at_8 - epochs.at_1 == 0);
  CHECK(svrg.anchor().refreshes == 10);
}

TEST_CASE("Sag and Saga: steps make no heap allocation", "[trainer][allocation][optimizers]") {
  const dptrain::Index threads = GENERATE(1, 2, 3);
  const auto classes = test::cluster_data<float>(230, 6, 3, 2);
  const auto check = [&](const auto& model, const auto& data, const auto& optimizer) {
    dptrain::GradientTable table(model, data);  // the table is made here, before the fit
    dptrain::Vector<float> theta = model.init_parameters(1);
    AllocationWindow window;
    dptrain::DataParallelTrainer({.threads = threads, .batch_size = 20, .epochs = 20, .max_steps = 120}, optimizer,
                                 table.worker())
        .fit(model, theta, data, table, window);
    REQUIRE(window.at_100 >= 0);
    CHECK(window.at_100 - window.at_10 == 0);
  };
  check(dptrain::SoftmaxRegression<float>(6, 3), classes, dptrain::Saga{.lr = 0.05});
  check(dptrain::SoftmaxRegression<float>(6, 20), test::cluster_data<float>(230, 6, 20, 4),
        dptrain::Sag{.lr = 0.05});  // more classes than the narrow kernels: GEMM
  check(dptrain::LogisticRegression<float>(6), test::cluster_data<float>(230, 6, 2, 3), dptrain::Saga{.lr = 0.05});
}

TEST_CASE("Lars and Lamb: steps make no heap allocation", "[trainer][allocation][optimizers]") {
  const dptrain::Index threads = GENERATE(1, 2, 3);
  // The groups' sums live in buffers sized before the first step; the Mlp's 4 groups cross the
  // threads' slices, the softmax is one group.
  const auto classes = test::cluster_data<float>(230, 6, 3, 2);
  check_no_allocation<dptrain::ReduceScatterAggregator>(dptrain::Mlp<float>({6, 16, 3}), classes, threads,
                                                        dptrain::Lars{.lr = 1.0});
  check_no_allocation<dptrain::ReduceScatterAggregator>(dptrain::Mlp<float>({6, 16, 3}), classes, threads,
                                                        dptrain::Lamb{.weight_decay = 0.01},
                                                        dptrain::WaitPolicy::spin_then_sleep);
  check_no_allocation<dptrain::RingAllReduceAggregator>(dptrain::SoftmaxRegression<float>(6, 3), classes, threads,
                                                        dptrain::Lamb{});
}

TEST_CASE("BackupWorkers: steps make no heap allocation", "[trainer][allocation][synchronizers]") {
  const dptrain::Index threads = GENERATE(1, 2, 3);
  check_backup_workers(dptrain::Mlp<float>({6, 16, 3}), test::cluster_data<float>(230, 6, 3, 2), threads);
}

TEST_CASE("DataParallelTrainer: steps 10 to 100 make no heap allocation", "[trainer][allocation]") {
  const dptrain::Index threads = GENERATE(1, 2, 3);
  // 230 samples, batch 20: epochs end with a partial minibatch, and the shuffle runs every epoch.
  const auto classes = test::cluster_data<float>(230, 6, 3, 2);
  const auto regression = test::linear_data<float>(230, 6, 2);
  check_no_allocation<dptrain::ReduceScatterAggregator>(dptrain::Mlp<float>({6, 16, 3}), classes, threads,
                                                        dptrain::Adam{});
  check_no_allocation<dptrain::RingAllReduceAggregator>(dptrain::SoftmaxRegression<float>(6, 3), classes, threads,
                                                        dptrain::Momentum{});
  check_no_allocation<dptrain::TreeAggregator>(dptrain::LogisticRegression<float>(6),
                                               test::cluster_data<float>(230, 6, 2, 3), threads, dptrain::AdamW{});
  check_no_allocation<dptrain::SerialAggregator>(dptrain::LinearRegression<float>(6), regression, threads,
                                                 dptrain::RMSProp{});
  // Weight decay that skips the biases: each slice's biases were cut once, before the first step.
  check_no_allocation<dptrain::ReduceScatterAggregator>(dptrain::Mlp<float>({6, 16, 3}), classes, threads,
                                                        dptrain::Adam{.weight_decay = 0.01, .decay_biases = false});
  check_no_allocation<dptrain::TreeAggregator>(dptrain::LogisticRegression<float>(6),
                                               test::cluster_data<float>(230, 6, 2, 3), threads,
                                               dptrain::AdamW{.decay_biases = false});
  // An aggregator chosen at run time: std::visit allocates nothing.
  check_no_allocation<dptrain::AnyAggregator>(dptrain::SoftmaxRegression<float>(6, 3), classes, threads,
                                              dptrain::Momentum{});
  // dptrain's own barrier: its sleeps and wake-ups allocate nothing either.
  check_no_allocation<dptrain::ReduceScatterAggregator>(dptrain::Mlp<float>({6, 16, 3}), classes, threads,
                                                        dptrain::Adam{}, dptrain::WaitPolicy::spin_then_sleep);
  // bf16 products: their operands are packed into buffers the workspace sized (hidden layers on
  // GEMM, and an output layer of 20 classes, wider than the narrow kernels).
  check_no_allocation<dptrain::ReduceScatterAggregator>(dptrain::Mlp<float>({6, 16, 3}, dptrain::Precision::bf16),
                                                        classes, threads, dptrain::Momentum{});
  check_no_allocation<dptrain::ReduceScatterAggregator>(dptrain::Mlp<float>({6, 24, 20}, dptrain::Precision::bf16),
                                                        test::cluster_data<float>(230, 6, 20, 4), threads,
                                                        dptrain::Momentum{});
  // An adaptive partitioner learns every step, in the buffers of its first.
  check_no_allocation<dptrain::ReduceScatterAggregator, dptrain::BalancingPartitioner>(
      dptrain::SoftmaxRegression<float>(6, 3), classes, threads, dptrain::Momentum{});
}
