// SPDX-License-Identifier: MIT
// Svrg: two steps against a hand computation; a loss gap at least 100x below constant-step SGD at
// the same gradient evaluations on a least-squares problem with a known optimum; the same θ for 1
// to 4 threads under Sgd and Momentum; the anchor's period; a resume from a checkpoint; what it
// refuses.
#include <catch2/catch.hpp>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/least_squares.hpp"
#include "support/temp_dir.hpp"

using dptrain::Index;
using dptrain::Vector;

TEST_CASE("Svrg: two steps are the hand-computed variance-reduced steps", "[workers][trainer]") {
  const test::LeastSquares p;
  const double lr = 0.05;
  const Vector<double> theta0 = Vector<double>::LinSpaced(9, -0.5, 0.5);
  Vector<double> theta = theta0;
  dptrain::Svrg svrg(p.model, p.data);
  const Index threads = GENERATE(1, 2);
  dptrain::DataParallelTrainer({.threads = threads, .batch_size = 256, .epochs = 1, .shuffle = false},
                               dptrain::Sgd{.lr = lr}, svrg.worker())
      .fit(p.model, theta, p.data, svrg);
  // The anchor is θ₀, so the first step is a full gradient step; the second corrects its
  // minibatch's gradient at θ₁ by the same minibatch's at θ₀ and by μ.
  const Vector<double> mu = test::summed_gradient(p.model, p.data, theta0, 0, 512) / 512.0;
  const Vector<double> theta1 = theta0 - lr * mu;
  const Vector<double> g2 = (test::summed_gradient(p.model, p.data, theta1, 256, 256) -
                             test::summed_gradient(p.model, p.data, theta0, 256, 256)) /
                                256.0 +
                            mu;
  const Vector<double> theta2 = theta1 - lr * g2;
  CHECK(test::relative_error(theta, theta2) < 1e-13);
  CHECK(test::relative_error(Vector<double>(svrg.anchor().mean_gradient.map()), mu) < 1e-13);
  CHECK(svrg.anchor().refreshes == 1);
}

TEST_CASE("Svrg: at the same gradient evaluations, a loss gap 100x below SGD's with a constant step",
          "[workers][trainer]") {
  const test::LeastSquares p;
  const double best = p.mean_loss(p.optimum());
  const Index threads = GENERATE(1, 2);
  const double lr = 0.02;
  // SVRG evaluates 3n gradients per epoch (n for μ, two per sample for the steps), SGD n.
  const Index epochs = 12;
  Vector<double> sgd = p.model.init_parameters(), svrg_theta = p.model.init_parameters();
  dptrain::DataParallelTrainer({.threads = threads, .batch_size = 8, .epochs = 3 * epochs, .seed = 4},
                               dptrain::Sgd{.lr = lr})
      .fit(p.model, sgd, p.data);
  dptrain::Svrg svrg(p.model, p.data);
  dptrain::DataParallelTrainer({.threads = threads, .batch_size = 8, .epochs = epochs, .seed = 4},
                               dptrain::Sgd{.lr = lr}, svrg.worker())
      .fit(p.model, svrg_theta, p.data, svrg);
  const double sgd_gap = p.mean_loss(sgd) - best, svrg_gap = p.mean_loss(svrg_theta) - best;
  INFO("loss gap: SGD " << sgd_gap << ", SVRG " << svrg_gap);
  CHECK(svrg_gap >= 0);
  CHECK(svrg_gap * 100 < sgd_gap);
  CHECK(svrg.anchor().refreshes == epochs);
}

TEST_CASE("Svrg: the same theta within 1e-12 for 1 to 4 threads, with Sgd and with Momentum", "[workers][trainer]") {
  const test::LeastSquares p;
  const auto train = [&](Index threads, const auto& optimizer) {
    Vector<double> theta = p.model.init_parameters();
    dptrain::Svrg svrg(p.model, p.data);
    dptrain::DataParallelTrainer({.threads = threads, .batch_size = 24, .epochs = 3, .seed = 9}, optimizer,
                                 svrg.worker())
        .fit(p.model, theta, p.data, svrg);
    return theta;
  };
  SECTION("Sgd") {
    const Vector<double> one = train(1, dptrain::Sgd{.lr = 0.05});
    for (const Index threads : {2, 3, 4})
      CHECK(test::relative_error(train(threads, dptrain::Sgd{.lr = 0.05}), one) < 1e-12);
  }
  SECTION("Momentum") {
    const dptrain::Momentum momentum{.lr = 0.02, .momentum = 0.9};
    const Vector<double> one = train(1, momentum);
    for (const Index threads : {2, 3, 4}) CHECK(test::relative_error(train(threads, momentum), one) < 1e-12);
    CHECK(p.mean_loss(one) < 1.01 * p.mean_loss(p.optimum()));
  }
}

TEST_CASE("Svrg: the anchor is recomputed every period_epochs epochs, and at a fit's start", "[workers][trainer]") {
  const test::LeastSquares p;
  Vector<double> theta = p.model.init_parameters();
  dptrain::Svrg svrg(p.model, p.data, {.period_epochs = 2});
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 64, .epochs = 5}, dptrain::Sgd{.lr = 0.05},
                                       svrg.worker());
  trainer.fit(p.model, theta, p.data, svrg);
  CHECK(svrg.anchor().refreshes == 3);  // epochs 0, 2, 4
  const Vector<double> before = theta;
  trainer.fit(p.model, theta, p.data, svrg);  // a new fit starts from its own θ
  CHECK(svrg.anchor().refreshes == 6);
  CHECK(test::relative_error(theta, before) > 0);

  CHECK_THROWS_AS(dptrain::Svrg(p.model, p.data, {.period_epochs = 0}), dptrain::invalid_argument);
  Vector<float> narrow = Vector<float>::Zero(9);
  const dptrain::LinearRegression<float> float_model(8);
  const auto float_data = test::linear_data<float>(64, 8, 1);
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer({.threads = 1, .batch_size = 8}, dptrain::Sgd{.lr = 0.05}, svrg.worker())
          .fit(float_model, narrow, float_data),
      Catch::Matchers::Contains("scalar type"));
}

TEST_CASE("Svrg: a run resumed from an epoch's checkpoint is the uninterrupted run, bit for bit",
          "[workers][trainer][checkpoint]") {
  const test::LeastSquares p;
  const test::TempDir dir("svrg");
  const dptrain::Momentum momentum{.lr = 0.02, .momentum = 0.9};  // its state is in the checkpoint
  dptrain::TrainerOptions options{.threads = 2, .batch_size = 24, .epochs = 4, .seed = 3};
  Vector<double> straight = p.model.init_parameters();
  dptrain::Svrg svrg(p.model, p.data);
  dptrain::DataParallelTrainer(options, momentum, svrg.worker()).fit(p.model, straight, p.data, svrg);

  options.epochs = 2;
  Vector<double> theta = p.model.init_parameters();
  dptrain::Svrg first(p.model, p.data);
  dptrain::Checkpoint checkpoint(p.model, dir.file("svrg.ckpt"), {.every_epochs = 0});
  dptrain::DataParallelTrainer(options, momentum, first.worker()).fit(p.model, theta, p.data, first, checkpoint);
  REQUIRE(checkpoint.saves() == 1);

  Vector<double> resumed = Vector<double>::Zero(theta.size());
  const dptrain::TrainingState<double> state = dptrain::load_checkpoint(checkpoint.path(), p.model, resumed);
  options.epochs = 4;
  dptrain::Svrg second(p.model, p.data);  // a new process: the anchor is recomputed at the resumed θ
  dptrain::DataParallelTrainer(options, momentum, second.worker()).resume(p.model, resumed, p.data, state, second);
  CHECK(second.anchor().refreshes == 2);
  CHECK(resumed == straight);
}
