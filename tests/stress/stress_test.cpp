// SPDX-License-Identifier: MIT
// Randomised stress (fixed seed): random thread counts, batch and data sizes, aggregators and
// optimizers against the single-thread reference; one trainer reused across fit() calls,
// exceptions injected at random steps and workers; resident memory flat over 100 fit() calls.
#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::Vector;

namespace {

struct Injected : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// SoftmaxRegression that throws Injected from its `fail_at`-th gradient call on rank `fail_rank`
// (counted over all ranks' calls; fail_at < 0: never).
struct FaultyModel : dptrain::SoftmaxRegression<double> {
  using SoftmaxRegression::SoftmaxRegression;
  mutable std::atomic<Index> calls{0};
  Index fail_at = -1, fail_rank = 0;

  double loss_and_gradient(dptrain::ConstVectorRef<double> theta, const batch_type& batch,
                           dptrain::VectorRef<double> grad, workspace_type& ws) const {
    const Index call = calls.fetch_add(1);
    if (fail_at >= 0 && call >= fail_at && dptrain::detail::omp_thread_id() == fail_rank)
      throw Injected("injected at call " + std::to_string(call));
    return SoftmaxRegression::loss_and_gradient(theta, batch, grad, ws);
  }
};

struct Case {
  Index threads, samples, batch, steps;
  int aggregator, optimizer;
};

template <class Aggregator, class Optimizer>
void run_case(const Case& c, const Optimizer& optimizer, std::mt19937& rng) {
  INFO("threads " << c.threads << ", samples " << c.samples << ", batch " << c.batch << ", steps " << c.steps
                  << ", aggregator " << c.aggregator << ", optimizer " << c.optimizer);
  const auto data = test::cluster_data<double>(c.samples, 4, 3, static_cast<unsigned>(rng()));
  FaultyModel model(4, 3);
  const Vector<double> start = model.init_parameters(static_cast<std::uint64_t>(rng()));
  const Vector<double> expected = test::reference_training(model, start, data, c.batch, c.steps, optimizer);

  dptrain::DataParallelTrainer trainer(
      {.threads = c.threads, .batch_size = c.batch, .epochs = c.steps, .max_steps = c.steps, .shuffle = false},
      optimizer, Aggregator{});
  // 1. A fault at a random gradient call on a random worker: fit() rethrows it, nothing hangs.
  model.fail_at = std::uniform_int_distribution<Index>(0, c.steps * c.threads)(rng);
  model.fail_rank = std::uniform_int_distribution<Index>(0, c.threads - 1)(rng);
  Vector<double> theta = start;
  try {
    trainer.fit(model, theta, data);
  } catch (const Injected&) {
  }
  // 2. The same trainer, twice more, without faults: the reference result each time.
  model.fail_at = -1;
  for (int repeat = 0; repeat < 2; ++repeat) {
    theta = start;
    const dptrain::FitReport report = trainer.fit(model, theta, data);
    CHECK(report.steps == c.steps);
    CHECK(test::relative_error(theta, expected) <= 1e-12);
  }
}

template <class Aggregator>
void run_case(const Case& c, std::mt19937& rng) {
  switch (c.optimizer) {
    case 0:
      return run_case<Aggregator>(c, dptrain::Sgd{.lr = 0.2}, rng);
    case 1:
      return run_case<Aggregator>(c, dptrain::Momentum{.lr = 0.1, .nesterov = true}, rng);
    default:
      return run_case<Aggregator>(c, dptrain::Adam{.lr = 0.05}, rng);
  }
}

// Sanitizers keep freed memory in quarantine and grow shadow memory: RSS says nothing there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif
#else
constexpr bool sanitized = false;
#endif

// Resident set size in bytes (Linux).
Index resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  Index pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<Index>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

TEST_CASE("Stress: random configurations match the single-thread reference, also after injected faults", "[stress]") {
  std::mt19937 rng(20261202);
  for (int round = 0; round < 60; ++round) {
    Case c{};
    c.threads = std::uniform_int_distribution<Index>(1, 8)(rng);
    // Data sets from 1 sample (fewer samples than threads) to 70.
    c.samples = std::uniform_int_distribution<Index>(1, 70)(rng);
    c.batch = std::uniform_int_distribution<Index>(1, c.samples)(rng);
    c.steps = std::uniform_int_distribution<Index>(1, 12)(rng);
    c.aggregator = std::uniform_int_distribution<int>(0, 3)(rng);
    c.optimizer = std::uniform_int_distribution<int>(0, 2)(rng);
    switch (c.aggregator) {
      case 0:
        run_case<dptrain::SerialAggregator>(c, rng);
        break;
      case 1:
        run_case<dptrain::TreeAggregator>(c, rng);
        break;
      case 2:
        run_case<dptrain::ReduceScatterAggregator>(c, rng);
        break;
      default:
        run_case<dptrain::RingAllReduceAggregator>(c, rng);
        break;
    }
  }
}

TEST_CASE("Stress: resident memory does not grow over 100 fit() calls", "[stress]") {
  if (sanitized) {
    WARN("skipped under a sanitizer, whose quarantine and shadow memory make RSS meaningless");
    return;
  }
  const auto data = test::cluster_data<float>(2000, 20, 5, 3);
  const dptrain::Mlp<float> model({20, 32, 5});
  dptrain::DataParallelTrainer trainer({.threads = 3, .batch_size = 64, .epochs = 1, .seed = 1},
                                       dptrain::Adam{.lr = 0.01});
  Vector<float> theta = model.init_parameters();
  for (int warm_up = 0; warm_up < 10; ++warm_up) trainer.fit(model, theta, data);
  const Index before = resident_bytes();
  for (int call = 0; call < 100; ++call) trainer.fit(model, theta, data);
  const Index after = resident_bytes();
  INFO("resident before " << before << " bytes, after 100 more fit() calls " << after);
  // One fit() allocates ~40 KiB of buffers; a leak of any of them 100 times would show.
  CHECK(after - before < 512 * 1024);
}
