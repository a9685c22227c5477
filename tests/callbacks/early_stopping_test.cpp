// SPDX-License-Identifier: MIT
// EarlyStopping: stops after `patience` epochs without improvement and restores the best theta.
#include <catch2/catch.hpp>

#include <vector>

#include "dptrain/callbacks/early_stopping.hpp"
#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::Vector;

namespace {

// Replaces the epoch's loss by a scripted value (hooks share one context, in argument order)
// and keeps θ of every epoch end.
template <class Scalar>
struct ScriptedLoss {
  std::vector<double> values;
  std::vector<Vector<Scalar>> thetas;
  void on_epoch_end(dptrain::TrainContext<Scalar>& ctx) {
    ctx.loss = values[static_cast<std::size_t>(ctx.epoch)];
    thetas.emplace_back(ctx.theta);
  }
};

}  // namespace

TEMPLATE_TEST_CASE("EarlyStopping: stops after patience epochs without improvement and restores the best theta",
                   "[callbacks]", float, double) {
  const auto data = test::linear_data<TestType>(60, 3, 1);
  const dptrain::LinearRegression<TestType> model(3);
  Vector<TestType> theta = model.init_parameters();
  // best 3 at epoch 1; 2.9995 is not better by more than min_delta; the second miss stops.
  ScriptedLoss<TestType> script{{5, 3, 4, 2.9995, 1, 1}, {}};
  dptrain::EarlyStopping stopping({.patience = 2, .min_delta = 1e-3});
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 6}, dptrain::Sgd{.lr = 0.01})
          .fit(model, theta, data, script, stopping);
  CHECK(report.stopped_by_callback);
  CHECK(report.epochs == 4);
  CHECK(stopping.best_epoch() == 1);
  CHECK(stopping.best_value() == 3);
  CHECK(stopping.stopped_epoch() == 3);
  REQUIRE(script.thetas.size() == 4);
  CHECK(theta == script.thetas[1]);
  CHECK(theta != script.thetas[3]);
}

TEST_CASE("EarlyStopping: without a stop the best theta is restored at the end of fit", "[callbacks]") {
  const auto data = test::linear_data<double>(60, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  Vector<double> theta = model.init_parameters();
  ScriptedLoss<double> script{{5, 1, 2, 3}, {}};
  dptrain::EarlyStopping stopping({.patience = 5});
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 4}, dptrain::Sgd{.lr = 0.01})
          .fit(model, theta, data, script, stopping);
  CHECK_FALSE(report.stopped_by_callback);
  CHECK(stopping.stopped_epoch() == -1);
  CHECK(stopping.best_epoch() == 1);
  CHECK(theta == script.thetas[1]);

  dptrain::EarlyStopping keep({.patience = 5, .restore_best = false});
  ScriptedLoss<double> again{{5, 1, 2, 3}, {}};
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 4}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, again, keep);
  CHECK(theta == again.thetas[3]);
}

TEST_CASE("EarlyStopping: on a validation accuracy, theta ends at the best epoch's accuracy", "[callbacks]") {
  const auto train = test::cluster_data<double>(300, 4, 3, 5, 1.0);
  const auto validation = test::cluster_data<double>(30, 4, 3, 6, 1.0);
  const dptrain::SoftmaxRegression<double> model(4, 3);
  Vector<double> theta = model.init_parameters();
  dptrain::Evaluate evaluate(model, validation);
  dptrain::EarlyStopping stopping(evaluate, {.patience = 2});
  CHECK(stopping.higher_is_better());
  // A learning rate far too large: the validation accuracy jumps around.
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 30}, dptrain::Sgd{.lr = 50.0})
          .fit(model, theta, train, evaluate, stopping);
  const std::vector<double>& h = evaluate.history();
  REQUIRE(!h.empty());
  const auto best = std::max_element(h.begin(), h.end());  // the first maximum
  CHECK(stopping.best_epoch() == best - h.begin());
  CHECK(stopping.best_value() == *best);
  CHECK(dptrain::accuracy(model, theta, validation, 1) == *best);
  if (report.stopped_by_callback) {
    CHECK(stopping.stopped_epoch() == stopping.best_epoch() + 2);
    CHECK(static_cast<Index>(h.size()) == stopping.stopped_epoch() + 1);
  }
}

TEST_CASE("EarlyStopping: checks its options and the order of the callbacks", "[callbacks]") {
  CHECK_THROWS_WITH(dptrain::EarlyStopping({.patience = 0}), Catch::Contains("patience must be at least 1, got 0"));
  CHECK_THROWS_WITH(dptrain::EarlyStopping({.min_delta = -1}), Catch::Contains("min_delta must be finite and >= 0"));
  const auto data = test::cluster_data<double>(40, 2, 2, 1);
  const dptrain::LogisticRegression<double> model(2);
  Vector<double> theta = model.init_parameters();
  dptrain::Evaluate evaluate(model, data);
  dptrain::EarlyStopping stopping(evaluate);
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10}, dptrain::Sgd{.lr = 0.01})
                        .fit(model, theta, data, stopping, evaluate),
                    Catch::Contains("pass it to fit() before EarlyStopping"));
}
