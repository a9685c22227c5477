// SPDX-License-Identifier: MIT
// MetricsLog: a CSV header and one row per epoch, or one JSON object per line.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "dptrain/callbacks/metrics_log.hpp"
#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::Vector;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  return fields;
}

}  // namespace

TEST_CASE("MetricsLog: CSV has a header and one row per epoch", "[callbacks]") {
  const auto data = test::linear_data<double>(100, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  Vector<double> theta = model.init_parameters();
  std::ostringstream out;
  dptrain::MetricsLog log(out);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 3}, dptrain::Sgd{.lr = 0.01})
          .fit(model, theta, data, log);
  const std::vector<std::string> rows = lines(out.str());
  INFO(out.str());
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == "epoch,steps,loss,samples_per_second,seconds,compute,wait,aggregate,update");
  for (std::size_t e = 1; e < rows.size(); ++e) {
    const std::vector<std::string> fields = split(rows[e]);
    REQUIRE(fields.size() == 9);
    CHECK(fields[0] == std::to_string(e));
    CHECK(fields[1] == std::to_string(10 * e));
    CHECK(std::stod(fields[2]) == Approx(report.epoch_loss[e - 1]).epsilon(1e-8));
    CHECK(std::stod(fields[3]) > 0);
    CHECK(std::stod(fields[5]) > 0);                      // compute
    CHECK(std::stod(fields[5]) <= std::stod(fields[4]));  // at most the epoch's wall time
  }
}

TEST_CASE("MetricsLog: with an Evaluate callback a validation column is added", "[callbacks]") {
  const auto train = test::cluster_data<float>(120, 3, 2, 1);
  const auto validation = test::cluster_data<float>(40, 3, 2, 2);
  const dptrain::LogisticRegression<float> model(3);
  Vector<float> theta = model.init_parameters();
  dptrain::Evaluate evaluate(model, validation);
  std::ostringstream csv, json;
  dptrain::MetricsLog log(csv, evaluate);
  dptrain::MetricsLog json_log(json, evaluate, {.format = dptrain::LogFormat::json_lines});
  CHECK(log.columns().size() == 10);
  dptrain::DataParallelTrainer({.threads = 3, .batch_size = 12, .epochs = 2}, dptrain::Sgd{.lr = 0.01})
      .fit(model, theta, train, evaluate, log, json_log);
  const std::vector<std::string> rows = lines(csv.str());
  REQUIRE(rows.size() == 3);
  CHECK(split(rows[0])[3] == "val_accuracy");
  CHECK(split(rows[2]).size() == 10);
  CHECK(std::stod(split(rows[2])[3]) == Approx(evaluate.last()));

  const std::vector<std::string> objects = lines(json.str());
  INFO(json.str());
  REQUIRE(objects.size() == 2);
  for (const std::string& o : objects) {
    CHECK(o.front() == '{');
    CHECK(o.back() == '}');
    for (const char* key : {"\"epoch\":", "\"steps\":", "\"loss\":", "\"val_accuracy\":", "\"samples_per_second\":",
                            "\"seconds\":", "\"compute\":", "\"wait\":", "\"aggregate\":", "\"update\":"})
      CHECK(o.find(key) != std::string::npos);
  }
  CHECK(objects[1].rfind("{\"epoch\":2,\"steps\":20,\"loss\":", 0) == 0);
}

TEST_CASE("FitReport: workers holds the cumulative phase times at every epoch end", "[callbacks]") {
  const auto data = test::linear_data<double>(200, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  Vector<double> theta = model.init_parameters();
  struct Watch {
    std::vector<double> compute;  // worker 1's cumulative compute seconds at each epoch end
    void on_epoch_end(dptrain::TrainContext<double>& ctx) { compute.push_back(ctx.report.workers.at(1).compute); }
  } watch;
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 3}, dptrain::Sgd{.lr = 0.01})
          .fit(model, theta, data, watch);
  REQUIRE(watch.compute.size() == 3);
  CHECK(watch.compute[0] > 0);
  CHECK(watch.compute[1] >= watch.compute[0]);
  CHECK(watch.compute[2] >= watch.compute[1]);
  CHECK(watch.compute[2] == report.workers[1].compute);  // the last epoch ends after the last step
}
