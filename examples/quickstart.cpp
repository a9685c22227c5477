// SPDX-License-Identifier: MIT
// quickstart: fit a linear regression on every core and compare with the closed-form answer.
#include <dptrain/dptrain.hpp>

#include <Eigen/Dense>
#include <cstdio>
#include <random>

int main() {
  // 10 000 samples of y = x·w + 0.5 + noise, with w = (1, 2, …, 8) / 8.
  const dptrain::Index n = 10000, d = 8;
  std::mt19937 rng(1);
  std::normal_distribution<double> normal;
  dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>(n, d), dptrain::Vector<double>(n)};
  for (dptrain::Index i = 0; i < n; ++i) {
    for (dptrain::Index j = 0; j < d; ++j) data.features(i, j) = normal(rng);
    data.targets[i] =
        data.features.row(i).dot(dptrain::Vector<double>::LinSpaced(d, 1, d) / d) + 0.5 + 0.1 * normal(rng);
  }

  // Train on all cores: 20 epochs of minibatches of 256, momentum SGD with a cosine decay.
  const dptrain::LinearRegression<double> model(d);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.batch_size = 256, .epochs = 20}, dptrain::Momentum{.lr = 0.05},
                                       dptrain::CosineSchedule{});
  const dptrain::FitReport report = trainer.fit(model, theta, data);

  // The least-squares optimum of [X 1]·θ = y, for comparison.
  Eigen::MatrixXd design(n, d + 1);
  design << data.features, Eigen::VectorXd::Ones(n);
  const Eigen::VectorXd optimum = design.colPivHouseholderQr().solve(data.targets);

  std::printf("%ld threads, %ld steps, %.0f samples/s, last epoch's loss %.5f\nparameter  dptrain  optimum\n",
              long(report.threads), long(report.steps), report.samples_per_second(), report.epoch_loss.back());
  for (dptrain::Index j = 0; j <= d; ++j)
    std::printf("%c%-8s %8.5f %8.5f\n", j < d ? 'w' : 'b', j < d ? std::to_string(j).c_str() : "", theta[j],
                optimum[j]);
  std::printf("relative distance to the optimum: %.2e\n", (theta - optimum).norm() / optimum.norm());
}
