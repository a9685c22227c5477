// SPDX-License-Identifier: MIT
// Tests of gradient_check: it passes correct models (ours and a user's) and fails wrong ones.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "dptrain/models/gradient_check.hpp"
#include "dptrain/models/linear_regression.hpp"
#include "dptrain/models/softmax_regression.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::GradientCheckOptions;
using dptrain::GradientCheckResult;
using dptrain::Index;
using dptrain::Label;
using dptrain::RowMatrix;
using dptrain::Vector;
using dptrain::test::Tolerance;

// A model written by a user, as in docs/models.md ("Writing your own model"): Poisson regression
// with a log link, ℓ = e^{wᵀx} − y·wᵀx, for count targets y ≥ 0.
template <class Scalar>
class PoissonRegression {
 public:
  using scalar_type = Scalar;
  using batch_type = dptrain::DenseBatch<Scalar, Scalar>;
  struct Workspace {
    dptrain::Vector<Scalar> eta;  // wᵀx for each row
  };
  using workspace_type = Workspace;

  explicit PoissonRegression(dptrain::Index inputs) : inputs_(inputs) {}

  dptrain::Index num_parameters() const { return inputs_; }

  Workspace make_workspace(dptrain::Index max_rows) const { return {dptrain::Vector<Scalar>(max_rows)}; }

  Scalar loss_and_gradient(dptrain::ConstVectorRef<Scalar> theta, const batch_type& batch,
                           dptrain::VectorRef<Scalar> grad, Workspace& ws) const {
    Eigen::Map<dptrain::Vector<Scalar>> eta(ws.eta.data(), batch.size());
    eta.noalias() = batch.features * theta;
    const Scalar loss = eta.array().exp().sum() - batch.targets.dot(eta);
    eta = eta.array().exp().matrix() - batch.targets;  // ∂ℓ/∂η = e^η − y
    grad.noalias() += batch.features.transpose() * eta;
    return loss;
  }

  Scalar loss(dptrain::ConstVectorRef<Scalar> theta, const batch_type& batch, Workspace& ws) const {
    Eigen::Map<dptrain::Vector<Scalar>> eta(ws.eta.data(), batch.size());
    eta.noalias() = batch.features * theta;
    return eta.array().exp().sum() - batch.targets.dot(eta);
  }

  void validate(const batch_type& all) const {
    if (all.features.cols() != inputs_)
      throw dptrain::invalid_argument("PoissonRegression expects " + std::to_string(inputs_) + " features");
    if ((all.targets.array() < Scalar(0)).any())
      throw dptrain::invalid_argument("PoissonRegression needs counts, y >= 0");
  }

 private:
  dptrain::Index inputs_;
};

static_assert(dptrain::Model<PoissonRegression<float>> && dptrain::Model<PoissonRegression<double>>);

// Forwards everything to a correct model, but adds `delta` to one coordinate of the gradient,
// and, if `loss_shift` is set, to the loss that loss_and_gradient returns.
template <class Inner>
struct WrongModel {
  using scalar_type = typename Inner::scalar_type;
  using batch_type = typename Inner::batch_type;
  using workspace_type = typename Inner::workspace_type;

  Inner inner;
  Index coordinate = 0;
  double delta = 0;
  double loss_shift = 0;

  Index num_parameters() const { return inner.num_parameters(); }
  workspace_type make_workspace(Index rows) const { return inner.make_workspace(rows); }
  scalar_type loss_and_gradient(dptrain::ConstVectorRef<scalar_type> theta, const batch_type& batch,
                                dptrain::VectorRef<scalar_type> grad, workspace_type& ws) const {
    const scalar_type loss = inner.loss_and_gradient(theta, batch, grad, ws);
    grad[coordinate] += static_cast<scalar_type>(delta);
    return loss + static_cast<scalar_type>(loss_shift);
  }
  scalar_type loss(dptrain::ConstVectorRef<scalar_type> theta, const batch_type& batch, workspace_type& ws) const {
    return inner.loss(theta, batch, ws);
  }
  void validate(const batch_type& all) const { inner.validate(all); }
};

static_assert(dptrain::Model<WrongModel<dptrain::SoftmaxRegression<float>>>);

template <class Scalar>
struct SoftmaxProblem {
  dptrain::SoftmaxRegression<Scalar> model{5, 3};
  RowMatrix<Scalar> x = dptrain::test::random_features<Scalar>(8, 5, 201);
  Vector<Label> y = dptrain::test::random_labels(8, 3, 202);
  Vector<Scalar> theta = dptrain::test::random_vector<Scalar>(18, 0.5, 203);
  typename dptrain::SoftmaxRegression<Scalar>::batch_type batch() const { return {x, y}; }
};

}  // namespace

TEMPLATE_TEST_CASE("gradient_check: a user-written model passes", "[models]", float, double) {
  const PoissonRegression<TestType> model(4);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(8, 4, 211);
  Vector<TestType> y(8);
  for (Index i = 0; i < 8; ++i) y[i] = static_cast<TestType>(i % 4);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(4, 0.3, 212);
  dptrain::test::require_gradient_check_passes(model, theta, {x, y});
}

TEMPLATE_TEST_CASE("gradient_check: a wrong gradient coordinate fails and is named", "[models]", float, double) {
  const SoftmaxProblem<TestType> p;
  REQUIRE(dptrain::gradient_check(p.model, p.theta, p.batch()).passed);
  for (const Index coordinate : {Index{0}, Index{7}, Index{17}}) {
    const WrongModel<dptrain::SoftmaxRegression<TestType>> wrong{p.model, coordinate, 0.1, 0};
    const GradientCheckResult r = dptrain::gradient_check(wrong, p.theta, p.batch());
    INFO("coordinate " << coordinate << ": rel error " << r.max_rel_error);
    CHECK_FALSE(r.passed);
    CHECK(r.worst_index == coordinate);
    CHECK(r.analytic - r.numeric == Approx(0.1).epsilon(0.05));
    CHECK(r.max_abs_error == Approx(0.1).epsilon(0.05));
    CHECK(r.max_rel_error > Tolerance<TestType>::gradient_check);
  }
}

TEMPLATE_TEST_CASE("gradient_check: a loss_and_gradient loss that disagrees with loss fails", "[models]", float,
                   double) {
  const SoftmaxProblem<TestType> p;
  const WrongModel<dptrain::SoftmaxRegression<TestType>> wrong{p.model, 0, 0, 0.5};
  const GradientCheckResult r = dptrain::gradient_check(wrong, p.theta, p.batch());
  CHECK(r.max_rel_error <= Tolerance<TestType>::gradient_check);  // the gradient itself is right
  CHECK(r.loss_rel_error > Tolerance<TestType>::gradient_check);
  CHECK_FALSE(r.passed);
}

TEST_CASE("gradient_check: a non-finite gradient fails", "[models]") {
  const SoftmaxProblem<double> p;
  const WrongModel<dptrain::SoftmaxRegression<double>> wrong{p.model, 4, std::numeric_limits<double>::quiet_NaN(), 0};
  const GradientCheckResult r = dptrain::gradient_check(wrong, p.theta, p.batch());
  CHECK_FALSE(r.passed);
  CHECK(r.worst_index == 4);
}

TEMPLATE_TEST_CASE("gradient_check: defaults depend on the scalar, options override them", "[models]", float, double) {
  const SoftmaxProblem<TestType> p;
  const GradientCheckResult defaults = dptrain::gradient_check(p.model, p.theta, p.batch());
  CHECK(defaults.tolerance == Tolerance<TestType>::gradient_check);
  CHECK(defaults.coordinates == 18);
  CHECK(defaults.passed);

  const GradientCheckResult strict = dptrain::gradient_check(p.model, p.theta, p.batch(), {.tolerance = 1e-30});
  CHECK(strict.tolerance == 1e-30);
  CHECK_FALSE(strict.passed);  // finite differences are never that exact

  // A huge step makes the central difference of a curved loss visibly wrong.
  const GradientCheckResult coarse = dptrain::gradient_check(p.model, p.theta, p.batch(), {.epsilon = 2.0});
  CHECK_FALSE(coarse.passed);

  const GradientCheckResult one = dptrain::gradient_check(p.model, p.theta, p.batch(), {.max_coordinates = 1});
  CHECK(one.coordinates == 1);
  CHECK(one.worst_index == 0);
}

TEMPLATE_TEST_CASE("gradient_check: long parameter vectors are checked on an evenly spaced subset", "[models]", float,
                   double) {
  const dptrain::SoftmaxRegression<TestType> model(784, 10);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(3, 784, 221);
  const Vector<Label> y{{3, 0, 9}};
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(7850, 0.01, 222);
  const GradientCheckResult r = dptrain::gradient_check(model, theta, {x, y});
  CHECK(r.coordinates == 2000);
  CHECK(r.passed);

  // The subset reaches the end of θ: a wrong last bias is found among 3 checked coordinates
  // (0, 2616 and 5233 are checked; 7849 is not) only when it is checked; with 7850 it is.
  const WrongModel<dptrain::SoftmaxRegression<TestType>> wrong{model, 7849, 0.5, 0};
  CHECK(dptrain::gradient_check(wrong, theta, {x, y}, {.max_coordinates = 3}).passed);
  const GradientCheckResult all = dptrain::gradient_check(wrong, theta, {x, y}, {.max_coordinates = 7850});
  CHECK_FALSE(all.passed);
  CHECK(all.worst_index == 7849);
}

TEST_CASE("gradient_check: rejects a theta of the wrong length and max_coordinates < 1", "[models]") {
  const dptrain::LinearRegression<double> model(3);
  const RowMatrix<double> x = dptrain::test::random_features<double>(2, 3, 231);
  const Vector<double> y = Vector<double>::Ones(2);
  CHECK_THROWS_AS(dptrain::gradient_check(model, Vector<double>::Zero(3), {x, y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(dptrain::gradient_check(model, Vector<double>::Zero(3), {x, y}),
                    Catch::Contains("the model has 4 parameters, theta has 3"));
  CHECK_THROWS_WITH(dptrain::gradient_check(model, Vector<double>::Zero(4), {x, y}, {.max_coordinates = 0}),
                    Catch::Contains("max_coordinates must be at least 1"));
}
