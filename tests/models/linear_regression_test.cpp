// SPDX-License-Identifier: MIT
// Tests of LinearRegression: closed-form losses and gradients, accumulation, validation.
#include <catch2/catch.hpp>

#include <limits>

#include "dptrain/models/linear_regression.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::LinearRegression;
using dptrain::RowMatrix;
using dptrain::Vector;
using dptrain::test::Tolerance;

static_assert(dptrain::Model<LinearRegression<float>> && dptrain::Model<LinearRegression<double>>);

// Two samples, two features: every value below is exact in float.
template <class Scalar>
struct TinyLinearProblem {
  RowMatrix<Scalar> x{{Scalar(1), Scalar(2)}, {Scalar(3), Scalar(-1)}};
  Vector<Scalar> y{{Scalar(1), Scalar(-2)}};
  typename LinearRegression<Scalar>::batch_type batch() const { return {x, y}; }
};

}  // namespace

TEMPLATE_TEST_CASE("LinearRegression: sizes and zero initial parameters", "[models]", float, double) {
  const LinearRegression<TestType> model(7);
  CHECK(model.inputs() == 7);
  CHECK(model.num_parameters() == 8);
  CHECK(model.init_parameters() == Vector<TestType>::Zero(8));
  CHECK(model.init_parameters(123) == Vector<TestType>::Zero(8));
}

TEMPLATE_TEST_CASE("LinearRegression: at theta = 0 the loss is half the sum of squared targets", "[models]", float,
                   double) {
  const LinearRegression<TestType> model(2);
  const TinyLinearProblem<TestType> p;
  TestType loss = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, model.init_parameters(), p.batch(), &loss);
  CHECK(loss == TestType(2.5));  // ½ (1² + 2²)
  // ∇ = Σ (0 − yᵢ) [xᵢ; 1] = −1·[1, 2, 1] + 2·[3, −1, 1]
  CHECK(grad == Vector<TestType>{{TestType(5), TestType(-4), TestType(1)}});
}

TEMPLATE_TEST_CASE("LinearRegression: loss and gradient at a hand-computed theta", "[models]", float, double) {
  const LinearRegression<TestType> model(2);
  const TinyLinearProblem<TestType> p;
  const Vector<TestType> theta{{TestType(0.5), TestType(-1), TestType(0.25)}};  // w = (0.5, −1), b = 0.25
  TestType loss = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, theta, p.batch(), &loss);
  // residuals: 0.5 − 2 + 0.25 − 1 = −2.25 and 1.5 + 1 + 0.25 + 2 = 4.75
  CHECK(loss == TestType(13.8125));  // ½ (2.25² + 4.75²)
  CHECK(grad == Vector<TestType>{{TestType(12), TestType(-9.25), TestType(2.5)}});
}

TEMPLATE_TEST_CASE("LinearRegression: the gradient matches finite differences", "[models]", float, double) {
  const LinearRegression<TestType> model(5);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(9, 5, 11);
  const Vector<TestType> y = dptrain::test::random_vector<TestType>(9, 2.0, 12);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(6, 0.5, 13);
  dptrain::test::require_gradient_check_passes(model, theta, {x, y});
}

TEMPLATE_TEST_CASE("LinearRegression: loss_and_gradient adds into grad and agrees with loss", "[models]", float,
                   double) {
  const LinearRegression<TestType> model(4);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(6, 4, 21);
  const Vector<TestType> y = dptrain::test::random_vector<TestType>(6, 1.0, 22);
  dptrain::test::require_adds_into_gradient(model, dptrain::test::random_vector<TestType>(5, 1.0, 23), {x, y});
}

TEMPLATE_TEST_CASE("LinearRegression: an empty batch is a no-op", "[models]", float, double) {
  const LinearRegression<TestType> model(3);
  dptrain::test::require_empty_batch_is_noop(model, dptrain::test::random_vector<TestType>(4, 1.0, 31));
}

TEMPLATE_TEST_CASE("LinearRegression: bad calls throw invalid_argument", "[models]", float, double) {
  const LinearRegression<TestType> model(2);
  const TinyLinearProblem<TestType> p;
  dptrain::test::require_bad_calls_throw(model, model.init_parameters(), p.batch());
}

TEMPLATE_TEST_CASE("LinearRegression: validate names a wrong feature count and a non-finite target", "[models]", float,
                   double) {
  const LinearRegression<TestType> model(2);
  const TinyLinearProblem<TestType> p;
  CHECK_NOTHROW(model.validate(p.batch()));

  const RowMatrix<TestType> wide = RowMatrix<TestType>::Zero(2, 3);
  CHECK_THROWS_AS(model.validate({wide, p.y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate({wide, p.y}),
                    "dptrain::LinearRegression: expects 2 features per sample, the data have 3");

  Vector<TestType> y = p.y;
  y[1] = std::numeric_limits<TestType>::quiet_NaN();
  CHECK_THROWS_AS(model.validate({p.x, y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate({p.x, y}), Catch::Contains("row 1") && Catch::Contains("nan"));
  y[1] = std::numeric_limits<TestType>::infinity();
  CHECK_THROWS_WITH(model.validate({p.x, y}), Catch::Contains("row 1") && Catch::Contains("inf"));

  RowMatrix<TestType> x = p.x;
  x(0, 1) = -std::numeric_limits<TestType>::infinity();
  CHECK_THROWS_WITH(model.validate({x, p.y}), Catch::Contains("feature 1 of row 0") && Catch::Contains("-inf"));
  x(0, 1) = std::numeric_limits<TestType>::quiet_NaN();
  CHECK_THROWS_WITH(model.validate({x, p.y}), Catch::Contains("feature 1 of row 0") && Catch::Contains("nan"));
  // The last value of a matrix wider than any SIMD register, past every full packet.
  const dptrain::LinearRegression<TestType> wide_model(53);
  RowMatrix<TestType> big = RowMatrix<TestType>::Ones(37, 53);
  const Vector<TestType> zeros = Vector<TestType>::Zero(37);
  CHECK_NOTHROW(wide_model.validate({big, zeros}));
  big(36, 52) = std::numeric_limits<TestType>::infinity();
  CHECK_THROWS_WITH(wide_model.validate({big, zeros}), Catch::Contains("feature 52 of row 36"));

  const Vector<TestType> three{{TestType(1), TestType(2), TestType(3)}};
  CHECK_THROWS_WITH(model.validate({p.x, three}), Catch::Contains("2 feature rows but 3 targets"));
}

TEST_CASE("LinearRegression: the constructor rejects fewer than one input", "[models]") {
  CHECK_THROWS_AS(LinearRegression<double>(0), dptrain::invalid_argument);
  CHECK_THROWS_WITH(LinearRegression<float>(-3), Catch::Contains("-3"));
}

TEMPLATE_TEST_CASE("LinearRegression: predict writes w dot x plus b for each row", "[models]", float, double) {
  const LinearRegression<TestType> model(2);
  const TinyLinearProblem<TestType> p;
  const Vector<TestType> theta{{TestType(0.5), TestType(-1), TestType(0.25)}};
  auto ws = model.make_workspace(2);
  Vector<TestType> out(2);
  model.predict(theta, p.batch(), out, ws);
  CHECK(out == Vector<TestType>{{TestType(-1.25), TestType(2.75)}});  // 0.5 − 2 + 0.25, 1.5 + 1 + 0.25
  Vector<TestType> wrong(3);
  CHECK_THROWS_WITH(model.predict(theta, p.batch(), wrong, ws), Catch::Contains("the output has 3 entries"));
  auto small = model.make_workspace(1);
  CHECK_THROWS_WITH(model.predict(theta, p.batch(), out, small), Catch::Contains("the batch has 2 rows"));
  static_assert(dptrain::Predictor<LinearRegression<TestType>>);
}

TEMPLATE_TEST_CASE("LinearRegression: bias_ranges is the intercept theta[d]", "[models]", float, double) {
  const LinearRegression<TestType> model(3);
  static_assert(dptrain::DeclaresBiases<LinearRegression<TestType>>);
  CHECK(model.bias_ranges() == std::vector<dptrain::IndexRange>{{3, 1}});
  const RowMatrix<TestType> x = RowMatrix<TestType>::Zero(5, 3);
  const Vector<TestType> y = dptrain::test::random_vector<TestType>(5, 2.0, 21);
  dptrain::test::require_biases_are_the_intercepts(model, dptrain::test::random_vector<TestType>(4, 1.0, 22), {x, y});
}
