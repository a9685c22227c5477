// SPDX-License-Identifier: MIT
// Training reaches known optima: the least-squares solution, and low loss on separable data.
#include <catch2/catch.hpp>

#include <Eigen/Dense>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

TEST_CASE("Convergence: linear regression reaches the closed-form least-squares solution", "[trainer][convergence]") {
  const Index threads = GENERATE(1, 2, 4);
  const auto data = test::linear_data<double>(400, 5, 21, 0.3);
  // Closed form: [X 1] θ* = y in the least-squares sense.
  Eigen::MatrixXd design(400, 6);
  design << data.features, Eigen::VectorXd::Ones(400);
  const Eigen::VectorXd optimum = design.colPivHouseholderQr().solve(data.targets);

  const dptrain::LinearRegression<double> model(5);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = threads, .batch_size = 400, .epochs = 3000, .shuffle = false},
                                   dptrain::Momentum{.lr = 0.1, .momentum = 0.9})
          .fit(model, theta, data);
  CHECK(report.steps == 3000);
  CHECK(test::relative_error<double>(theta, optimum) <= 1e-9);
}

TEST_CASE("Convergence: logistic regression separates separable data", "[trainer][convergence]") {
  const auto data = test::cluster_data<double>(600, 4, 2, 5, 3.0);
  const dptrain::LogisticRegression<double> model(4);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 32, .epochs = 40, .seed = 3}, dptrain::Adam{.lr = 0.05})
          .fit(model, theta, data);
  // θ = 0 starts at log 2 ≈ 0.69 per sample.
  CHECK(report.epoch_loss.front() > 5 * report.epoch_loss.back());
  CHECK(report.epoch_loss.back() < 0.02);
}

TEST_CASE("Convergence: softmax regression and an MLP reach a low loss on separable clusters",
          "[trainer][convergence]") {
  const auto data = test::cluster_data<float>(900, 6, 5, 8, 3.0);
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 64, .epochs = 40, .seed = 2};
  SECTION("softmax regression") {
    const dptrain::SoftmaxRegression<float> model(6, 5);
    dptrain::Vector<float> theta = model.init_parameters();
    const auto report = dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.05}).fit(model, theta, data);
    // θ = 0 starts at log 5 ≈ 1.61 per sample.
    CHECK(report.epoch_loss.front() > 5 * report.epoch_loss.back());
    CHECK(report.epoch_loss.back() < 0.05);
  }
  SECTION("MLP") {
    const dptrain::Mlp<float> model({6, 32, 5});
    dptrain::Vector<float> theta = model.init_parameters(4);
    const auto report = dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}).fit(model, theta, data);
    CHECK(report.epoch_loss.back() < 0.05);
  }
}
