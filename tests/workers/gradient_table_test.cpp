// SPDX-License-Identifier: MIT
// Sag, Saga and their GradientTable: the models' residual members against their gradients; four
// steps of each against a hand computation; ᾱ stays the mean of the stored gradients; a loss gap
// at least 100x below constant-step SGD's at the same gradient evaluations on a problem with a
// known optimum; the same θ for 1 to 4 threads; the table's size; resume; what is refused.
#include <catch2/catch.hpp>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/least_squares.hpp"
#include "support/sparse_data.hpp"

using Catch::Matchers::Contains;
using dptrain::Index;
using dptrain::Vector;

namespace {

// The gradient Σⱼ x̃ⱼ ⊗ rⱼ of given residuals, through the model's own member.
template <class M, class D>
Vector<typename M::scalar_type> residual_sum(const M& model, const D& data,
                                             const dptrain::RowMatrix<typename M::scalar_type>& residuals) {
  using S = typename M::scalar_type;
  Vector<S> g = Vector<S>::Zero(model.num_parameters());
  auto ws = model.make_workspace(data.size());
  model.add_residual_gradient(data.rows(0, data.size()),
                              dptrain::ConstRowMatrixMap<S>(residuals.data(), residuals.rows(), residuals.cols()), g,
                              ws);
  return g;
}

// At the end of a fit: ᾱ (the optimizer's state) against the mean of the table's gradients.
template <class M, class D>
struct MeanCheck {
  const M* model;
  const D* data;
  const dptrain::GradientTable<M, D>* table;
  double error = -1;
  void on_fit_end(dptrain::TrainContext<typename M::scalar_type>& ctx) {
    using S = typename M::scalar_type;
    const Vector<S> mean = residual_sum(*model, *data, table->residuals()) / static_cast<S>(data->size());
    const Vector<S> state = ctx.state.optimizer_state[0].map();
    error = test::relative_error(state, mean);
  }
};
template <class M, class D>
MeanCheck<M, D> mean_check(const M& model, const D& data, const dptrain::GradientTable<M, D>& table) {
  return {&model, &data, &table};
}

}  // namespace

TEST_CASE("ResidualGradient: x̃ ⊗ r of the residuals is the gradient, for every linear model", "[models][workers]") {
  const auto check = [](const auto& model, const auto& data) {
    using S = typename std::decay_t<decltype(model)>::scalar_type;
    const Index n = data.size();
    const Vector<S> theta = Vector<S>::LinSpaced(model.num_parameters(), S(-0.3), S(0.4));
    auto ws = model.make_workspace(n);
    Vector<S> expected = Vector<S>::Zero(theta.size());
    const S loss = model.loss_and_gradient(theta, data.rows(0, n), expected, ws);
    dptrain::RowMatrix<S> r(n, model.residual_width());
    const S loss_r =
        model.loss_and_residuals(theta, data.rows(0, n), dptrain::RowMatrixMap<S>(r.data(), n, r.cols()), ws);
    CHECK(loss_r == Approx(loss).epsilon(1e-12));
    CHECK(test::relative_error(residual_sum(model, data, r), expected) < 1e-12);
  };
  check(dptrain::LinearRegression<double>(5), test::linear_data<double>(37, 5, 1));
  check(dptrain::LogisticRegression<double>(5), test::cluster_data<double>(37, 5, 2, 2));
  for (const Index classes : {3, 10, 24})  // narrow kernels (up to 16 classes) and GEMM
    check(dptrain::SoftmaxRegression<double>(6, classes), test::cluster_data<double>(41, 6, classes, 3));
  check(dptrain::SparseLogisticRegression<double>(30), test::random_sparse<double>(37, 30, 0.2, 2, 4));
  check(dptrain::SparseSoftmaxRegression<double>(30, 4), test::random_sparse<double>(37, 30, 0.2, 4, 5));
}

TEST_CASE("Sag and Saga: four steps are the hand-computed ones", "[optimizers][workers]") {
  const test::LeastSquares p;
  const double lr = 0.01;
  const Index n = 512, half = 256;
  const Vector<double> theta0 = Vector<double>::LinSpaced(9, -0.5, 0.5);
  const Index threads = GENERATE(1, 2);
  const auto train = [&](const auto& optimizer) {
    Vector<double> theta = theta0;
    dptrain::GradientTable table(p.model, p.data);
    dptrain::DataParallelTrainer({.threads = threads, .batch_size = half, .epochs = 2, .shuffle = false}, optimizer,
                                 table.worker())
        .fit(p.model, theta, p.data, table);
    return theta;
  };
  const auto grad = [&](const Vector<double>& theta, Index begin) {
    return Vector<double>(test::summed_gradient(p.model, p.data, theta, begin, half) / double(half));
  };
  const double share = double(half) / double(n);
  // Epoch 1 stores each half's gradients (the table starts at zero); epoch 2 subtracts them.
  SECTION("Saga: v = d + ᾱ, then ᾱ += (|B|/n)·d") {
    Vector<double> theta = theta0, mean = Vector<double>::Zero(9);
    const Vector<double> d1 = grad(theta0, 0);
    theta -= lr * (d1 + mean), mean += share * d1;
    const Vector<double> theta1 = theta, d2 = grad(theta1, half);
    theta -= lr * (d2 + mean), mean += share * d2;
    const Vector<double> theta2 = theta, d3 = grad(theta2, 0) - grad(theta0, 0);
    theta -= lr * (d3 + mean), mean += share * d3;
    const Vector<double> d4 = grad(theta, half) - grad(theta1, half);
    theta -= lr * (d4 + mean);
    CHECK(test::relative_error(train(dptrain::Saga{.lr = lr}), theta) < 1e-13);
  }
  SECTION("Sag: ᾱ += (|B|/n)·d, then θ moves along ᾱ") {
    Vector<double> theta = theta0, mean = Vector<double>::Zero(9);
    const Vector<double> d1 = grad(theta0, 0);
    mean += share * d1, theta -= lr * mean;
    const Vector<double> theta1 = theta, d2 = grad(theta1, half);
    mean += share * d2, theta -= lr * mean;
    const Vector<double> theta2 = theta, d3 = grad(theta2, 0) - grad(theta0, 0);
    mean += share * d3, theta -= lr * mean;
    const Vector<double> d4 = grad(theta, half) - grad(theta1, half);
    mean += share * d4, theta -= lr * mean;
    CHECK(test::relative_error(train(dptrain::Sag{.lr = lr}), theta) < 1e-13);
  }
}

TEST_CASE("Sag and Saga: ᾱ stays the mean of the stored gradients, shuffled, with a partial minibatch",
          "[optimizers][workers]") {
  const auto data = test::cluster_data<double>(203, 6, 4, 7);  // batch 16: the last minibatch has 11
  const dptrain::SoftmaxRegression<double> model(6, 4);
  const Index threads = GENERATE(1, 3);
  dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .seed = 2};
  options.accumulation_steps = GENERATE(1, 2);
  const auto check = [&](const auto& optimizer) {
    Vector<double> theta = model.init_parameters();
    dptrain::GradientTable table(model, data);
    auto mean = mean_check(model, data, table);
    dptrain::DataParallelTrainer(options, optimizer, table.worker()).fit(model, theta, data, table, mean);
    CHECK(mean.error >= 0);
    CHECK(mean.error < 1e-12);
    CHECK(table.residuals().rowwise().squaredNorm().minCoeff() > 0);  // every sample was stored
  };
  check(dptrain::Saga{.lr = 0.05});
  check(dptrain::Sag{.lr = 0.05});
}

TEST_CASE("Sag and Saga: at the same gradient evaluations, a loss gap 100x below SGD's with a constant step",
          "[optimizers][workers]") {
  const test::LeastSquares p;
  const double best = p.mean_loss(p.optimum());
  const Index threads = GENERATE(1, 2);
  const double lr = 0.01;
  const Index epochs = 30;  // one gradient per sample and epoch, for all three
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 8, .epochs = epochs, .seed = 4};
  Vector<double> sgd = p.model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = lr}).fit(p.model, sgd, p.data);
  const double sgd_gap = p.mean_loss(sgd) - best;
  const auto gap = [&](const auto& optimizer) {
    Vector<double> theta = p.model.init_parameters();
    dptrain::GradientTable table(p.model, p.data);
    dptrain::DataParallelTrainer(options, optimizer, table.worker()).fit(p.model, theta, p.data, table);
    return p.mean_loss(theta) - best;
  };
  const double saga_gap = gap(dptrain::Saga{.lr = lr}), sag_gap = gap(dptrain::Sag{.lr = lr});
  INFO("loss gap: SGD " << sgd_gap << ", SAGA " << saga_gap << ", SAG " << sag_gap);
  CHECK(saga_gap >= 0);
  CHECK(sag_gap >= 0);
  CHECK(saga_gap * 100 < sgd_gap);
  CHECK(sag_gap * 100 < sgd_gap);
}

TEST_CASE("Sag and Saga: the same theta within 1e-12 for 1 to 4 threads", "[optimizers][workers]") {
  const auto dense = test::cluster_data<double>(203, 6, 4, 7);
  const auto sparse = test::random_sparse<double>(203, 40, 0.15, 4, 9);
  const auto train = [](const auto& model, const auto& data, Index threads, const auto& optimizer) {
    Vector<double> theta = model.init_parameters();
    dptrain::GradientTable table(model, data);
    dptrain::DataParallelTrainer({.threads = threads, .batch_size = 24, .epochs = 3, .seed = 9}, optimizer,
                                 table.worker())
        .fit(model, theta, data, table);
    return theta;
  };
  const auto same = [&](const auto& model, const auto& data, const auto& optimizer) {
    const Vector<double> one = train(model, data, 1, optimizer);
    for (const Index threads : {2, 3, 4})
      CHECK(test::relative_error(train(model, data, threads, optimizer), one) < 1e-12);
  };
  same(dptrain::SoftmaxRegression<double>(6, 4), dense, dptrain::Saga{.lr = 0.05, .weight_decay = 1e-3});
  same(dptrain::SoftmaxRegression<double>(6, 4), dense, dptrain::Sag{.lr = 0.05});
  same(dptrain::SparseSoftmaxRegression<double>(40, 4), sparse, dptrain::Saga{.lr = 0.05});
  same(dptrain::SparseSoftmaxRegression<double>(40, 4), sparse,
       dptrain::Sag{.lr = 0.05, .weight_decay = 1e-3, .decay_biases = false});
}

TEST_CASE("GradientTable: n·k residuals, not n·d gradients", "[workers]") {
  const auto data = test::cluster_data<float>(300, 50, 7, 1);
  const dptrain::SoftmaxRegression<float> softmax(50, 7);
  const dptrain::GradientTable table(softmax, data);
  CHECK(table.residuals().rows() == 300);
  CHECK(table.residuals().cols() == 7);
  CHECK(table.bytes() == 300 * 7 * Index{sizeof(float)});  // θ has 51 · 7 = 357 floats
  const auto binary = test::cluster_data<float>(300, 50, 2, 1);
  const dptrain::LogisticRegression<float> logistic(50);
  CHECK(dptrain::GradientTable(logistic, binary).bytes() == 300 * Index{sizeof(float)});
}

TEST_CASE("GradientTable: resume() starts the table and ᾱ again from the resumed theta", "[workers][checkpoint]") {
  const auto data = test::cluster_data<double>(96, 5, 3, 4);
  const dptrain::SoftmaxRegression<double> model(5, 3);
  const dptrain::Saga saga{.lr = 0.1};
  dptrain::TrainerOptions options{.threads = 2, .batch_size = 16, .epochs = 2, .seed = 1};
  Vector<double> theta = model.init_parameters();
  dptrain::GradientTable table(model, data);
  dptrain::TrainingState<double> saved;
  struct Keep {
    dptrain::TrainingState<double>* into;
    void on_fit_end(dptrain::TrainContext<double>& ctx) { *into = ctx.state; }
  } keep{&saved};
  dptrain::DataParallelTrainer(options, saga, table.worker()).fit(model, theta, data, table, keep);
  REQUIRE(saved.optimizer_state.size() == 1);
  CHECK(saved.optimizer_state[0].map().norm() > 0);

  // The saved ᾱ is not taken: resuming from it and from a zero ᾱ is the same run.
  options.epochs = 4;
  const auto resume = [&](const dptrain::TrainingState<double>& state, double* mean_error) {
    Vector<double> resumed = theta;
    dptrain::GradientTable fresh(model, data);
    auto mean = mean_check(model, data, fresh);
    const dptrain::FitReport report =
        dptrain::DataParallelTrainer(options, saga, fresh.worker()).resume(model, resumed, data, state, fresh, mean);
    CHECK(report.steps == 12);
    REQUIRE(report.notes.size() == 1);
    CHECK_THAT(report.notes[0], Contains("table"));
    *mean_error = mean.error;
    return resumed;
  };
  dptrain::TrainingState<double> zeroed = saved;
  zeroed.optimizer_state[0].map().setZero();
  double error = -1, zeroed_error = -1;
  const Vector<double> resumed = resume(saved, &error);
  CHECK(resumed == resume(zeroed, &zeroed_error));
  CHECK(error >= 0);
  CHECK(error < 1e-12);
  CHECK(test::relative_error(resumed, theta) > 0);
}

TEST_CASE("Sag and Saga: what does not fit them is refused, with a sentence", "[optimizers][workers]") {
  const auto data = test::cluster_data<double>(64, 5, 3, 4);
  const dptrain::SoftmaxRegression<double> model(5, 3);
  Vector<double> theta = model.init_parameters();
  dptrain::GradientTable table(model, data);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 16};
  const auto refused = [&](auto trainer, const std::string& why) {
    CHECK_THROWS_WITH(trainer.fit(model, theta, data, table), Contains(why));
  };
  refused(dptrain::DataParallelTrainer(options, dptrain::Saga{}), "GradientTable");  // no table
  refused(dptrain::DataParallelTrainer(options, dptrain::Sgd{}, table.worker()), "Sag or Saga");
  dptrain::TrainerOptions equal = options;
  equal.weighting = dptrain::Weighting::equal;
  refused(dptrain::DataParallelTrainer(equal, dptrain::Sag{}, table.worker()), "Weighting::by_samples");
  dptrain::TrainerOptions clipped = options;
  clipped.clip_norm = 1;
  refused(dptrain::DataParallelTrainer(clipped, dptrain::Saga{}, table.worker()), "clip_norm");
  dptrain::TrainerOptions skipping = options;
  skipping.on_non_finite = dptrain::NonFinitePolicy::skip;
  refused(dptrain::DataParallelTrainer(skipping, dptrain::Sag{}, table.worker()), "NonFinitePolicy::skip");
  refused(dptrain::DataParallelTrainer(options, dptrain::Saga{}, table.worker(), dptrain::BackupWorkers{}), "twice");
  refused(dptrain::DataParallelTrainer(options, dptrain::Saga{}, table.worker(), dptrain::LocalSgd{.period = 2}),
          "replica");
  refused(dptrain::DataParallelTrainer(options, dptrain::Sag{}, table.worker(), dptrain::BoundedStaleness{}), "stale");
  refused(dptrain::DataParallelTrainer(options, dptrain::Sag{}, table.worker(), dptrain::Hogwild{}), "state");
}
