// SPDX-License-Identifier: MIT
// Evaluate: one value per epoch, the metric of the theta at that epoch's end.
#include <catch2/catch.hpp>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "dptrain/callbacks/evaluate.hpp"
#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::Vector;

TEST_CASE("Evaluate: records the validation accuracy of every epoch", "[callbacks]") {
  const auto train = test::cluster_data<double>(400, 4, 3, 1, 2.0);
  const auto validation = test::cluster_data<double>(90, 4, 3, 1, 2.0);
  const dptrain::SoftmaxRegression<double> model(4, 3);
  Vector<double> theta = model.init_parameters();
  dptrain::Evaluate evaluate(model, validation);
  CHECK(evaluate.metric() == dptrain::EvaluationMetric::accuracy);
  CHECK(evaluate.higher_is_better());
  struct Snapshot {
    std::vector<Vector<double>> thetas;
    void on_epoch_end(dptrain::TrainContext<double>& ctx) { thetas.emplace_back(ctx.theta); }
  } snapshot;
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 50, .epochs = 3}, dptrain::Sgd{.lr = 0.1});
  trainer.fit(model, theta, train, evaluate, snapshot);
  REQUIRE(evaluate.history().size() == 3);
  for (std::size_t e = 0; e < 3; ++e)
    CHECK(evaluate.history()[e] == dptrain::accuracy(model, snapshot.thetas[e], validation, 1));
  CHECK(evaluate.last() == evaluate.history().back());
  CHECK(evaluate.last() == evaluate.evaluate(theta));
  trainer.fit(model, theta, train, evaluate);  // a new fit starts a new history
  CHECK(evaluate.history().size() == 3);
}

TEST_CASE("Evaluate: regression models are scored by mean loss", "[callbacks]") {
  const auto train = test::linear_data<float>(200, 3, 1);
  const auto validation = test::linear_data<float>(50, 3, 2);
  const dptrain::LinearRegression<float> model(3);
  Vector<float> theta = model.init_parameters();
  dptrain::Evaluate evaluate(model, validation);
  CHECK(evaluate.metric() == dptrain::EvaluationMetric::mean_loss);
  CHECK_FALSE(evaluate.higher_is_better());
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 20, .epochs = 4}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, train, evaluate);
  REQUIRE(evaluate.history().size() == 4);
  CHECK(evaluate.history().back() < evaluate.history().front());
  CHECK(evaluate.last() == dptrain::mean_loss(model, theta, validation, 1));
  CHECK_THROWS_WITH(dptrain::Evaluate(model, validation, {.metric = dptrain::EvaluationMetric::accuracy}),
                    Catch::Contains("accuracy needs a model with predict() and integer labels"));
}

namespace {

// A validation set that records which threads read it.
struct WatchedData {
  const dptrain::DenseDataset<double, dptrain::Label>& data;
  mutable std::mutex mutex;
  mutable std::set<std::thread::id> readers;

  [[nodiscard]] Index size() const { return data.size(); }
  [[nodiscard]] auto rows(Index begin, Index count) const {
    const std::lock_guard lock(mutex);
    readers.insert(std::this_thread::get_id());
    return data.rows(begin, count);
  }
};

}  // namespace

TEST_CASE("Evaluate: the validation pass runs on every thread of the trainer", "[callbacks]") {
  const auto train = test::cluster_data<double>(200, 4, 3, 1, 2.0);
  const auto validation = test::cluster_data<double>(2048, 4, 3, 2, 2.0);  // 32 chunks of 64 rows
  const dptrain::SoftmaxRegression<double> model(4, 3);
  for (const Index threads : {1, 2, 3}) {
    Vector<double> theta = model.init_parameters();
    const WatchedData watched{validation, {}, {}};
    dptrain::Evaluate evaluate(model, watched);
    dptrain::DataParallelTrainer({.threads = threads, .batch_size = 50, .epochs = 2}, dptrain::Sgd{.lr = 0.01})
        .fit(model, theta, train, evaluate);
    CHECK(static_cast<Index>(watched.readers.size()) == threads);
    CHECK(evaluate.last() == dptrain::accuracy(model, theta, validation, 1));  // same value on any team
  }
}
