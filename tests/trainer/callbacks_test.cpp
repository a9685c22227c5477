// SPDX-License-Identifier: MIT
// Callback hooks: detected at compile time, called in order on the calling thread, can stop.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

struct Recorder {
  std::vector<std::string> calls;
  std::thread::id caller = std::this_thread::get_id();
  bool on_caller_thread = true;
  void note(const std::string& what) {
    calls.push_back(what);
    on_caller_thread = on_caller_thread && std::this_thread::get_id() == caller;
  }
  void on_fit_begin(dptrain::TrainContext<double>&) { note("fit_begin"); }
  void on_epoch_begin(dptrain::TrainContext<double>& ctx) { note("epoch_begin " + std::to_string(ctx.epoch)); }
  void on_step_end(dptrain::TrainContext<double>& ctx) { note("step " + std::to_string(ctx.step)); }
  void on_epoch_end(dptrain::TrainContext<double>& ctx) { note("epoch_end " + std::to_string(ctx.epoch)); }
  void on_fit_end(dptrain::TrainContext<double>&) { note("fit_end"); }
};

}  // namespace

TEST_CASE("Callbacks: every hook is called in order on the thread that called fit()", "[trainer][callbacks]") {
  const auto data = test::linear_data<double>(20, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  Recorder recorder;
  struct OnlyEpochEnd {
    Index epochs = 0;
    void on_epoch_end(dptrain::TrainContext<double>&) { ++epochs; }
  } only_epoch_end;
  dptrain::DataParallelTrainer({.threads = 3, .batch_size = 10, .epochs = 2}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, recorder, only_epoch_end);
  CHECK(recorder.calls == std::vector<std::string>{"fit_begin", "epoch_begin 0", "step 1", "step 2", "epoch_end 0",
                                                   "epoch_begin 1", "step 3", "step 4", "epoch_end 1", "fit_end"});
  CHECK(recorder.on_caller_thread);
  CHECK(only_epoch_end.epochs == 2);
}

TEST_CASE("Callbacks: a hook returning true stops training", "[trainer][callbacks]") {
  const auto data = test::linear_data<double>(40, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  struct StopAtStep {
    bool on_step_end(dptrain::TrainContext<double>& ctx) { return ctx.step == 5; }
  } stop_at_step;
  auto report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 10}, dptrain::Sgd{.lr = 0.01})
                    .fit(model, theta, data, stop_at_step);
  CHECK(report.steps == 5);
  CHECK(report.stopped_by_callback);
  struct StopAfterEpoch {
    bool on_epoch_end(dptrain::TrainContext<double>& ctx) { return ctx.epoch == 1; }
  } stop_after_epoch;
  report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 10}, dptrain::Sgd{.lr = 0.01})
               .fit(model, theta, data, stop_after_epoch);
  CHECK(report.epochs == 2);
  CHECK(report.steps == 8);
}

TEST_CASE("Callbacks: a hook may read and write theta between steps", "[trainer][callbacks]") {
  const auto data = test::linear_data<double>(40, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  struct ResetAtEnd {
    dptrain::Vector<double> first;
    void on_step_end(dptrain::TrainContext<double>& ctx) {
      if (ctx.step == 1) first = ctx.theta;
    }
    void on_epoch_end(dptrain::TrainContext<double>& ctx) { ctx.theta = first; }
  } reset;
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 1}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, reset);
  CHECK((theta.array() == reset.first.array()).all());
}
