// SPDX-License-Identifier: MIT
// Hogwild!: one thread against the synchronous step, convergence on a dense and a sparse convex
// problem with either way of writing θ, sparse updates (only the support, on one thread the
// synchronous step, convergence), a free thread taking the next micro-batch, hooks at span ends,
// a failing worker and a stopping callback, and what it refuses.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/faults.hpp"
#include "support/sparse_data.hpp"

using dptrain::Index;

TEST_CASE("Hogwild: one thread is the synchronous step up to rounding", "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(90, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = 1, .batch_size = 16, .epochs = 3, .seed = 5};
  const dptrain::Sgd sgd{.lr = 0.05, .weight_decay = 0.01};
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  const dptrain::FitReport synchronous = dptrain::DataParallelTrainer(options, sgd).fit(model, expected, data);
  const dptrain::Hogwild hogwild{.atomic_adds = GENERATE(false, true)};
  const dptrain::FitReport report = dptrain::DataParallelTrainer(options, sgd, hogwild).fit(model, theta, data);
  CHECK(test::relative_error(theta, expected) < 1e-12);
  CHECK(report.steps == synchronous.steps);
  CHECK(report.samples == synchronous.samples);
  CHECK(report.epoch_loss.back() == Approx(synchronous.epoch_loss.back()).epsilon(1e-12));
}

TEST_CASE("Hogwild: converges on a dense convex problem at 2 to 4 threads", "[synchronizers][trainer]") {
  const Index threads = GENERATE(2, 3, 4);
  const dptrain::Hogwild hogwild{.atomic_adds = GENERATE(false, true)};
  const auto data = test::linear_data<float>(512, 6, 11);
  const dptrain::LinearRegression<float> model(6);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 32, .epochs = 30, .seed = 2};
  dptrain::Vector<float> synchronous = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.02}).fit(model, synchronous, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.02}, hogwild).fit(model, theta, data);
  CHECK(test::relative_error(theta, synchronous) < 0.02);
  CHECK(report.epoch_loss.back() < 0.02);  // the noise's ½σ² is 0.005
  CHECK(report.epoch_loss.back() < report.epoch_loss.front() / 10);
  Index samples = 0;
  for (const dptrain::WorkerReport& w : report.workers) samples += w.samples;
  CHECK(samples == 512 * 30);
}

TEST_CASE("Hogwild: converges on a sparse convex problem at 2 to 4 threads", "[synchronizers][trainer]") {
  const Index threads = GENERATE(2, 3, 4);
  const dptrain::Hogwild hogwild{.atomic_adds = GENERATE(false, true)};
  // Labels a linear rule gives, and weight decay: a unique optimum for both runs to approach.
  auto data = test::random_sparse<double>(600, 50, 0.1, 2, 4);
  dptrain::Vector<double> rule(50);
  for (Index j = 0; j < 50; ++j) rule[j] = j % 2 == 0 ? 1.0 : -1.0;
  const dptrain::Vector<double> margins = data.features * rule;
  for (Index i = 0; i < 600; ++i) data.targets[i] = margins[i] > 0 ? 1 : 0;
  const dptrain::SparseLogisticRegression<double> model(50);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 30, .epochs = 20, .seed = 3};
  const dptrain::Sgd sgd{.lr = 0.2, .weight_decay = 0.01};
  dptrain::Vector<double> synchronous = model.init_parameters(), theta = model.init_parameters();
  const dptrain::FitReport reference = dptrain::DataParallelTrainer(options, sgd).fit(model, synchronous, data);
  const dptrain::FitReport report = dptrain::DataParallelTrainer(options, sgd, hogwild).fit(model, theta, data);
  // Each thread's update is a whole SGD step on its micro-batch: T times the synchronous step's
  // movement, so θ is noisier than the synchronous run's, but the loss is as low.
  CHECK(report.epoch_loss.back() < report.epoch_loss.front() / 1.5);
  CHECK(report.epoch_loss.back() < 1.2 * reference.epoch_loss.back());
  CHECK(test::relative_error(theta, synchronous) < 0.5);
}

namespace {

// SparseLogisticRegression whose support leaves out the bias: under sparse updates the bias is
// then never read nor written, which shows that only the support is.
struct SupportWithoutBias : dptrain::SparseLogisticRegression<double> {
  using SparseLogisticRegression::SparseLogisticRegression;
  template <class Visit>
  void gradient_support(const batch_type& batch, Visit&& visit) const {
    SparseLogisticRegression::gradient_support(batch, [&](Index i) {
      if (i != inputs()) visit(i);
    });
  }
};

// 600 sparse samples in 50 dimensions with labels a noisy linear rule gives: a unique optimum
// without weight decay.
dptrain::SparseDataset<double, dptrain::Label> noisy_sparse() {
  auto data = test::random_sparse<double>(600, 50, 0.1, 2, 4);
  dptrain::Vector<double> rule(50);
  for (Index j = 0; j < 50; ++j) rule[j] = j % 2 == 0 ? 1.0 : -1.0;
  const dptrain::Vector<double> margins = data.features * rule;
  for (Index i = 0; i < 600; ++i) data.targets[i] = (margins[i] > 0) != (i % 7 == 0) ? 1 : 0;
  return data;
}

}  // namespace

TEST_CASE("Hogwild: sparse updates read and write only a micro-batch's support", "[synchronizers][trainer]") {
  const auto data = noisy_sparse();
  const dptrain::TrainerOptions options{.threads = GENERATE(1, 2), .batch_size = 30, .epochs = 3, .seed = 3};
  const SupportWithoutBias model(50);
  dptrain::Vector<double> theta = model.init_parameters();
  theta[50] = 0.25;
  SECTION("Sgd without weight decay: sparse, the bias is left as it was") {
    dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.2}, dptrain::Hogwild{}).fit(model, theta, data);
    CHECK(theta[50] == 0.25);
    CHECK(theta.head(50).norm() > 0.1);
  }
  SECTION("with weight decay every coordinate moves at every update: dense, the bias is trained") {
    dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.2, .weight_decay = 0.01}, dptrain::Hogwild{})
        .fit(model, theta, data);
    CHECK(theta[50] != 0.25);
  }
}

TEST_CASE("Hogwild: sparse updates on one thread are the synchronous step up to rounding", "[synchronizers][trainer]") {
  const auto data = noisy_sparse();
  const dptrain::TrainerOptions options{.threads = 1, .batch_size = 16, .epochs = 3, .seed = 5};
  const dptrain::Sgd sgd{.lr = 0.1};
  const dptrain::Hogwild hogwild{.atomic_adds = GENERATE(false, true)};
  SECTION("logistic") {
    const dptrain::SparseLogisticRegression<double> model(50);
    dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
    dptrain::DataParallelTrainer(options, sgd).fit(model, expected, data);
    dptrain::DataParallelTrainer(options, sgd, hogwild).fit(model, theta, data);
    CHECK(test::relative_error(theta, expected) < 1e-12);
  }
  SECTION("softmax, k coordinates per stored entry") {
    auto three = data;
    for (Index i = 0; i < three.size(); ++i) three.targets[i] = static_cast<dptrain::Label>(i % 3);
    const dptrain::SparseSoftmaxRegression<double> model(50, 3);
    dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
    dptrain::DataParallelTrainer(options, sgd).fit(model, expected, three);
    dptrain::DataParallelTrainer(options, sgd, hogwild).fit(model, theta, three);
    CHECK(test::relative_error(theta, expected) < 1e-12);
  }
}

TEST_CASE("Hogwild: sparse updates converge at 2 to 4 threads", "[synchronizers][trainer]") {
  const Index threads = GENERATE(2, 3, 4);
  const dptrain::Hogwild hogwild{.atomic_adds = GENERATE(false, true)};
  const auto data = noisy_sparse();
  const dptrain::SparseLogisticRegression<double> model(50);
  // The optimum's loss, nearly: the synchronous step for 20 times as many epochs (0.496; ln 2 at the start).
  static const double optimum = [&] {
    dptrain::Vector<double> far = model.init_parameters();
    return dptrain::DataParallelTrainer({.threads = 1, .batch_size = 30, .epochs = 400, .seed = 3},
                                        dptrain::Sgd{.lr = 0.2})
        .fit(model, far, data)
        .epoch_loss.back();
  }();
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = threads, .batch_size = 30, .epochs = 20, .seed = 3},
                                   dptrain::Sgd{.lr = 0.2}, hogwild)
          .fit(model, theta, data);
  CHECK(report.epoch_loss.back() < 1.05 * optimum);
  CHECK(report.epoch_loss.front() > 1.25 * optimum);
  Index samples = 0;
  for (const dptrain::WorkerReport& w : report.workers) samples += w.samples;
  CHECK(samples == 600 * 20);
}

namespace {

// A Worker whose thread 1 holds its first micro-batch until thread 0 has taken `release` of them
// (or 10 s have passed): with the micro-batches taken from a shared counter, thread 0 takes every
// other one meanwhile.
struct HoldsThreadOne {
  std::atomic<Index>* taken_by_zero = nullptr;
  Index release = 0;

  template <dptrain::Model M>
  struct State {
    typename dptrain::GradientWorker::State<M> inner;
    Index rank;
    const HoldsThreadOne* policy;
    bool held = false;
    void zero() { inner.zero(); }
    void accumulate(const M& model, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch) {
      if (rank == 1 && !held) {
        held = true;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (policy->taken_by_zero->load() < policy->release && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      inner.accumulate(model, theta, batch);
      if (rank == 0) policy->taken_by_zero->fetch_add(1);
    }
    [[nodiscard]] auto gradient() { return inner.gradient(); }
    [[nodiscard]] double loss() const { return inner.loss(); }
    [[nodiscard]] Index samples() const { return inner.samples(); }
  };
  template <dptrain::Model M>
  [[nodiscard]] State<M> make(const M& model, Index rank, Index max_rows) const {
    return {dptrain::GradientWorker{}.make(model, rank, max_rows), rank, this, false};
  }
};

}  // namespace

TEST_CASE("Hogwild: a free thread takes the next micro-batch, so a slow one holds up no other",
          "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(200, 4, 3);  // 20 steps of 2 micro-batches of 5
  const dptrain::LinearRegression<double> model(4);
  std::atomic<Index> taken_by_zero{0};
  const HoldsThreadOne worker{.taken_by_zero = &taken_by_zero, .release = 39};
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 1},
                                                                 dptrain::Sgd{.lr = 0.05}, dptrain::Hogwild{}, worker)
                                        .fit(model, theta, data);
  CHECK(report.steps == 20);
  CHECK(report.workers[0].samples >= 195);  // all but thread 1's one micro-batch, if it took one
  CHECK(report.workers[0].samples + report.workers[1].samples == 200);
}

TEST_CASE("Hogwild: on_step_end at span ends, a worker that throws at step 7, a callback that stops at step 9",
          "[synchronizers][trainer][faults]") {
  const Index threads = GENERATE(1, 2, 3);
  auto data = test::linear_data<double>(128, 3, 1);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .shuffle = false};

  SECTION("a callback asks to stop from step 9: it runs at step 16, and the team leaves there") {
    struct StopFromStep9 {
      std::vector<Index> steps;
      dptrain::Vector<double> seen;
      bool on_step_end(dptrain::TrainContext<double>& ctx) {
        steps.push_back(ctx.step);
        seen = ctx.theta;
        return ctx.step >= 9;
      }
    } stop;
    const dptrain::LinearRegression<double> model(3);
    dptrain::Vector<double> theta = model.init_parameters();
    const dptrain::FitReport report =
        dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, dptrain::Hogwild{})
            .fit(model, theta, data, stop);
    CHECK(stop.steps == std::vector<Index>{8, 16});
    CHECK(report.stopped_by_callback);
    CHECK(report.steps == 16);
    CHECK((theta.array() == stop.seen.array()).all());
  }
  SECTION("a worker throws at step 7: fit() throws its error, with no hang") {
    data.features(100, 0) = test::ThrowsOnMarkedRow::marker();
    const test::ThrowsOnMarkedRow model(3, "boom at step 7");  // row 100: minibatch 7 of 8
    dptrain::Vector<double> theta = model.init_parameters();
    CHECK_THROWS_MATCHES(
        dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, dptrain::Hogwild{}).fit(model, theta, data),
        test::WorkerFailure, Catch::Matchers::Message("boom at step 7"));
    CHECK(theta.allFinite());
  }
}

TEST_CASE("Hogwild: a stateful optimizer and an adaptive partitioner are refused before training",
          "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(32, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Adam{.lr = 0.1}, dptrain::Hogwild{})
          .fit(model, theta, data),
      Catch::Matchers::StartsWith("dptrain::Hogwild: the optimizer keeps 2 state vector(s)"));
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.1},
                                                 dptrain::BalancingPartitioner{}, dptrain::Hogwild{})
                        .fit(model, theta, data),
                    Catch::Matchers::StartsWith("dptrain::Hogwild: an adaptive partitioner learns"));
  CHECK((theta.array() == model.init_parameters().array()).all());
}
