// SPDX-License-Identifier: MIT
// variance_reduction: SGD against SVRG, SAG and SAGA on strongly convex logistic regression (L2 on
// the weights), all at the same constant learning rate: the loss gap to the optimum against
// gradient evaluations and against wall time, at 1 and 2 threads. Data: a LIBSVM file (by default
// liblinear's heart_scale, Debian's liblinear-tools), or a generated sparse problem where it is
// absent. A table, a CSV, and examples/plot_variance_reduction.sh draws both panels.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/machine.hpp"

namespace {

using Data = dptrain::SparseDataset<double, dptrain::Label>;
using Model = dptrain::SparseLogisticRegression<double>;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string libsvm = "/usr/share/doc/liblinear-tools/examples/heart_scale";
  std::vector<dptrain::Index> threads = {1, 2};
  dptrain::Index epochs = 150;  // of SGD, SAG and SAGA; SVRG gets a third (3 gradients per sample)
  dptrain::Index batch = 8;
  double lr = 0.3;       // about 1/(3L) for heart_scale's ‖x̃‖² ≤ 14 (L = ‖x̃‖²/4)
  double lambda = 1e-2;  // L2 on the weights: what makes the problem strongly convex
  dptrain::Index generated_rows = 20000, generated_features = 2000;
  std::string csv = "variance_reduction.csv";
};

// A planted sparse problem: 20 stored features per row, labels from a logistic model.
Data generated(dptrain::Index rows, dptrain::Index features) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<dptrain::Index> column(0, features - 1);
  std::uniform_real_distribution<double> uniform;
  dptrain::Vector<double> w(features);
  for (dptrain::Index j = 0; j < features; ++j) w[j] = normal(rng);
  std::vector<Eigen::Triplet<double, dptrain::Index>> entries;
  dptrain::Vector<dptrain::Label> y(rows);
  for (dptrain::Index r = 0; r < rows; ++r) {
    double z = 0;
    for (int k = 0; k < 20; ++k) {
      const dptrain::Index j = column(rng);
      const double x = normal(rng) / std::sqrt(20.0);
      entries.emplace_back(r, j, x);
      z += w[j] * x;
    }
    y[r] = uniform(rng) < 1 / (1 + std::exp(-z)) ? 1 : 0;
  }
  Data data{.features = Data::matrix_type(rows, features), .targets = y};
  data.features.setFromTriplets(entries.begin(), entries.end());  // repeated columns are summed
  data.features.makeCompressed();
  return data;
}

// The objective (1/n) Σ ℓᵢ + λ/2·‖w‖², the bias left out as the optimizers leave it out.
double objective(const Model& model, const dptrain::Vector<double>& theta, const Data& data, double lambda,
                 dptrain::Index threads) {
  const double penalty = 0.5 * lambda * theta.head(model.inputs()).squaredNorm();
  return dptrain::mean_loss(model, theta, data, threads) + penalty;
}

struct Point {
  std::string method;
  dptrain::Index threads = 1, epoch = 0;
  double evaluations = 0;  // gradients per sample so far
  double seconds = 0;      // the fit's wall time so far, less these measurements
  double objective = 0;
};

// After each epoch: the objective, with the clock paused while it is measured.
struct Recorder {
  const Model* model;
  const Data* data;
  const Options* o;
  std::string method;
  dptrain::Index threads;
  double per_epoch;  // gradient evaluations per sample and epoch
  std::vector<Point>* points;
  Clock::time_point start{};
  double paused = 0;

  void on_fit_begin(dptrain::TrainContext<double>&) { start = Clock::now(); }
  void on_epoch_end(dptrain::TrainContext<double>& ctx) {
    const Clock::time_point at = Clock::now();
    const double seconds = std::chrono::duration<double>(at - start).count() - paused;
    const dptrain::Vector<double> theta = ctx.theta;
    points->push_back({method, threads, ctx.epoch + 1, per_epoch * static_cast<double>(ctx.epoch + 1), seconds,
                       objective(*model, theta, *data, o->lambda, threads)});
    paused += std::chrono::duration<double>(Clock::now() - at).count();
  }
};

void run(const Model& model, const Data& data, const Options& o, dptrain::Index threads, std::vector<Point>& points) {
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = o.batch, .epochs = o.epochs, .seed = 3};
  const auto record = [&](const std::string& method, double per_epoch) {
    return Recorder{&model, &data, &o, method, threads, per_epoch, &points};
  };
  {
    dptrain::Vector<double> theta = model.init_parameters();
    Recorder recorder = record("sgd", 1);
    dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = o.lr, .weight_decay = o.lambda, .decay_biases = false})
        .fit(model, theta, data, recorder);
  }
  {
    dptrain::Vector<double> theta = model.init_parameters();
    Recorder recorder = record("svrg", 3);
    dptrain::Svrg svrg(model, data);
    dptrain::TrainerOptions third = options;
    third.epochs = std::max<dptrain::Index>(1, o.epochs / 3);
    dptrain::DataParallelTrainer(third, dptrain::Sgd{.lr = o.lr, .weight_decay = o.lambda, .decay_biases = false},
                                 svrg.worker())
        .fit(model, theta, data, svrg, recorder);
  }
  {
    dptrain::Vector<double> theta = model.init_parameters();
    Recorder recorder = record("sag", 1);
    dptrain::GradientTable table(model, data);
    dptrain::DataParallelTrainer(options, dptrain::Sag{.lr = o.lr, .weight_decay = o.lambda, .decay_biases = false},
                                 table.worker())
        .fit(model, theta, data, table, recorder);
  }
  {
    dptrain::Vector<double> theta = model.init_parameters();
    Recorder recorder = record("saga", 1);
    dptrain::GradientTable table(model, data);
    dptrain::DataParallelTrainer(options, dptrain::Saga{.lr = o.lr, .weight_decay = o.lambda, .decay_biases = false},
                                 table.worker())
        .fit(model, theta, data, table, recorder);
  }
}

// The optimum's objective: SAGA run ten times as long (its gap falls linearly, so far below the
// runs'), or anything lower that a run reached.
double optimum(const Model& model, const Data& data, const Options& o, const std::vector<Point>& points) {
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::GradientTable table(model, data);
  dptrain::DataParallelTrainer({.threads = o.threads.back(), .batch_size = o.batch, .epochs = 10 * o.epochs, .seed = 9},
                               dptrain::Saga{.lr = o.lr, .weight_decay = o.lambda, .decay_biases = false},
                               table.worker())
      .fit(model, theta, data, table);
  double best = objective(model, theta, data, o.lambda, o.threads.back());
  for (const Point& p : points) best = std::min(best, p.objective);
  return best;
}

std::string thread_list(const std::vector<dptrain::Index>& threads) {
  std::string text;
  for (const dptrain::Index t : threads) text += (text.empty() ? "" : ", ") + std::to_string(t);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "SGD, SVRG, SAG and SAGA on L2-regularised logistic regression: loss gap against gradient "
      "evaluations and wall time"};
  app.add_option("--libsvm", o.libsvm, "a binary LIBSVM file (absent: a generated sparse problem)");
  app.add_option("--threads", o.threads, "thread counts to run")->expected(1, 8);
  app.add_option("--epochs", o.epochs, "epochs of SGD, SAG and SAGA (SVRG: a third, at 3 gradients per sample)");
  app.add_option("--batch", o.batch, "global minibatch");
  app.add_option("--lr", o.lr, "the constant learning rate of every method");
  app.add_option("--lambda", o.lambda, "L2 coefficient on the weights");
  app.add_option("--rows", o.generated_rows, "rows of the generated problem");
  app.add_option("--features", o.generated_features, "features of the generated problem");
  app.add_option("--csv", o.csv, "where to write every epoch's point");
  CLI11_PARSE(app, argc, argv);

  const bool from_file = std::filesystem::exists(o.libsvm);
  const Data data =
      from_file ? dptrain::read_libsvm<double, dptrain::Label>(o.libsvm, {.labels = dptrain::LabelMode::binary}).data
                : generated(o.generated_rows, o.generated_features);
  const Model model(data.dim());
  std::printf("data: %s, %ld samples, %ld features, %ld stored; lambda %g, lr %g, batch %ld\n%s\n",
              from_file ? o.libsvm.c_str() : "generated (no LIBSVM file found)", long(data.size()), long(data.dim()),
              long(data.nonzeros()), o.lambda, o.lr, long(o.batch),
              examples::machine_line("threads " + thread_list(o.threads)).c_str());

  std::vector<Point> points;
  for (const dptrain::Index threads : o.threads) run(model, data, o, threads, points);
  const double best = optimum(model, data, o, points);

  std::printf("\n%-6s %7s %12s %12s %10s %12s\n", "method", "threads", "evaluations", "loss gap", "seconds",
              "gap < 1e-6 at");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const bool last = i + 1 == points.size() || points[i + 1].method != points[i].method ||
                      points[i + 1].threads != points[i].threads;
    if (!last) continue;
    double reached = std::numeric_limits<double>::quiet_NaN();
    for (const Point& p : points)
      if (p.method == points[i].method && p.threads == points[i].threads && p.objective - best < 1e-6 &&
          std::isnan(reached))
        reached = p.seconds;
    std::printf("%-6s %7ld %12.0f %12.3e %10.4f %12s\n", points[i].method.c_str(), long(points[i].threads),
                points[i].evaluations, points[i].objective - best, points[i].seconds,
                std::isnan(reached) ? "never" : (std::to_string(reached).substr(0, 6) + " s").c_str());
  }

  std::ofstream csv(o.csv);
  csv << "method,threads,epoch,evaluations,seconds,objective,gap\n";
  for (const Point& p : points)
    csv << p.method << ',' << p.threads << ',' << p.epoch << ',' << p.evaluations << ',' << p.seconds << ','
        << p.objective << ',' << p.objective - best << '\n';
  if (!csv) throw dptrain::error("could not write " + o.csv);
  // What the run shows, in one line per thread count: the variance-reduced methods' gaps against SGD's.
  for (const dptrain::Index threads : o.threads) {
    const auto final_gap = [&](const std::string& method) {
      double gap = 0;
      for (const Point& p : points)
        if (p.method == method && p.threads == threads) gap = p.objective - best;
      return gap;
    };
    const double sgd = final_gap("sgd");
    const double reduced = std::min({final_gap("svrg"), final_gap("sag"), final_gap("saga")});
    std::printf("%ld thread%s: the best variance-reduced gap is %.1e, SGD's %.1e: %s\n", long(threads),
                threads == 1 ? "" : "s", reduced, sgd, reduced * 100 < sgd ? "100x below or more" : "not 100x below");
  }
  std::printf("\nwrote %s (draw it with examples/plot_variance_reduction.sh %s)\n", o.csv.c_str(), o.csv.c_str());
  return 0;
}
