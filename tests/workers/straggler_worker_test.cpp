// SPDX-License-Identifier: MIT
// StragglerWorker: the other workers wait for the slow rank; theta is unchanged.
#include <catch2/catch.hpp>

#include <chrono>

#include "dptrain/dptrain.hpp"
#include "dptrain/workers/straggler_worker.hpp"
#include "support/data.hpp"

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

TEST_CASE("StragglerWorker: only the chosen ranks get a delay, drawn per rank from the seed", "[workers]") {
  using namespace std::chrono_literals;
  const dptrain::LinearRegression<float> model(2);
  const dptrain::StragglerWorker<> slow{.ranks = {0, 2}, .delay = 50us};
  CHECK(slow.make(model, 0, 4).delay() == 50us);
  CHECK(slow.make(model, 1, 4).delay() == 0us);
  CHECK(slow.make(model, 2, 4).delay() == 50us);
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
  CHECK(slow.make(model, 0, 5).slowdown() == 0);
  CHECK(slow.make(model, 1, 5).slowdown() == 2);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, slow).fit(model, theta, data);
  REQUIRE(report.steps == 20);
  // Each of its micro-batches took at least 1 ms and then waited twice as long: at least 3 ms.
  CHECK(report.workers[1].compute >= 20 * 3e-3);
  CHECK(report.workers[0].wait > report.workers[1].wait);
  CHECK(theta == plain);
}
