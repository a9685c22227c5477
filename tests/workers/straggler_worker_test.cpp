// SPDX-License-Identifier: MIT
// StragglerWorker: the other workers wait for the slow rank; theta is unchanged.
#include <catch2/catch.hpp>

#include <chrono>

#include "dptrain/dptrain.hpp"
#include "dptrain/workers/straggler_worker.hpp"
#include "support/data.hpp"
#include "support/worker_check.hpp"

static_assert(dptrain::Worker<dptrain::StragglerWorker<>, dptrain::LinearRegression<double>>);
static_assert(dptrain::Worker<dptrain::StragglerWorker<dptrain::StragglerWorker<>>, dptrain::Mlp<float>>);

TEST_CASE("StragglerWorker: the fast worker waits for the slow one and theta is unchanged", "[workers]") {
  using namespace std::chrono_literals;
  const auto data = test::linear_data<double>(200, 4, 1);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 10, .epochs = 1};
  dptrain::Vector<double> plain = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}).fit(model, plain, data);

  const bool random = GENERATE(false, true);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::StragglerWorker<> slow{.ranks = {1}, .delay = 2ms, .random = random, .seed = 3};
  dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.01}, slow);
  const dptrain::FitReport report = trainer.fit(model, theta, data);
  REQUIRE(report.steps == 20);
  CHECK(report.workers[0].wait > report.workers[1].wait);
  CHECK(theta == plain);
}

TEST_CASE("StragglerWorker: the worker that runs a state is slow or not, whichever state it is", "[workers]") {
  using namespace std::chrono_literals;
  const dptrain::StragglerWorker<> slow{.ranks = {0, 2}, .delay = 20ms};
  CHECK(slow.slows(0));
  CHECK_FALSE(slow.slows(1));
  CHECK(slow.slows(2));
  const auto data = test::linear_data<float>(8, 2, 1);
  const dptrain::LinearRegression<float> model(2);
  const dptrain::Vector<float> theta = model.init_parameters();
  const auto seconds = [&](dptrain::Index state, dptrain::Index worker, const auto& policy) {
    auto s = policy.make(model, state, 8);
    const dptrain::detail::WorkerMark as(worker);
    CHECK(dptrain::current_worker() == worker);
    const auto start = std::chrono::steady_clock::now();
    s.accumulate(model, theta, data.rows(0, 8));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CHECK(dptrain::current_worker() == -1);
  CHECK(seconds(1, 2, slow) >= 0.02);  // state 1, run by slow worker 2
  // State 0 run by worker 1: not slow (a 10 s delay would show).
  CHECK(seconds(0, 1, dptrain::StragglerWorker<>{.ranks = {0}, .delay = 10s}) < 5.0);
}

TEST_CASE("StragglerWorker: its ranks are workers under every synchronizer", "[workers][backup]") {
  using namespace std::chrono_literals;
  const auto data = test::linear_data<double>(120, 4, 1);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 12, .epochs = 1};
  // current_worker() is the thread running each micro-batch, whichever state it took, under
  // every synchronizer.
  test::WorkerCheck::reset(0);
  dptrain::Vector<double> theta = model.init_parameters();
  (void)dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, test::WorkerCheck{}).fit(model, theta, data);
  (void)dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, test::WorkerCheck{},
                                     dptrain::BackupWorkers{.chunks = 4})
      .fit(model, theta, data);
  (void)dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, test::WorkerCheck{},
                                     dptrain::LocalSgd{.period = 3})
      .fit(model, theta, data);
  (void)dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, test::WorkerCheck{},
                                     dptrain::BoundedStaleness{})
      .fit(model, theta, data);
  (void)dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, test::WorkerCheck{}, dptrain::Hogwild{})
      .fit(model, theta, data);
  CHECK(test::WorkerCheck::calls >= 10 * 3 + 10 * 4 + 3 * 10 * 3);
  CHECK(test::WorkerCheck::elsewhere == 0);
  // A worker the run does not have slows nothing, even where states outnumber the threads
  // (BackupWorkers: 4 chunks + 3 threads): a 10 s delay would show.
  const dptrain::StragglerWorker<> absent{.ranks = {5}, .delay = 10s};
  CHECK(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, absent).fit(model, theta, data).seconds < 5);
  CHECK(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, absent, dptrain::BackupWorkers{.chunks = 4})
            .fit(model, theta, data)
            .seconds < 5);
}

namespace {

// A Worker whose every micro-batch takes at least 1 ms: a compute time the slowdown is relative to.
struct MillisecondWorker {
  template <dptrain::Model M>
  struct State {
    typename dptrain::GradientWorker::State<M> inner;
    void zero() { inner.zero(); }
    void accumulate(const M& model, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
      inner.accumulate(model, theta, batch);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    [[nodiscard]] auto gradient() { return inner.gradient(); }
    [[nodiscard]] double loss() const { return inner.loss(); }
    [[nodiscard]] dptrain::Index samples() const { return inner.samples(); }
  };
  template <dptrain::Model M>
  [[nodiscard]] State<M> make(const M& model, dptrain::Index rank, dptrain::Index max_rows) const {
    return {dptrain::GradientWorker{}.make(model, rank, max_rows)};
  }
};

}  // namespace

TEST_CASE("StragglerWorker: a slowdown waits that many times the worker's own compute", "[workers]") {
  const auto data = test::linear_data<double>(200, 4, 1);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 10, .epochs = 1};
  dptrain::Vector<double> plain = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}).fit(model, plain, data);

  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::StragglerWorker<MillisecondWorker> slow{.ranks = {1}, .slowdown = 2};
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, slow).fit(model, theta, data);
  REQUIRE(report.steps == 20);
  // Each of its micro-batches took at least 1 ms and then waited twice as long: at least 3 ms.
  CHECK(report.workers[1].compute >= 20 * 3e-3);
  CHECK(report.workers[0].wait > report.workers[1].wait);
  CHECK(theta == plain);
}
