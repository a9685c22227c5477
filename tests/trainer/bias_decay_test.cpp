// SPDX-License-Identifier: MIT
// Weight decay that leaves the biases alone: the trainer hands each thread's slice its part of the
// model's bias_ranges(), and training reaches the optimum of a penalty on the weights only.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Cholesky>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using Catch::Matchers::Contains;
using dptrain::Index;

namespace {

// 40 samples, 2 features, labels drawn from P(y = 1) = σ(1.5·x₀ − x₁ + 0.8): not separable, and the
// intercept matters.
dptrain::DenseDataset<double, dptrain::Label> bias_decay_logistic_data() {
  std::mt19937 rng(2024);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  dptrain::DenseDataset<double, dptrain::Label> data{dptrain::RowMatrix<double>(40, 2),
                                                     dptrain::Vector<dptrain::Label>(40)};
  for (Index i = 0; i < 40; ++i) {
    data.features(i, 0) = normal(rng);
    data.features(i, 1) = normal(rng);
    const double z = 1.5 * data.features(i, 0) - data.features(i, 1) + 0.8;
    data.targets[i] = uniform(rng) < 1.0 / (1.0 + std::exp(-z)) ? 1 : 0;
  }
  return data;
}

// The minimiser of F(w, b) = (1/n) Σ [log(1 + e^z) − y·z] + λ/2·‖w‖² (+ λ/2·b² when the intercept
// is penalised), z = wᵀx + b, by Newton's method on F written out here, in double.
dptrain::Vector<double> bias_decay_newton_optimum(const dptrain::DenseDataset<double, dptrain::Label>& data,
                                                  double lambda, bool penalise_intercept) {
  const Index n = data.size(), d = data.features.cols();
  dptrain::Vector<double> theta = dptrain::Vector<double>::Zero(d + 1);
  dptrain::Vector<double> penalty = dptrain::Vector<double>::Constant(d + 1, lambda);
  if (!penalise_intercept) penalty[d] = 0.0;
  for (int iteration = 0; iteration < 100; ++iteration) {
    dptrain::Vector<double> gradient = penalty.cwiseProduct(theta);
    Eigen::MatrixXd hessian = penalty.asDiagonal();
    for (Index i = 0; i < n; ++i) {
      dptrain::Vector<double> x(d + 1);
      x << data.features.row(i).transpose(), 1.0;
      const double p = 1.0 / (1.0 + std::exp(-x.dot(theta)));
      gradient += (p - static_cast<double>(data.targets[i])) / static_cast<double>(n) * x;
      hessian += p * (1.0 - p) / static_cast<double>(n) * x * x.transpose();
    }
    const dptrain::Vector<double> step = hessian.ldlt().solve(gradient);
    theta -= step;
    if (step.norm() < 1e-15) break;
  }
  return theta;
}

// Model without bias_ranges(): least squares through the origin, ℓ = ½(w·x − y)².
struct BiasDecayLineWithoutBiases {
  using scalar_type = double;
  using batch_type = dptrain::DenseBatch<double, double>;
  struct workspace_type {};
  Index num_parameters() const { return 1; }
  workspace_type make_workspace(Index) const { return {}; }
  double loss_and_gradient(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::VectorRef<double> g,
                           workspace_type& ws) const {
    g[0] += (b.features.col(0) * w[0] - b.targets).dot(b.features.col(0));
    return loss(w, b, ws);
  }
  double loss(dptrain::ConstVectorRef<double> w, const batch_type& b, workspace_type&) const {
    return 0.5 * (b.features.col(0) * w[0] - b.targets).squaredNorm();
  }
  void validate(const batch_type&) const {}
};
static_assert(dptrain::Model<BiasDecayLineWithoutBiases> && !dptrain::DeclaresBiases<BiasDecayLineWithoutBiases>);

// The same line, declaring the given ranges as its biases.
struct BiasDecayLineWithRanges : BiasDecayLineWithoutBiases {
  std::vector<dptrain::IndexRange> ranges;
  std::vector<dptrain::IndexRange> bias_ranges() const { return ranges; }
};
static_assert(dptrain::DeclaresBiases<BiasDecayLineWithRanges>);

}  // namespace

TEST_CASE("DataParallelTrainer: decay_biases = false reaches the optimum with an unpenalised intercept", "[trainer]") {
  const Index threads = GENERATE(1, 3);
  const bool nesterov = GENERATE(false, true);
  INFO(threads << " threads, " << (nesterov ? "Nesterov momentum" : "Sgd"));
  const auto data = bias_decay_logistic_data();
  const dptrain::LogisticRegression<double> model(2);
  const double lambda = 0.1;
  const dptrain::Vector<double> free_intercept = bias_decay_newton_optimum(data, lambda, false);
  const dptrain::Vector<double> penalised_intercept = bias_decay_newton_optimum(data, lambda, true);
  // The two optima differ, so the checks below tell the two penalties apart.
  REQUIRE(std::abs(free_intercept[2] - penalised_intercept[2]) > 0.05);

  const auto train = [&](bool decay_biases) {
    dptrain::Vector<double> theta = model.init_parameters();
    const dptrain::TrainerOptions options{.threads = threads, .batch_size = 40, .epochs = 1500};
    if (nesterov) {
      dptrain::DataParallelTrainer(
          options,
          dptrain::Momentum{
              .lr = 0.5, .momentum = 0.5, .nesterov = true, .weight_decay = lambda, .decay_biases = decay_biases})
          .fit(model, theta, data);
    } else {
      dptrain::DataParallelTrainer(options,
                                   dptrain::Sgd{.lr = 1.0, .weight_decay = lambda, .decay_biases = decay_biases})
          .fit(model, theta, data);
    }
    return theta;
  };
  const dptrain::Vector<double> undecayed = train(false);
  INFO("trained " << undecayed.transpose() << ", Newton " << free_intercept.transpose());
  CHECK((undecayed - free_intercept).cwiseAbs().maxCoeff() < 1e-6);
  const dptrain::Vector<double> decayed = train(true);
  INFO("trained " << decayed.transpose() << ", Newton " << penalised_intercept.transpose());
  CHECK((decayed - penalised_intercept).cwiseAbs().maxCoeff() < 1e-6);
}

TEST_CASE("DataParallelTrainer: each thread's slice gets its part of the biases", "[trainer]") {
  // Mlp({5, 7, 3}) in double: W₀ = θ[0, 35), b₀ = θ[35, 42), W₁ = θ[42, 63), b₁ = θ[63, 66). The
  // threads' slices are whole cache lines of 8 values, so with 2 and 4 threads a slice ends at
  // 40, inside b₀; with 3 at 48, between b₀ and b₁; 7 threads leave some slices empty.
  const Index threads = GENERATE(1, 2, 3, 4, 7);
  INFO(threads << " threads");
  const auto data = test::cluster_data<double>(50, 5, 3, 5);
  const dptrain::Mlp<double> model({5, 7, 3});
  const double lr = 0.1, lambda = 0.5;
  const Index steps = 6;
  // The bias mask from the layout in docs/models.md, written out here.
  dptrain::Vector<double> weight = dptrain::Vector<double>::Ones(66);
  weight.segment(35, 7).setZero();
  weight.segment(63, 3).setZero();
  REQUIRE(model.num_parameters() == 66);

  // The textbook loop: full batch, one update of all of θ with λ on the weights only.
  dptrain::Vector<double> start = model.init_parameters(4);
  start.segment(35, 7).setLinSpaced(0.1, 0.4);  // non-zero biases, so that their decay shows
  start.segment(63, 3).setLinSpaced(0.2, -0.3);
  dptrain::Vector<double> expected = start;
  auto ws = model.make_workspace(50);
  for (Index step = 0; step < steps; ++step) {
    dptrain::Vector<double> g = dptrain::Vector<double>::Zero(66);
    model.loss_and_gradient(expected, data.rows(0, 50), g, ws);
    g /= 50.0;
    expected -= lr * (g + lambda * weight.cwiseProduct(expected));
  }

  dptrain::Vector<double> theta = start;
  dptrain::DataParallelTrainer({.threads = threads, .batch_size = 50, .epochs = steps, .shuffle = false},
                               dptrain::Sgd{.lr = lr, .weight_decay = lambda, .decay_biases = false})
      .fit(model, theta, data);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
  // The same run decaying every element differs on every bias, so the check above can fail.
  dptrain::Vector<double> all = start;
  dptrain::DataParallelTrainer({.threads = threads, .batch_size = 50, .epochs = steps, .shuffle = false},
                               dptrain::Sgd{.lr = lr, .weight_decay = lambda})
      .fit(model, all, data);
  CHECK((all - theta).segment(35, 7).cwiseAbs().minCoeff() > 1e-4);
  CHECK((all - theta).segment(63, 3).cwiseAbs().minCoeff() > 1e-4);
}

TEST_CASE("DataParallelTrainer: decay_biases = false needs a model that declares its biases", "[trainer]") {
  dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>::Ones(8, 1), dptrain::Vector<double>::Ones(8)};
  dptrain::Vector<double> w = dptrain::Vector<double>::Zero(1);
  const BiasDecayLineWithoutBiases line;
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 4};
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Adam{.decay_biases = false}).fit(line, w, data),
                    Contains("dptrain::DataParallelTrainer: the optimizer's decay_biases is false, but the model "
                             "does not say which parameters are biases") &&
                        Contains("bias_ranges() const"));
  CHECK_THROWS_AS(dptrain::DataParallelTrainer(options, dptrain::AdamW{.decay_biases = false}).fit(line, w, data),
                  dptrain::invalid_argument);
  CHECK(w[0] == 0.0);  // nothing was trained
  // The default decays everything and needs nothing of the model.
  CHECK_NOTHROW(dptrain::DataParallelTrainer(options, dptrain::Adam{.weight_decay = 0.1}).fit(line, w, data));
}

TEST_CASE("DataParallelTrainer: bias_ranges() must be increasing, disjoint and within theta", "[trainer]") {
  dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>::Ones(8, 1), dptrain::Vector<double>::Ones(8)};
  dptrain::Vector<double> w = dptrain::Vector<double>::Zero(1);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 4};
  const dptrain::Sgd sgd{.lr = 0.1, .weight_decay = 0.1, .decay_biases = false};
  BiasDecayLineWithRanges line;
  line.ranges = {{0, 2}};
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, sgd).fit(line, w, data),
                    Contains("dptrain::DataParallelTrainer: the model's bias_ranges() must be increasing, disjoint "
                             "and within theta's 1 parameters, got [0, 2)"));
  line.ranges = {{0, 1}, {0, 1}};
  CHECK_THROWS_AS(dptrain::DataParallelTrainer(options, sgd).fit(line, w, data), dptrain::invalid_argument);
  line.ranges = {{-1, 1}};
  CHECK_THROWS_AS(dptrain::DataParallelTrainer(options, sgd).fit(line, w, data), dptrain::invalid_argument);
  // No bias at all is fine: then every element is decayed, w ← w − lr·(g + λw) from w = 0, g = −1.
  line.ranges = {};
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8, .epochs = 1}, sgd).fit(line, w, data);
  CHECK(w[0] == Approx(0.1));
}
