// SPDX-License-Identifier: MIT
// ProgressBar: plain lines off a terminal, a '\r'-redrawn bar when interactive.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "dptrain/callbacks/progress_bar.hpp"
#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::Vector;

namespace {

Index count(const std::string& text, const std::string& what) {
  Index n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("ProgressBar: one compact line per epoch when not interactive (a pipe, a file)", "[callbacks]") {
  const auto data = test::linear_data<double>(200, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  Vector<double> theta = model.init_parameters();
  std::ostringstream out;
  dptrain::ProgressBar bar(out, {.interactive = false});
  CHECK_FALSE(bar.interactive());
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 3}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, bar);
  const std::string text = out.str();
  INFO(text);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(count(text, " done: loss ") == 3);
  CHECK(text.find(" step ") == std::string::npos);
  CHECK(text.find("epoch 1/3 done: loss ") == 0);
  CHECK(text.find("epoch 3/3 done: loss ") != std::string::npos);
  CHECK(count(text, "\n") == 3);
}

TEST_CASE("ProgressBar: every_steps and planned sizes from the options", "[callbacks]") {
  const auto data = test::linear_data<float>(100, 2, 1);
  const dptrain::LinearRegression<float> model(2);
  Vector<float> theta = model.init_parameters();
  std::ostringstream out;
  dptrain::ProgressBar bar(out, {.interactive = false, .every_steps = 5, .steps_per_epoch = 10, .epochs = 7});
  dptrain::DataParallelTrainer({.threads = 1, .batch_size = 10, .epochs = 2}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, bar);
  const std::string text = out.str();
  INFO(text);
  CHECK(count(text, "\n") == 2 + 2 * 2);
  CHECK(text.find("epoch 2/7 step 10/10") != std::string::npos);
}

TEST_CASE("ProgressBar: an interactive bar is redrawn with carriage returns", "[callbacks]") {
  const auto data = test::linear_data<double>(100, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  Vector<double> theta = model.init_parameters();
  std::ostringstream out;
  dptrain::ProgressBar bar(out, {.interactive = true, .refresh_seconds = 0});
  CHECK(bar.interactive());
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 2}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, bar);
  const std::string text = out.str();
  INFO(text);
  CHECK(count(text, "\r") == 2 * 10 + 2);  // every step (refresh 0) and each epoch end
  CHECK(count(text, "\n") == 2);
  CHECK(text.find("epoch 2/2 [") != std::string::npos);
  CHECK(text.find("10/10 loss ") != std::string::npos);
  CHECK(text.find("samples/s ETA ") != std::string::npos);

  // Stopped mid-epoch: the line is still ended.
  std::ostringstream cut;
  dptrain::ProgressBar cut_bar(cut, {.interactive = true});
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 2, .max_steps = 5}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, cut_bar);
  CHECK(cut.str().back() == '\n');
  // A std::ostringstream is never a terminal.
  CHECK_FALSE(dptrain::ProgressBar(cut).interactive());
}

TEST_CASE("TrainContext: hooks see the planned steps and epochs", "[callbacks]") {
  const auto data = test::linear_data<double>(95, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  Vector<double> theta = model.init_parameters();
  struct Plan {
    Index steps_per_epoch = -1, total_steps = -1, total_epochs = -1;
    void on_fit_begin(dptrain::TrainContext<double>& ctx) {
      steps_per_epoch = ctx.steps_per_epoch;
      total_steps = ctx.total_steps;
      total_epochs = ctx.total_epochs;
    }
  } plan;
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 5, .max_steps = 23}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, data, plan);
  CHECK(plan.steps_per_epoch == 10);
  CHECK(plan.total_steps == 23);
  CHECK(plan.total_epochs == 3);
}
