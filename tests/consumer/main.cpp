// SPDX-License-Identifier: MIT
// Fits y = 2x + 1 with dptrain from another project; exits non-zero if the fit is off.
#include <dptrain/dptrain.hpp>

#include <cmath>
#include <cstdio>

int main() {
  dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>(64, 1), dptrain::Vector<double>(64)};
  for (dptrain::Index i = 0; i < 64; ++i) {
    data.features(i, 0) = static_cast<double>(i) / 32.0 - 1.0;
    data.targets[i] = 2.0 * data.features(i, 0) + 1.0;
  }
  const dptrain::LinearRegression<double> model(1);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 16, .epochs = 300}, dptrain::Sgd{.lr = 0.2});
  trainer.fit(model, theta, data);
  std::printf("w = %.6f, b = %.6f\n", theta[0], theta[1]);
  return std::abs(theta[0] - 2.0) < 1e-6 && std::abs(theta[1] - 1.0) < 1e-6 ? 0 : 1;
}
