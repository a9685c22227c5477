// SPDX-License-Identifier: MIT
// Tests of Mlp: layout, a hand-computed network, a naive reference, backprop vs finite differences, init.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "dptrain/models/gradient_check.hpp"
#include "dptrain/models/mlp.hpp"
#include "dptrain/models/softmax_regression.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::Mlp;
using dptrain::RowMatrix;
using dptrain::Vector;
using dptrain::test::Tolerance;

static_assert(dptrain::Model<Mlp<float>> && dptrain::Model<Mlp<double>>);
static_assert(dptrain::OverwritesGradient<Mlp<float>> && dptrain::OverwritesGradient<Mlp<double>>);

// The forward pass by the definition, in double. Returns the summed loss; `closest_to_kink` gets
// min |pre-activation| over all hidden units and rows.
template <class Scalar>
double reference_loss(const Mlp<Scalar>& model, const RowMatrix<Scalar>& x, const Vector<Label>& y,
                      const Vector<Scalar>& theta, double& closest_to_kink) {
  const std::vector<Index>& n = model.widths();
  closest_to_kink = std::numeric_limits<double>::infinity();
  double loss = 0;
  for (Index i = 0; i < x.rows(); ++i) {
    std::vector<double> a(static_cast<std::size_t>(n[0]));
    for (Index f = 0; f < n[0]; ++f) a[static_cast<std::size_t>(f)] = static_cast<double>(x(i, f));
    for (Index l = 0; l < model.layers(); ++l) {
      const Index in = n[static_cast<std::size_t>(l)], out = n[static_cast<std::size_t>(l + 1)];
      std::vector<double> z(static_cast<std::size_t>(out));
      for (Index j = 0; j < out; ++j) {
        double s = static_cast<double>(theta[model.bias_offset(l) + j]);
        for (Index k = 0; k < in; ++k)
          s += a[static_cast<std::size_t>(k)] * static_cast<double>(theta[model.weights_offset(l) + k * out + j]);
        z[static_cast<std::size_t>(j)] = s;
      }
      if (l + 1 < model.layers())
        for (double& v : z) {
          closest_to_kink = std::min(closest_to_kink, std::abs(v));
          v = std::max(v, 0.0);
        }
      a = z;
    }
    double sum = 0;
    for (const double v : a) sum += std::exp(v);
    loss += std::log(sum) - a[static_cast<std::size_t>(y[i])];
  }
  return loss;
}

double mean(const Eigen::Ref<const Vector<double>>& v) {
  return v.mean();
}
double stddev(const Eigen::Ref<const Vector<double>>& v) {
  return std::sqrt((v.array() - v.mean()).square().sum() / static_cast<double>(v.size() - 1));
}

}  // namespace

TEST_CASE("Mlp: sizes and theta layout", "[models]") {
  const Mlp<float> model({784, 256, 10});
  CHECK(model.inputs() == 784);
  CHECK(model.classes() == 10);
  CHECK(model.layers() == 2);
  CHECK(model.widths() == std::vector<Index>{784, 256, 10});
  CHECK(model.num_parameters() == 785 * 256 + 257 * 10);
  CHECK(model.weights_offset(0) == 0);
  CHECK(model.bias_offset(0) == 784 * 256);
  CHECK(model.weights_offset(1) == 785 * 256);
  CHECK(model.bias_offset(1) == 785 * 256 + 256 * 10);
}

TEMPLATE_TEST_CASE("Mlp: loss and gradient of a hand-computed 2-2-2 network", "[models]", float, double) {
  const Mlp<TestType> model({2, 2, 2});
  // W₀ = [[1, −1], [0.5, 2]], b₀ = (0, −2), W₁ = [[2, −1], [3, 1]], b₁ = (0.5, 0).
  const Vector<TestType> theta{{1, -1, 0.5, 2, 0, -2, 2, -1, 3, 1, 0.5, 0}};
  const RowMatrix<TestType> x{{TestType(1), TestType(1)}};
  const Vector<Label> y{{0}};
  // z₁ = (1.5, −1) → a₁ = (1.5, 0); z₂ = (3.5, −1.5); ℓ = log(1 + e^{−5}).
  // With s = σ(−5): δ₂ = (−s, s), δ₁ = (δ₂ W₁ᵀ) ⊙ (1, 0) = (−3s, 0).
  const double s = 1 / (1 + std::exp(5.0));
  const std::vector<double> expected{-3 * s, 0, -3 * s, 0, -3 * s, 0, -1.5 * s, 1.5 * s, 0, 0, -s, s};
  TestType loss = 0;
  const Vector<TestType> grad = dptrain::test::summed_gradient(model, theta, {x, y}, &loss);
  const double tol = Tolerance<TestType>::relative;
  CHECK(loss == Approx(std::log1p(std::exp(-5.0))).epsilon(tol));
  for (Index i = 0; i < 12; ++i) {
    INFO("coordinate " << i);
    CHECK(grad[i] == Approx(expected[static_cast<std::size_t>(i)]).epsilon(tol).margin(1e-12));
  }
}

TEMPLATE_TEST_CASE("Mlp: with one weight layer it is SoftmaxRegression", "[models]", float, double) {
  const Mlp<TestType> mlp({6, 4});
  const dptrain::SoftmaxRegression<TestType> softmax(6, 4);
  REQUIRE(mlp.num_parameters() == softmax.num_parameters());
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(9, 6, 111);
  const Vector<Label> y = dptrain::test::random_labels(9, 4, 112);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(28, 1.0, 113);
  TestType mlp_loss = 0, softmax_loss = 0;
  const Vector<TestType> mlp_grad = dptrain::test::summed_gradient(mlp, theta, {x, y}, &mlp_loss);
  const Vector<TestType> softmax_grad = dptrain::test::summed_gradient(softmax, theta, {x, y}, &softmax_loss);
  // Same function on the same register tiles, but SoftmaxRegression takes its rows in blocks:
  // equal up to the order of the sums.
  const double tol = 10 * Tolerance<TestType>::relative;
  CHECK(mlp_loss == Approx(softmax_loss).epsilon(tol));
  CHECK(mlp_grad.isApprox(softmax_grad, static_cast<TestType>(tol)));
}

// Output layers of a few classes run on the narrow kernels, wider ones on Eigen's GEMM: both.
constexpr Index wide_top = dptrain::detail::narrow::max_columns + 1;

TEMPLATE_TEST_CASE("Mlp: the loss of a 3-layer network matches a naive reference", "[models]", float, double) {
  const Index classes = GENERATE(Index{3}, wide_top);
  INFO(classes << " classes");
  const Mlp<TestType> model({4, 6, 5, classes});
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(10, 4, 121);
  const Vector<Label> y = dptrain::test::random_labels(10, classes, 122);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(model.num_parameters(), 1.0, 123);
  double closest = 0;
  const double expected = reference_loss(model, x, y, theta, closest);
  auto ws = model.make_workspace(10);
  CHECK(model.loss(theta, {x, y}, ws) == Approx(expected).epsilon(10 * Tolerance<TestType>::relative));
}

TEMPLATE_TEST_CASE("Mlp: backpropagation through 2 hidden layers matches finite differences", "[models]", float,
                   double) {
  const Index classes = GENERATE(Index{3}, wide_top);
  INFO(classes << " classes");
  const Mlp<TestType> model({5, 7, 6, classes});
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(8, 5, 131);
  const Vector<Label> y = dptrain::test::random_labels(8, classes, 132);
  // Central differences are only valid where the loss is smooth: no hidden pre-activation may be
  // within reach of a step of ReLU's kink (h·|input| ≤ 5e-3 · 3 for float, |θ| < 1). Take the
  // first seed whose θ keeps every pre-activation 0.02 away from it: deterministic, like the data.
  Vector<TestType> theta;
  double closest = 0;
  std::uint32_t seed = 133;
  for (; seed < 233; ++seed) {
    theta = dptrain::test::random_vector<TestType>(model.num_parameters(), 0.6, seed);
    reference_loss(model, x, y, theta, closest);
    if (closest > 0.02) break;
  }
  INFO("theta seed " << seed << ", closest pre-activation to the kink " << closest);
  REQUIRE(closest > 0.02);
  dptrain::test::require_gradient_check_passes(model, theta, {x, y});
}

TEMPLATE_TEST_CASE("Mlp: loss_and_gradient adds into grad and agrees with loss", "[models]", float, double) {
  const Mlp<TestType> model({4, 5, 3});
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(6, 4, 141);
  const Vector<Label> y = dptrain::test::random_labels(6, 3, 142);
  dptrain::test::require_adds_into_gradient(model, model.init_parameters(143), {x, y});
}

TEMPLATE_TEST_CASE("Mlp: loss_and_gradient_overwrite writes the gradient, whatever grad held", "[models]", float,
                   double) {
  // The output layer on the narrow kernels (3 and 12 classes) and on the GEMM (40 classes); a
  // first layer of 784 × 256 whose product needs several blocks of rows.
  const auto [widths, rows] = GENERATE(table<std::vector<Index>, Index>({
      {{4, 5, 3}, 6},
      {{30, 40, 20, 12}, 9},
      {{50, 60, 40}, 17},
      {{784, 256, 10}, 37},
  }));
  const Mlp<TestType> model(widths);
  INFO(model.shape() << ", " << rows << " rows");
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(rows, model.inputs(), 144);
  const Vector<Label> y = dptrain::test::random_labels(rows, model.classes(), 145);
  dptrain::test::require_overwrites_gradient(model, model.init_parameters(146), {x, y});
}

TEMPLATE_TEST_CASE("Mlp: an empty batch is a no-op", "[models]", float, double) {
  const Mlp<TestType> model({3, 4, 4, 2});
  dptrain::test::require_empty_batch_is_noop(model, model.init_parameters(151));
}

TEMPLATE_TEST_CASE("Mlp: bad calls throw invalid_argument", "[models]", float, double) {
  const Mlp<TestType> model({2, 3, 4});
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(3, 2, 161);
  const Vector<Label> y{{0, 3, 1}};
  dptrain::test::require_bad_calls_throw(model, model.init_parameters(), {x, y});
}

TEST_CASE("Mlp: a workspace made for another network is refused, not overrun", "[models]") {
  // Same inputs, rows and classes; the narrow kernels would write a 3 × 8 ∇Wᵀ into a 3 × 5 buffer.
  const Mlp<float> model({4, 8, 3});
  auto other = Mlp<float>({4, 5, 3}).make_workspace(6);
  auto fewer_layers = Mlp<float>({4, 3}).make_workspace(6);
  const RowMatrix<float> x = dptrain::test::random_features<float>(6, 4, 165);
  const Vector<Label> y = dptrain::test::random_labels(6, 3, 166);
  const Vector<float> theta = model.init_parameters(167);
  Vector<float> grad = Vector<float>::Zero(model.num_parameters());
  Vector<Label> predicted(6);
  for (auto* ws : {&other, &fewer_layers}) {
    CHECK_THROWS_WITH(model.loss_and_gradient(theta, {x, y}, grad, *ws), Catch::Contains("another model"));
    CHECK_THROWS_WITH(model.loss(theta, {x, y}, *ws), Catch::Contains("another model"));
    CHECK_THROWS_WITH(model.predict(theta, {x, y}, predicted, *ws), Catch::Contains("another model"));
  }
  auto own = model.make_workspace(6);
  CHECK_NOTHROW(model.loss_and_gradient(theta, {x, y}, grad, own));
}

TEMPLATE_TEST_CASE("Mlp: validate names a wrong feature count and an out-of-range label", "[models]", float, double) {
  const Mlp<TestType> model({3, 8, 5});
  const RowMatrix<TestType> x = RowMatrix<TestType>::Zero(4, 3);
  Vector<Label> y{{0, 4, 2, 1}};
  CHECK_NOTHROW(model.validate({x, y}));

  const RowMatrix<TestType> wide = RowMatrix<TestType>::Zero(4, 5);
  CHECK_THROWS_AS(model.validate({wide, y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate({wide, y}), "dptrain::Mlp: expects 3 features per sample, the data have 5");

  y[3] = 5;
  CHECK_THROWS_AS(model.validate({x, y}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate({x, y}), "dptrain::Mlp: label 5 in row 3 is out of range, expected 0 <= label < 5");
}

TEST_CASE("Mlp: the constructor rejects fewer than 2 widths, a zero width and fewer than 2 classes", "[models]") {
  CHECK_THROWS_AS(Mlp<float>({}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(Mlp<float>({784}),
                    Catch::Contains("dptrain::Mlp: widths.size() must be at least 2") && Catch::Contains("got 1"));
  CHECK_THROWS_AS(Mlp<double>({784, 0, 10}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(Mlp<double>({784, 0, 10}),
                    Catch::Contains("widths[1] must be at least 1") && Catch::Contains("got 0"));
  CHECK_THROWS_WITH(Mlp<double>({0, 10}), Catch::Contains("widths[0] must be at least 1") && Catch::Contains("got 0"));
  CHECK_THROWS_WITH(Mlp<double>({784, -4, 10}),
                    Catch::Contains("widths[1] must be at least 1") && Catch::Contains("got -4"));
  CHECK_THROWS_WITH(Mlp<double>({784, 16, 1}), Catch::Contains("the number of classes) must be at least 2, got 1"));
  CHECK_NOTHROW(Mlp<double>({1, 1, 2}));
}

TEST_CASE("Mlp: init_parameters is deterministic for a seed and differs between seeds", "[models]") {
  const Mlp<double> model({20, 16, 12, 4});
  const Vector<double> a = model.init_parameters(7);
  CHECK(a == model.init_parameters(7));
  CHECK(a != model.init_parameters(8));
  CHECK(a == model.init_parameters(7));
  CHECK(Mlp<float>({20, 16, 12, 4}).init_parameters(7) == a.cast<float>());
  CHECK(model.init_parameters() == model.init_parameters(0));
  for (Index l = 0; l < model.layers(); ++l) {
    const Index out = model.widths()[static_cast<std::size_t>(l + 1)];
    CHECK(a.segment(model.bias_offset(l), out) == Vector<double>::Zero(out));
  }
}

TEST_CASE("Mlp: init_parameters uses He normal before ReLU and Glorot uniform at the output", "[models]") {
  const Mlp<double> model({400, 300, 200, 10});
  const Vector<double> theta = model.init_parameters(2024);
  for (Index l = 0; l < 2; ++l) {  // He normal: N(0, 2 / fan_in)
    const Index in = model.widths()[static_cast<std::size_t>(l)];
    const Index out = model.widths()[static_cast<std::size_t>(l + 1)];
    const Eigen::Ref<const Vector<double>> w = theta.segment(model.weights_offset(l), in * out);
    const double expected = std::sqrt(2.0 / static_cast<double>(in));
    INFO("layer " << l);
    CHECK(std::abs(mean(w)) < 5 * expected / std::sqrt(static_cast<double>(w.size())));
    CHECK(stddev(w) == Approx(expected).epsilon(0.02));
    CHECK(w.cwiseAbs().maxCoeff() > 3 * expected);  // a normal, not a bounded distribution
  }
  const double limit = std::sqrt(6.0 / (200.0 + 10.0));  // Glorot uniform: U(−limit, limit)
  const Eigen::Ref<const Vector<double>> w = theta.segment(model.weights_offset(2), 200 * 10);
  CHECK(w.cwiseAbs().maxCoeff() <= limit);
  CHECK(w.cwiseAbs().maxCoeff() > 0.99 * limit);
  CHECK(stddev(w) == Approx(limit / std::sqrt(3.0)).epsilon(0.1));
  CHECK(std::abs(mean(w)) < 0.1 * limit);
}

TEMPLATE_TEST_CASE("Mlp: predict is the argmax of the output scores", "[models]", float, double) {
  const Mlp<TestType> model({2, 2, 2});
  // W₀ = W₁ = I, b₀ = b₁ = 0: the scores are ReLU(x).
  const Vector<TestType> theta{{1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}};
  const RowMatrix<TestType> x{{TestType(1), TestType(2)},
                              {TestType(3), TestType(-1)},
                              {TestType(-1), TestType(-2)},
                              {TestType(-1), TestType(0.5)}};
  const Vector<Label> y{{0, 0, 0, 0}};
  auto ws = model.make_workspace(4);
  Vector<Label> out(4);
  model.predict(theta, {x, y}, out, ws);
  CHECK(out == Vector<Label>{{1, 0, 0, 1}});

  // With one weight layer the predictions are SoftmaxRegression's.
  const Mlp<TestType> flat({5, 4});
  const dptrain::SoftmaxRegression<TestType> softmax(5, 4);
  const RowMatrix<TestType> xs = dptrain::test::random_features<TestType>(40, 5, 3);
  const Vector<Label> ys = dptrain::test::random_labels(40, 4, 4);
  const Vector<TestType> t = dptrain::test::random_vector<TestType>(24, 1.0, 5);
  auto ws_flat = flat.make_workspace(40);
  auto ws_softmax = softmax.make_workspace(40);
  Vector<Label> a(40), b(40);
  flat.predict(t, {xs, ys}, a, ws_flat);
  softmax.predict(t, {xs, ys}, b, ws_softmax);
  CHECK(a == b);
  static_assert(dptrain::Predictor<Mlp<TestType>>);
}

TEST_CASE("Mlp: bias_ranges is every layer's b_l", "[models]") {
  static_assert(dptrain::DeclaresBiases<Mlp<float>> && dptrain::DeclaresBiases<Mlp<double>>);
  // {4, 6, 5, 3}: W₀ 4·6 = 24 values, b₀ 6, W₁ 6·5 = 30, b₁ 5, W₂ 5·3 = 15, b₂ 3.
  CHECK(Mlp<double>({4, 6, 5, 3}).bias_ranges() ==
        std::vector<dptrain::IndexRange>{{24, 6}, {24 + 6 + 30, 5}, {24 + 6 + 30 + 5 + 15, 3}});
  CHECK(Mlp<float>({784, 256, 10}).bias_ranges() ==
        std::vector<dptrain::IndexRange>{{784 * 256, 256}, {785 * 256 + 256 * 10, 10}});
  // One weight layer: the same biases as SoftmaxRegression, whose θ layout it shares.
  CHECK(Mlp<float>({7, 3}).bias_ranges() == dptrain::SoftmaxRegression<float>(7, 3).bias_ranges());
}

// ---- Precision::bf16 ----

namespace {

double bf16_relative_distance(const Vector<float>& x, const Vector<float>& y) {
  return static_cast<double>((x - y).norm() / std::max(1.0f, y.norm()));
}

}  // namespace

TEST_CASE("Mlp bf16: loss and gradient are the full-precision ones within bf16's rounding, and not equal to them",
          "[models][bf16]") {
  // Hidden layers on GEMM (bf16), and an output layer both narrow (fp32) and on GEMM (bf16).
  const Index classes = GENERATE(Index{3}, wide_top);
  INFO(classes << " classes, bf16 kernel " << dptrain::bf16_kernel_name());
  const Mlp<float> full({37, 24, 19, classes});
  const Mlp<float> mixed({37, 24, 19, classes}, dptrain::Precision::bf16);
  CHECK(mixed.precision() == dptrain::Precision::bf16);
  CHECK(mixed.num_parameters() == full.num_parameters());
  const RowMatrix<float> x = dptrain::test::random_features<float>(29, 37, 141);
  const Vector<Label> y = dptrain::test::random_labels(29, classes, 142);
  const Vector<float> theta = mixed.init_parameters(143);
  auto ws_full = full.make_workspace(29);
  auto ws_mixed = mixed.make_workspace(29);
  Vector<float> g_full = Vector<float>::Zero(full.num_parameters()), g_mixed = g_full;
  const float l_full = full.loss_and_gradient(theta, {x, y}, g_full, ws_full);
  const float l_mixed = mixed.loss_and_gradient(theta, {x, y}, g_mixed, ws_mixed);
  // bf16 keeps 8 significant bits (relative rounding 2⁻⁹ ≈ 0.2%) of every product input. The
  // gradient moves further (3% and 7% here): a hidden unit whose pre-activation is near 0 may
  // change side of ReLU's kink, and gradients cancel. A wrong product would be off by O(1).
  CHECK(l_mixed == Approx(l_full).epsilon(1e-2));
  CHECK(bf16_relative_distance(g_mixed, g_full) < 0.1);
  CHECK(g_mixed != g_full);  // the mode is on: the products did round
  CHECK(mixed.loss(theta, {x, y}, ws_mixed) == l_mixed);
  // Overwrite and add agree, as in full precision.
  Vector<float> g_overwrite = Vector<float>::Constant(full.num_parameters(), 7.0f);
  CHECK(mixed.loss_and_gradient_overwrite(theta, {x, y}, g_overwrite, ws_mixed) == l_mixed);
  CHECK(g_overwrite == g_mixed);
}

TEST_CASE("Mlp bf16: backpropagation matches finite differences at bf16 tolerances", "[models][bf16]") {
  // The mixed loss rounds θ to 8 bits, so it is a staircase at the scale of θ's bf16 spacing:
  // steps of 5% of |θ| reach across many stairs, and the tolerance is bf16's, not float's.
  const Mlp<float> model({6, 9, 8, 3}, dptrain::Precision::bf16);
  const RowMatrix<float> x = dptrain::test::random_features<float>(4, 6, 151);
  const Vector<Label> y = dptrain::test::random_labels(4, 3, 152);
  const Vector<float> theta = dptrain::test::random_vector<float>(model.num_parameters(), 0.6, 153);
  const dptrain::GradientCheckResult r =
      dptrain::gradient_check(model, theta, {x, y}, {.epsilon = 0.05, .tolerance = 0.1});
  INFO("worst coordinate " << r.worst_index << ": analytic " << r.analytic << ", numeric " << r.numeric
                           << ", rel error " << r.max_rel_error);
  CHECK(r.passed);
}

TEST_CASE("Mlp bf16: asked of a double model, or with a full-precision workspace, it is refused", "[models][bf16]") {
  CHECK_THROWS_WITH(Mlp<double>({4, 5, 3}, dptrain::Precision::bf16),
                    Catch::Contains("Precision::bf16 needs Mlp<float>"));
  const Mlp<float> full({4, 20, 3});
  const Mlp<float> mixed({4, 20, 3}, dptrain::Precision::bf16);
  auto ws = full.make_workspace(8);
  const Vector<float> theta = mixed.init_parameters(1);
  const RowMatrix<float> x = dptrain::test::random_features<float>(8, 4, 3);
  const Vector<Label> y = dptrain::test::random_labels(8, 3, 4);
  CHECK_THROWS_WITH(mixed.loss(theta, {x, y}, ws), Catch::Contains("workspace was made for another model"));
  auto mixed_ws = mixed.make_workspace(8);
  CHECK_NOTHROW(full.loss(theta, {x, y}, mixed_ws));  // a bf16 workspace has everything a full one has
}
