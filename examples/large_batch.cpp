// SPDX-License-Identifier: MIT
// large_batch: what happens to the Fashion-MNIST MLP (784-256-10, momentum) when the global batch
// grows from 256 to 16384 for a fixed number of epochs, with (a) the batch-256 learning rate
// unchanged, (b) the linear scaling rule, (c) linear scaling with gradual warm-up (Goyal et al.,
// 2017), and the layer-wise rules made for large batches, (d) LARS (You et al., 2017) and (e) LAMB
// (You et al., 2020), their rates scaled by the square root of the batch, with the same warm-up:
// final test accuracy and time per epoch. A table, a CSV, and
// examples/plot_large_batch.sh draws accuracy against batch size.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "common/fashion_mnist_data.hpp"
#include "common/machine.hpp"

namespace {

struct Options {
  std::vector<dptrain::Index> batches = {256, 1024, 4096, 16384};
  dptrain::Index epochs = 10;
  double lr = 0.05;  // tuned for batch 256 (momentum 0.9): the fashion_mnist example's default
  double warmup_epochs = 2;
  double lars_lr = 2.0;    // Lars (momentum 0.9, trust coefficient 0.001), tuned at batch 256
  double lamb_lr = 0.002;  // Lamb, tuned at batch 256
  dptrain::Index threads = dptrain::default_threads();
  dptrain::Index train_size = 0;  // the first samples of the training set (0: all)
  std::string csv = "large_batch.csv";
};

struct Row {
  dptrain::Index batch = 0;
  std::string rule;
  double peak_lr = 0;  // the rate after any ramp
  double accuracy = std::nan("");
  double seconds_per_epoch = 0;
  std::string note;  // "diverged at step N"
};

// One run: the MLP from the same initialisation, `optimizer` with `schedule`.
template <class Optimizer, class Schedule>
Row train(const examples::FashionMnist& data, const dptrain::DenseDataset<float, dptrain::Label>& train_set,
          const Options& o, dptrain::Index batch, const std::string& rule, double peak_lr, const Optimizer& optimizer,
          Schedule schedule) {
  const dptrain::Mlp<float> model({784, 256, 10});
  dptrain::Vector<float> theta = model.init_parameters(7);
  Row row;
  row.batch = batch;
  row.rule = rule;
  row.peak_lr = peak_lr;
  try {
    const dptrain::FitReport report =
        dptrain::DataParallelTrainer({.threads = o.threads, .batch_size = batch, .epochs = o.epochs, .seed = 5},
                                     optimizer, schedule)
            .fit(model, theta, train_set);
    row.accuracy = 100 * dptrain::accuracy(model, theta, data.test, o.threads);
    row.seconds_per_epoch = report.seconds / static_cast<double>(report.epochs);
  } catch (const dptrain::non_finite_error& e) {
    row.note = "diverged at step " + std::to_string(e.step());
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Fashion-MNIST MLP at growing global batches: the learning rate unchanged, scaled linearly, and "
      "scaled with warm-up, LARS and LAMB"};
  app.add_option("--batches", o.batches, "global batch sizes")->expected(1, 16);
  app.add_option("--epochs", o.epochs, "epochs of every run");
  app.add_option("--lr", o.lr, "the learning rate tuned for batch 256 (momentum 0.9)");
  app.add_option("--warmup-epochs", o.warmup_epochs, "length of the linear warm-up of rules (c) to (e)");
  app.add_option("--lars-lr", o.lars_lr, "LARS' learning rate at batch 256 (momentum 0.9, trust coefficient 0.001)");
  app.add_option("--lamb-lr", o.lamb_lr, "LAMB's learning rate at batch 256");
  app.add_option("--threads", o.threads, "workers");
  app.add_option("--train-size", o.train_size, "train on the first N samples (0: all)");
  app.add_option("--csv", o.csv, "where to write the table");
  CLI11_PARSE(app, argc, argv);

  const examples::FashionMnist data = examples::load_fashion_mnist();
  std::vector<dptrain::Index> first(
      static_cast<std::size_t>(o.train_size > 0 ? std::min(o.train_size, data.train.size()) : data.train.size()));
  std::iota(first.begin(), first.end(), dptrain::Index{0});
  const dptrain::DenseDataset<float, dptrain::Label> train_set = dptrain::subset(data.train, first);
  std::printf(
      "%s\n%ld training samples, %ld epochs, at batch 256 lr %g (momentum), %g (LARS), %g (LAMB); "
      "warm-up %g epochs\n\n",
      examples::machine_line(std::to_string(o.threads) + " threads").c_str(), long(train_set.size()), long(o.epochs),
      o.lr, o.lars_lr, o.lamb_lr, o.warmup_epochs);

  std::vector<Row> rows;
  for (const dptrain::Index batch : o.batches) {
    const double ratio = static_cast<double>(batch) / 256.0;
    const dptrain::Momentum momentum{.lr = o.lr, .momentum = 0.9};
    const dptrain::WarmupSchedule<dptrain::LinearScalingSchedule<>> linear_warmup{.warmup_epochs = o.warmup_epochs,
                                                                                  .after = {.base_batch = 256}};
    rows.push_back(train(data, train_set, o, batch, "unchanged", o.lr, momentum, dptrain::ConstantSchedule{}));
    rows.push_back(train(data, train_set, o, batch, "linear", o.lr * ratio, momentum,
                         dptrain::LinearScalingSchedule<>{.base_batch = 256}));
    rows.push_back(train(data, train_set, o, batch, "linear+warmup", o.lr * ratio, momentum, linear_warmup));
    // The layer-wise rules' rates grow with the square root of the batch (as LAMB's paper scales
    // it; linearly scaled, LARS lost 29 points at batch 4096 here: benchmarks/RESULTS.md).
    const dptrain::WarmupSchedule<> warmup{.warmup_epochs = o.warmup_epochs};
    const double lars_lr = o.lars_lr * std::sqrt(ratio), lamb_lr = o.lamb_lr * std::sqrt(ratio);
    rows.push_back(
        train(data, train_set, o, batch, "lars", lars_lr, dptrain::Lars{.lr = lars_lr, .momentum = 0.9}, warmup));
    rows.push_back(train(data, train_set, o, batch, "lamb", lamb_lr, dptrain::Lamb{.lr = lamb_lr}, warmup));
    for (std::size_t i = rows.size() - 5; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("batch %6ld  %-14s lr %7.3f  test accuracy %s  %.3f s/epoch\n", long(r.batch), r.rule.c_str(),
                  r.peak_lr, r.note.empty() ? (std::to_string(r.accuracy).substr(0, 5) + " %").c_str() : r.note.c_str(),
                  r.seconds_per_epoch);
    }
  }

  std::ofstream csv(o.csv);
  csv << "batch,rule,peak_lr,test_accuracy,seconds_per_epoch,note\n";
  for (const Row& r : rows)
    csv << r.batch << ',' << r.rule << ',' << r.peak_lr << ',' << (r.note.empty() ? std::to_string(r.accuracy) : "")
        << ',' << r.seconds_per_epoch << ',' << r.note << '\n';
  if (!csv) throw dptrain::error("could not write " + o.csv);
  std::printf("\nwrote %s (draw it with examples/plot_large_batch.sh %s)\n", o.csv.c_str(), o.csv.c_str());
  return 0;
}
