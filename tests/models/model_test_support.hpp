// SPDX-License-Identifier: MIT
// Shared by the model tests: tolerances per scalar, seeded random data, and generic Model checks.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/models/gradient_check.hpp"

namespace dptrain::test {

/// How closely float and double results must agree with an oracle.
template <class Scalar>
struct Tolerance;

template <>
struct Tolerance<float> {
  static constexpr double gradient_check = 1e-2;  ///< max relative error of a finite-difference check
  static constexpr double relative = 1e-5;        ///< closed-form values
};

template <>
struct Tolerance<double> {
  static constexpr double gradient_check = 1e-6;
  static constexpr double relative = 1e-12;
};

/// rows × cols standard normal features from std::mt19937(seed).
template <class Scalar>
RowMatrix<Scalar> random_features(Index rows, Index cols, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  RowMatrix<Scalar> x(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) x(i, j) = static_cast<Scalar>(normal(engine));
  return x;
}

/// n values uniform in [−scale, scale] from std::mt19937(seed).
template <class Scalar>
Vector<Scalar> random_vector(Index n, double scale, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(-scale, scale);
  Vector<Scalar> v(n);
  for (Index i = 0; i < n; ++i) v[i] = static_cast<Scalar>(uniform(engine));
  return v;
}

/// n labels uniform in [0, classes), every class present when n ≥ classes.
inline Vector<Label> random_labels(Index n, Index classes, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<Label> uniform(0, static_cast<Label>(classes - 1));
  Vector<Label> y(n);
  for (Index i = 0; i < n; ++i) y[i] = i < classes ? static_cast<Label>(i) : uniform(engine);
  return y;
}

/// Σ∇ℓ over the batch at θ, from a zero gradient; also returns the loss through `loss`.
template <Model M>
Vector<typename M::scalar_type> summed_gradient(const M& model, const Vector<typename M::scalar_type>& theta,
                                                const typename M::batch_type& batch,
                                                typename M::scalar_type* loss = nullptr) {
  using Scalar = typename M::scalar_type;
  typename M::workspace_type ws = model.make_workspace(std::max<Index>(1, batch.size()));
  Vector<Scalar> grad = Vector<Scalar>::Zero(model.num_parameters());
  const Scalar l = model.loss_and_gradient(theta, batch, grad, ws);
  if (loss != nullptr) *loss = l;
  return grad;
}

/// gradient_check passes at θ with the scalar's tolerance, and reports what it saw if not.
template <Model M>
void require_gradient_check_passes(const M& model, const Vector<typename M::scalar_type>& theta,
                                   const typename M::batch_type& batch) {
  const GradientCheckResult r = gradient_check(model, theta, batch);
  INFO("worst coordinate " << r.worst_index << ": analytic " << r.analytic << ", numeric " << r.numeric
                           << ", rel error " << r.max_rel_error << ", loss rel error " << r.loss_rel_error);
  CHECK(r.tolerance == Tolerance<typename M::scalar_type>::gradient_check);
  CHECK(r.coordinates == model.num_parameters());
  CHECK(r.passed);
}

/// loss_and_gradient adds to what grad holds (twice → 2g; onto c → c + g) and returns loss().
template <Model M>
void require_adds_into_gradient(const M& model, const Vector<typename M::scalar_type>& theta,
                                const typename M::batch_type& batch) {
  using Scalar = typename M::scalar_type;
  const double tol = Tolerance<Scalar>::relative;
  typename M::workspace_type ws = model.make_workspace(batch.size());
  const Index n = model.num_parameters();
  Vector<Scalar> once = Vector<Scalar>::Zero(n);
  const Scalar first = model.loss_and_gradient(theta, batch, once, ws);
  Vector<Scalar> twice = once;
  const Scalar second = model.loss_and_gradient(theta, batch, twice, ws);
  CHECK(first == second);
  CHECK(model.loss(theta, batch, ws) == Approx(first).epsilon(tol));
  CHECK(once.norm() > 0);
  CHECK((twice - Scalar(2) * once).norm() <= tol * once.norm());

  const Vector<Scalar> offset = Vector<Scalar>::LinSpaced(n, Scalar(-1), Scalar(1));
  Vector<Scalar> shifted = offset;
  model.loss_and_gradient(theta, batch, shifted, ws);
  CHECK((shifted - offset - once).norm() <= tol * (once.norm() + offset.norm()));
}

/// loss_and_gradient_overwrite writes what zeroing and loss_and_gradient give, whatever grad held
/// (NaN here), with the same loss; on an empty batch it writes 0.
template <OverwritesGradient M>
void require_overwrites_gradient(const M& model, const Vector<typename M::scalar_type>& theta,
                                 const typename M::batch_type& batch) {
  using Scalar = typename M::scalar_type;
  const double tol = Tolerance<Scalar>::relative;
  typename M::workspace_type ws = model.make_workspace(batch.size());
  const Index n = model.num_parameters();
  Vector<Scalar> added = Vector<Scalar>::Zero(n);
  const Scalar added_loss = model.loss_and_gradient(theta, batch, added, ws);
  Vector<Scalar> written = Vector<Scalar>::Constant(n, std::numeric_limits<Scalar>::quiet_NaN());
  CHECK(model.loss_and_gradient_overwrite(theta, batch, written, ws) == added_loss);
  REQUIRE(written.allFinite());
  CHECK(added.norm() > 0);
  CHECK((written - added).norm() <= tol * added.norm());

  const typename M::batch_type empty{batch.features.topRows(0), batch.targets.head(0)};
  CHECK(model.loss_and_gradient_overwrite(theta, empty, written, ws) == Scalar(0));
  CHECK(written == Vector<Scalar>::Zero(n));
}

/// With every feature 0, a linear model's scores are its intercepts alone, so its gradient is 0 on
/// every weight (∂z/∂w = x) and not on the intercepts: the non-zero entries of the gradient must be
/// exactly the elements of model.bias_ranges().
template <DeclaresBiases M>
void require_biases_are_the_intercepts(const M& model, const Vector<typename M::scalar_type>& theta,
                                       const typename M::batch_type& zero_features) {
  REQUIRE(zero_features.features.norm() == 0);
  const Vector<typename M::scalar_type> grad = summed_gradient(model, theta, zero_features);
  std::vector<bool> bias(static_cast<std::size_t>(model.num_parameters()), false);
  for (const IndexRange& r : model.bias_ranges())
    for (Index i = r.begin; i < r.end(); ++i) bias.at(static_cast<std::size_t>(i)) = true;
  for (Index i = 0; i < model.num_parameters(); ++i) {
    INFO("theta[" << i << "], gradient " << grad[i]);
    CHECK((grad[i] != 0) == bias[static_cast<std::size_t>(i)]);
  }
}

/// An empty batch: both functions return 0 and grad keeps its values bit for bit.
template <Model M>
void require_empty_batch_is_noop(const M& model, const Vector<typename M::scalar_type>& theta) {
  using Scalar = typename M::scalar_type;
  using Target = typename M::target_type;
  const RowMatrix<Scalar> x(0, model.inputs());
  const Vector<Target> y(0);
  const typename M::batch_type empty{x, y};
  for (const Index max_rows : {Index{0}, Index{1}, Index{4}}) {
    typename M::workspace_type ws = model.make_workspace(max_rows);
    const Vector<Scalar> before = Vector<Scalar>::LinSpaced(model.num_parameters(), Scalar(-3), Scalar(3));
    Vector<Scalar> grad = before;
    CHECK(model.loss_and_gradient(theta, empty, grad, ws) == Scalar(0));
    CHECK(grad == before);
    CHECK(model.loss(theta, empty, ws) == Scalar(0));
  }
}

/// loss_and_gradient and loss throw dptrain::invalid_argument for a θ of the wrong length,
/// a wrong feature count and a batch larger than the workspace.
template <Model M>
void require_bad_calls_throw(const M& model, const Vector<typename M::scalar_type>& theta,
                             const typename M::batch_type& batch) {
  using Scalar = typename M::scalar_type;
  using Target = typename M::target_type;
  const Index n = model.num_parameters();
  Vector<Scalar> grad = Vector<Scalar>::Zero(n);
  {
    typename M::workspace_type ws = model.make_workspace(batch.size());
    const Vector<Scalar> short_theta = theta.head(n - 1);
    CHECK_THROWS_AS(model.loss(short_theta, batch, ws), invalid_argument);
    CHECK_THROWS_WITH(model.loss(short_theta, batch, ws), Catch::Contains("theta has " + std::to_string(n - 1)));
    Vector<Scalar> long_grad = Vector<Scalar>::Zero(n + 1);
    CHECK_THROWS_WITH(model.loss_and_gradient(theta, batch, long_grad, ws),
                      Catch::Contains("the gradient has " + std::to_string(n + 1)));
  }
  {
    typename M::workspace_type ws = model.make_workspace(batch.size() - 1);
    CHECK_THROWS_WITH(model.loss_and_gradient(theta, batch, grad, ws),
                      Catch::Contains("the batch has " + std::to_string(batch.size()) + " rows"));
  }
  {
    typename M::workspace_type ws = model.make_workspace(batch.size());
    const RowMatrix<Scalar> wide = RowMatrix<Scalar>::Zero(batch.size(), model.inputs() + 1);
    const Vector<Target> y = batch.targets;
    const typename M::batch_type bad{wide, y};
    CHECK_THROWS_WITH(model.loss(theta, bad, ws), Catch::Contains("expects " + std::to_string(model.inputs())) &&
                                                      Catch::Contains(std::to_string(model.inputs() + 1)));
  }
  CHECK(grad == Vector<Scalar>::Zero(n));
  CHECK_THROWS_WITH(model.make_workspace(-1), Catch::Contains("max_rows must be >= 0, got -1"));
}

}  // namespace dptrain::test
