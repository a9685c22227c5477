// SPDX-License-Identifier: MIT
// Tests of LogisticRegression: closed-form losses and gradients, stability, accumulation, validation.
#include <catch2/catch.hpp>

#include <cmath>

#include "dptrain/models/logistic_regression.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::LogisticRegression;
using dptrain::RowMatrix;
using dptrain::Vector;
using dptrain::test::Tolerance;

static_assert(dptrain::Model<LogisticRegression<float>> && dptrain::Model<LogisticRegression<double>>);

template <class Scalar>
struct TinyLogisticProblem {
  RowMatrix<Scalar> x{{Scalar(1), Scalar(2)}, {Scalar(3), Scalar(-1)}, {Scalar(0), Scalar(1)}};
  Vector<Label> y{{1, 0, 1}};
  typename LogisticRegression<Scalar>::batch_type batch() const { return {x, y}; }
};

}  // namespace

TEMPLATE_TEST_CASE("LogisticRegression: sizes and zero initial parameters", "[models]", float, double) {
  const LogisticRegression<TestType> model(3);
  CHECK(model.inputs() == 3);
  CHECK(model.num_parameters() == 4);
  CHECK(model.init_parameters(9) == Vector<TestType>::Zero(4));
}

TEMPLATE_TEST_CASE("LogisticRegression: at theta = 0 the loss is n log 2", "[models]", float, double) {
  const LogisticRegression<TestType> model(2);
  const TinyLogisticProblem<TestType> p;
  TestType loss = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, model.init_parameters(), p.batch(), &loss);
  CHECK(loss == Approx(3 * std::log(2.0)).epsilon(Tolerance<TestType>::relative));
  // ∇ = Σ (½ − yᵢ) [xᵢ; 1] = −½ [1, 2, 1] + ½ [3, −1, 1] − ½ [0, 1, 1]
  CHECK(grad == Vector<TestType>{{TestType(1), TestType(-2), TestType(-0.5)}});
}

TEMPLATE_TEST_CASE("LogisticRegression: loss and gradient at a hand-computed theta", "[models]", float, double) {
  const LogisticRegression<TestType> model(2);
  const TinyLogisticProblem<TestType> p;
  const Vector<TestType> theta{{TestType(0.5), TestType(-0.25), TestType(0.125)}};
  const double z[3] = {0.5 - 0.5 + 0.125, 1.5 + 0.25 + 0.125, -0.25 + 0.125};
  const double y[3] = {1, 0, 1};
  double loss = 0, gw0 = 0, gw1 = 0, gb = 0;
  for (int i = 0; i < 3; ++i) {
    loss += std::log1p(std::exp(z[i])) - y[i] * z[i];
    const double r = 1 / (1 + std::exp(-z[i])) - y[i];
    gw0 += r * static_cast<double>(p.x(i, 0));
    gw1 += r * static_cast<double>(p.x(i, 1));
    gb += r;
  }
  TestType got = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, theta, p.batch(), &got);
  const double tol = Tolerance<TestType>::relative;
  CHECK(got == Approx(loss).epsilon(tol));
  CHECK(grad[0] == Approx(gw0).epsilon(tol));
  CHECK(grad[1] == Approx(gw1).epsilon(tol));
  CHECK(grad[2] == Approx(gb).epsilon(tol));
}

TEMPLATE_TEST_CASE("LogisticRegression: large scores give finite, exact losses", "[models]", float, double) {
  const LogisticRegression<TestType> model(1);
  const RowMatrix<TestType> x = RowMatrix<TestType>::Zero(1, 1);
  const Vector<Label> zero{{0}}, one{{1}};
  auto ws = model.make_workspace(1);
  for (const TestType b : {TestType(100), TestType(-100)}) {
    const Vector<TestType> theta{{TestType(0), b}};
    Vector<TestType> grad = Vector<TestType>::Zero(2);
    // The label that disagrees with the sign of z costs |z|; the one that agrees costs ~e^{−|z|}.
    const Vector<Label>& wrong = b > 0 ? zero : one;
    const Vector<Label>& right = b > 0 ? one : zero;
    CHECK(model.loss_and_gradient(theta, {x, wrong}, grad, ws) == TestType(100));
    CHECK(grad[1] == (b > 0 ? TestType(1) : TestType(-1)));
    grad.setZero();
    const TestType small = model.loss_and_gradient(theta, {x, right}, grad, ws);
    CHECK(small >= TestType(0));
    CHECK(small < TestType(1e-30));
    CHECK(std::abs(grad[1]) < TestType(1e-30));
  }
}

TEMPLATE_TEST_CASE("LogisticRegression: the gradient matches finite differences", "[models]", float, double) {
  const LogisticRegression<TestType> model(6);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(10, 6, 41);
  const Vector<Label> y = dptrain::test::random_labels(10, 2, 42);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(7, 0.5, 43);
  dptrain::test::require_gradient_check_passes(model, theta, {x, y});
}

TEMPLATE_TEST_CASE("LogisticRegression: loss_and_gradient adds into grad and agrees with loss", "[models]", float,
                   double) {
  const LogisticRegression<TestType> model(4);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(6, 4, 51);
  const Vector<Label> y = dptrain::test::random_labels(6, 2, 52);
  dptrain::test::require_adds_into_gradient(model, dptrain::test::random_vector<TestType>(5, 1.0, 53), {x, y});
}

TEMPLATE_TEST_CASE("LogisticRegression: an empty batch is a no-op", "[models]", float, double) {
  const LogisticRegression<TestType> model(3);
  dptrain::test::require_empty_batch_is_noop(model, dptrain::test::random_vector<TestType>(4, 1.0, 61));
}

TEMPLATE_TEST_CASE("LogisticRegression: bad calls throw invalid_argument", "[models]", float, double) {
  const LogisticRegression<TestType> model(2);
  const TinyLogisticProblem<TestType> p;
  dptrain::test::require_bad_calls_throw(model, model.init_parameters(), p.batch());
}

TEMPLATE_TEST_CASE("LogisticRegression: validate names a wrong feature count and a label other than 0 or 1", "[models]",
                   float, double) {
  const LogisticRegression<TestType> model(2);
  const TinyLogisticProblem<TestType> p;
  CHECK_NOTHROW(model.validate(p.batch()));

  const RowMatrix<TestType> narrow = RowMatrix<TestType>::Zero(3, 1);
  CHECK_THROWS_AS(model.validate({narrow, p.y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate({narrow, p.y}),
                    "dptrain::LogisticRegression: expects 2 features per sample, the data have 1");

  for (const Label bad : {2, -1}) {
    Vector<Label> y = p.y;
    y[2] = bad;
    CHECK_THROWS_AS(model.validate({p.x, y}), dptrain::invalid_argument);
    CHECK_THROWS_WITH(model.validate({p.x, y}), "dptrain::LogisticRegression: label " + std::to_string(bad) +
                                                    " in row 2 is out of range, expected 0 <= label < 2");
  }
}

TEST_CASE("LogisticRegression: the constructor rejects fewer than one input", "[models]") {
  CHECK_THROWS_AS(LogisticRegression<float>(0), dptrain::invalid_argument);
  CHECK_THROWS_WITH(LogisticRegression<double>(0),
                    Catch::Contains("dptrain::LogisticRegression: inputs must be at least 1, got 0"));
}

TEMPLATE_TEST_CASE("LogisticRegression: predict is 1 exactly where the score is positive", "[models]", float, double) {
  const LogisticRegression<TestType> model(2);
  const TinyLogisticProblem<TestType> p;
  auto ws = model.make_workspace(3);
  Vector<Label> out(3);
  // z = (0.125, 1.875, −0.125)
  model.predict(Vector<TestType>{{TestType(0.5), TestType(-0.25), TestType(0.125)}}, p.batch(), out, ws);
  CHECK(out == Vector<Label>{{1, 1, 0}});
  model.predict(model.init_parameters(), p.batch(), out, ws);  // z = 0: σ = ½, not above
  CHECK(out == Vector<Label>{{0, 0, 0}});
  Vector<Label> wrong(2);
  CHECK_THROWS_WITH(model.predict(model.init_parameters(), p.batch(), wrong, ws),
                    Catch::Contains("the output has 2 entries"));
  static_assert(dptrain::Predictor<LogisticRegression<TestType>>);
}

TEMPLATE_TEST_CASE("LogisticRegression: bias_ranges is the intercept theta[d]", "[models]", float, double) {
  const LogisticRegression<TestType> model(3);
  static_assert(dptrain::DeclaresBiases<LogisticRegression<TestType>>);
  CHECK(model.bias_ranges() == std::vector<dptrain::IndexRange>{{3, 1}});
  const RowMatrix<TestType> x = RowMatrix<TestType>::Zero(5, 3);
  const Vector<Label> y = dptrain::test::random_labels(5, 2, 23);
  dptrain::test::require_biases_are_the_intercepts(model, dptrain::test::random_vector<TestType>(4, 1.0, 24), {x, y});
}
