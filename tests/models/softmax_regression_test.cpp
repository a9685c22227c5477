// SPDX-License-Identifier: MIT
// Tests of SoftmaxRegression: closed-form and naive-reference oracles, stability, validation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dptrain/models/softmax_regression.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::RowMatrix;
using dptrain::SoftmaxRegression;
using dptrain::Vector;
using dptrain::test::Tolerance;

static_assert(dptrain::Model<SoftmaxRegression<float>> && dptrain::Model<SoftmaxRegression<double>>);

template <class Scalar>
struct TinySoftmaxProblem {
  RowMatrix<Scalar> x{{Scalar(1), Scalar(2)}, {Scalar(3), Scalar(-1)}, {Scalar(0), Scalar(1)}};
  Vector<Label> y{{0, 3, 3}};
  typename SoftmaxRegression<Scalar>::batch_type batch() const { return {x, y}; }
};

// Loss and gradient by the definition, in double, with θ[i·k + c] = W(i, c) and θ[d·k + c] = b_c.
template <class Scalar>
double reference(const RowMatrix<Scalar>& x, const Vector<Label>& y, const Vector<Scalar>& theta, Index k,
                 std::vector<double>& grad) {
  const Index d = x.cols();
  grad.assign(static_cast<std::size_t>((d + 1) * k), 0.0);
  double loss = 0;
  for (Index i = 0; i < x.rows(); ++i) {
    std::vector<double> z(static_cast<std::size_t>(k));
    for (Index c = 0; c < k; ++c) {
      double s = static_cast<double>(theta[d * k + c]);
      for (Index f = 0; f < d; ++f) s += static_cast<double>(x(i, f)) * static_cast<double>(theta[f * k + c]);
      z[static_cast<std::size_t>(c)] = s;
    }
    double sum = 0;
    for (const double v : z) sum += std::exp(v);
    loss += std::log(sum) - z[static_cast<std::size_t>(y[i])];
    for (Index c = 0; c < k; ++c) {
      const double r = std::exp(z[static_cast<std::size_t>(c)]) / sum - (c == y[i] ? 1.0 : 0.0);
      for (Index f = 0; f < d; ++f) grad[static_cast<std::size_t>(f * k + c)] += r * static_cast<double>(x(i, f));
      grad[static_cast<std::size_t>(d * k + c)] += r;
    }
  }
  return loss;
}

}  // namespace

TEMPLATE_TEST_CASE("SoftmaxRegression: sizes and zero initial parameters", "[models]", float, double) {
  const SoftmaxRegression<TestType> model(784, 10);
  CHECK(model.inputs() == 784);
  CHECK(model.classes() == 10);
  CHECK(model.num_parameters() == 7850);
  CHECK(model.init_parameters(5) == Vector<TestType>::Zero(7850));
}

TEMPLATE_TEST_CASE("SoftmaxRegression: at theta = 0 the loss is n log k", "[models]", float, double) {
  const SoftmaxRegression<TestType> model(2, 4);
  const TinySoftmaxProblem<TestType> p;
  TestType loss = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, model.init_parameters(), p.batch(), &loss);
  CHECK(loss == Approx(3 * std::log(4.0)).epsilon(Tolerance<TestType>::relative));
  // ∇W(f, c) = Σᵢ xᵢ_f (¼ − [c = yᵢ]), ∇b_c = Σᵢ (¼ − [c = yᵢ]); W is stored row-major.
  const Vector<TestType> expected{{0, 1, 1, -2, -1.5, 0.5, 0.5, 0.5, -0.25, 0.75, 0.75, -1.25}};
  CHECK(grad == expected);
}

TEMPLATE_TEST_CASE("SoftmaxRegression: loss and gradient match a naive reference", "[models]", float, double) {
  const Index d = 7, k = 5, m = 12;
  const SoftmaxRegression<TestType> model(d, k);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(m, d, 71);
  const Vector<Label> y = dptrain::test::random_labels(m, k, 72);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(model.num_parameters(), 1.0, 73);
  std::vector<double> expected;
  const double expected_loss = reference(x, y, theta, k, expected);
  TestType loss = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, theta, {x, y}, &loss);
  const double tol = 10 * Tolerance<TestType>::relative;
  CHECK(loss == Approx(expected_loss).epsilon(tol));
  for (Index i = 0; i < model.num_parameters(); ++i) {
    INFO("coordinate " << i);
    CHECK(grad[i] == Approx(expected[static_cast<std::size_t>(i)]).epsilon(tol).margin(tol));
  }
}

// Every class count the narrow kernels dispatch on (and a few past them, on the GEMM), with
// feature counts that leave a partial vector or fill none, and row counts around the tile and
// block sizes (784 features make a block of 41 float rows).
TEMPLATE_TEST_CASE("SoftmaxRegression: every class count and shape matches the naive reference", "[models]", float,
                   double) {
  const std::vector<Index> feature_counts{1, 5, 16, 37, 784};
  const std::vector<Index> row_counts{1, 2, 5, 43, 90};
  std::uint32_t seed = 100;
  for (Index k = 2; k <= dptrain::detail::narrow::max_columns + 3; ++k)
    for (const Index d : feature_counts)
      for (const Index m : row_counts) {
        if (d == 784 && m != 90 && k != 10) continue;  // the wide rows once per class count are enough
        const SoftmaxRegression<TestType> model(d, k);
        const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(m, d, ++seed);
        const Vector<Label> y = dptrain::test::random_labels(m, k, ++seed);
        const Vector<TestType> theta = dptrain::test::random_vector<TestType>(model.num_parameters(), 0.3, ++seed);
        std::vector<double> expected;
        const double expected_loss = reference(x, y, theta, k, expected);
        TestType loss = 0;
        const Vector<TestType> grad = dptrain::test::summed_gradient(model, theta, {x, y}, &loss);
        auto ws = model.make_workspace(m);
        INFO("k = " << k << ", d = " << d << ", m = " << m);
        const double tol = (d == 784 ? 100 : 10) * Tolerance<TestType>::relative;
        CHECK(loss == Approx(expected_loss).epsilon(tol));
        CHECK(model.loss(theta, {x, y}, ws) == Approx(expected_loss).epsilon(tol));
        double worst = 0;
        for (Index i = 0; i < model.num_parameters(); ++i) {
          const double e = expected[static_cast<std::size_t>(i)];
          worst = std::max(worst, std::abs(static_cast<double>(grad[i]) - e) / (1 + std::abs(e)));
        }
        CHECK(worst < tol);
      }
}

TEMPLATE_TEST_CASE("SoftmaxRegression: rows viewed inside wider rows give the contiguous rows' results", "[models]",
                   float, double) {
  const Index d = 37, m = 43;
  for (const Index k : {Index{10}, dptrain::detail::narrow::max_columns + 1}) {  // narrow kernels, then GEMM
    const SoftmaxRegression<TestType> model(d, k);
    const RowMatrix<TestType> wide = dptrain::test::random_features<TestType>(m, d + 5, 91);
    const RowMatrix<TestType> x = wide.leftCols(d);
    const Vector<Label> y = dptrain::test::random_labels(m, k, 92);
    const Vector<TestType> theta = dptrain::test::random_vector<TestType>(model.num_parameters(), 0.3, 93);
    TestType loss_view = 0, loss_copy = 0;
    const Vector<TestType> view = dptrain::test::summed_gradient(model, theta, {wide.leftCols(d), y}, &loss_view);
    const Vector<TestType> copy = dptrain::test::summed_gradient(model, theta, {x, y}, &loss_copy);
    INFO("k = " << k);
    CHECK(loss_view == Approx(loss_copy).epsilon(Tolerance<TestType>::relative));
    CHECK(view.isApprox(copy, static_cast<TestType>(Tolerance<TestType>::relative)));
  }
}

TEST_CASE("SoftmaxRegression: a workspace made by a model of another shape is refused", "[models]") {
  const SoftmaxRegression<float> model(20, 5), other(10, 5);
  const RowMatrix<float> x = dptrain::test::random_features<float>(4, 20, 94);
  const Vector<Label> y = dptrain::test::random_labels(4, 5, 95);
  auto ws = other.make_workspace(4);
  Vector<float> grad = Vector<float>::Zero(model.num_parameters());
  Vector<Label> out(4);
  const Vector<float> theta = model.init_parameters();
  CHECK_THROWS_AS(model.loss_and_gradient(theta, {x, y}, grad, ws), dptrain::invalid_argument);
  CHECK_THROWS_AS(model.loss(theta, {x, y}, ws), dptrain::invalid_argument);
  CHECK_THROWS_AS(model.predict(theta, {x, y}, out, ws), dptrain::invalid_argument);
}

TEMPLATE_TEST_CASE("SoftmaxRegression: huge scores give finite, exact losses", "[models]", float, double) {
  const SoftmaxRegression<TestType> model(1, 3);
  const RowMatrix<TestType> x{{TestType(1)}, {TestType(1)}};
  const Vector<Label> y{{0, 1}};
  // z = (1000, 0, −1000) for both rows: e^1000 overflows without the max subtraction.
  const Vector<TestType> theta{
      {TestType(500), TestType(0), TestType(-500), TestType(500), TestType(0), TestType(-500)}};
  TestType loss = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, theta, {x, y}, &loss);
  CHECK(loss == TestType(1000));  // row 0 costs ~e^{−1000} = 0, row 1 costs 1000
  // p = (1, 0, 0) for both rows: ∇b = (p − e₀) + (p − e₁) = (0, 0, 0) + (1, −1, 0)
  // (Eigen's vectorised exp clamps its argument, so e^{−2000} comes out as ~1e-308, not 0.)
  CHECK(grad[3] == TestType(1));
  CHECK(grad[4] == TestType(-1));
  CHECK(std::abs(grad[5]) < TestType(1e-30));
  CHECK(grad.allFinite());
}

TEMPLATE_TEST_CASE("SoftmaxRegression: the gradient matches finite differences", "[models]", float, double) {
  const SoftmaxRegression<TestType> model(5, 4);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(8, 5, 81);
  const Vector<Label> y = dptrain::test::random_labels(8, 4, 82);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(model.num_parameters(), 0.5, 83);
  dptrain::test::require_gradient_check_passes(model, theta, {x, y});
}

TEMPLATE_TEST_CASE("SoftmaxRegression: loss_and_gradient adds into grad and agrees with loss", "[models]", float,
                   double) {
  const SoftmaxRegression<TestType> model(4, 3);
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(6, 4, 91);
  const Vector<Label> y = dptrain::test::random_labels(6, 3, 92);
  dptrain::test::require_adds_into_gradient(model, dptrain::test::random_vector<TestType>(15, 1.0, 93), {x, y});
}

TEMPLATE_TEST_CASE("SoftmaxRegression: an empty batch is a no-op", "[models]", float, double) {
  const SoftmaxRegression<TestType> model(3, 4);
  dptrain::test::require_empty_batch_is_noop(model, dptrain::test::random_vector<TestType>(16, 1.0, 101));
}

TEMPLATE_TEST_CASE("SoftmaxRegression: bad calls throw invalid_argument", "[models]", float, double) {
  const SoftmaxRegression<TestType> model(2, 4);
  const TinySoftmaxProblem<TestType> p;
  dptrain::test::require_bad_calls_throw(model, model.init_parameters(), p.batch());
}

TEMPLATE_TEST_CASE("SoftmaxRegression: validate names a wrong feature count and an out-of-range label", "[models]",
                   float, double) {
  const SoftmaxRegression<TestType> model(784, 10);
  const RowMatrix<TestType> x = RowMatrix<TestType>::Zero(3, 784);
  Vector<Label> y{{0, 9, 4}};
  CHECK_NOTHROW(model.validate({x, y}));

  const RowMatrix<TestType> narrow = RowMatrix<TestType>::Zero(3, 783);
  CHECK_THROWS_AS(model.validate({narrow, y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate({narrow, y}),
                    "dptrain::SoftmaxRegression: expects 784 features per sample, the data have 783");

  y[1] = 10;
  CHECK_THROWS_AS(model.validate({x, y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate({x, y}),
                    "dptrain::SoftmaxRegression: label 10 in row 1 is out of range, expected 0 <= label < 10");
  y[1] = -7;
  CHECK_THROWS_WITH(model.validate({x, y}), Catch::Contains("label -7 in row 1"));
}

TEST_CASE("SoftmaxRegression: the constructor rejects no inputs and fewer than 2 classes", "[models]") {
  CHECK_THROWS_AS(SoftmaxRegression<float>(0, 3), dptrain::invalid_argument);
  CHECK_THROWS_AS(SoftmaxRegression<double>(3, 1), dptrain::invalid_argument);
  CHECK_THROWS_WITH(SoftmaxRegression<double>(3, 1),
                    Catch::Contains("dptrain::SoftmaxRegression: classes must be at least 2, got 1"));
  CHECK_NOTHROW(SoftmaxRegression<double>(1, 2));
}

TEMPLATE_TEST_CASE("SoftmaxRegression: predict is the argmax of the scores, the first on ties", "[models]", float,
                   double) {
  const SoftmaxRegression<TestType> model(2, 3);
  const RowMatrix<TestType> x{
      {TestType(1), TestType(2)}, {TestType(3), TestType(-1)}, {TestType(0), TestType(1)}, {TestType(0), TestType(0)}};
  const Vector<Label> y{{0, 0, 0, 0}};  // not read
  // W = [[1, 0, 0], [0, 1, 0]], b = (0, 0, 0.5): z = (x₀, x₁, 0.5)
  const Vector<TestType> theta{{1, 0, 0, 0, 1, 0, 0, 0, TestType(0.5)}};
  auto ws = model.make_workspace(4);
  Vector<Label> out(4);
  model.predict(theta, {x, y}, out, ws);
  CHECK(out == Vector<Label>{{1, 0, 1, 2}});
  model.predict(model.init_parameters(), {x, y}, out, ws);
  CHECK(out == Vector<Label>::Zero(4));
  Vector<Label> empty(0);
  model.predict(theta, {x.topRows(0), y.head(0)}, empty, ws);
  static_assert(dptrain::Predictor<SoftmaxRegression<TestType>>);
}

TEMPLATE_TEST_CASE("SoftmaxRegression: bias_ranges is b, the last k values of theta", "[models]", float, double) {
  const SoftmaxRegression<TestType> model(3, 4);
  static_assert(dptrain::DeclaresBiases<SoftmaxRegression<TestType>>);
  CHECK(model.bias_ranges() == std::vector<dptrain::IndexRange>{{12, 4}});
  const RowMatrix<TestType> x = RowMatrix<TestType>::Zero(6, 3);
  const Vector<Label> y = dptrain::test::random_labels(6, 4, 25);
  dptrain::test::require_biases_are_the_intercepts(model, dptrain::test::random_vector<TestType>(16, 1.0, 26), {x, y});
}
