// SPDX-License-Identifier: MIT
// gradient_check: compares a Model's analytic gradient with central finite differences of its loss.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "dptrain/concepts.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Options of gradient_check(); every field has a default, so `{}` is a sensible check.
 *
 * @code
 * dptrain::GradientCheckOptions options{.max_coordinates = 500, .tolerance = 1e-5};
 * @endcode
 */
struct GradientCheckOptions {
  /// Relative step: coordinate i is moved by ±h_i, h_i = epsilon · max(1, |θ_i|).
  /// 0 (the default) means ∛(machine epsilon of the scalar): 4.9e-3 for float, 6.1e-6 for double,
  /// which balances the O(h²) truncation error against the O(ε/h) rounding error.
  double epsilon = 0;
  /// Check at most this many coordinates: all of θ when it is no longer, otherwise the evenly
  /// spaced subset i_j = ⌊j·n / max_coordinates⌋, j = 0 … max_coordinates − 1. Must be ≥ 1.
  Index max_coordinates = 2000;
  /// Pass if the largest relative error (see GradientCheckResult) is at most this.
  /// 0 (the default) means 1e-6 for double and 1e-2 for float.
  double tolerance = 0;
};

/**
 * @brief What gradient_check() found. For each checked coordinate i, with a_i the analytic
 * derivative (from loss_and_gradient) and n_i the central difference (from loss),
 * @f[ \mathrm{abs}_i = |a_i - n_i|, \qquad \mathrm{rel}_i = \frac{|a_i - n_i|}{\max(1, |a_i|, |n_i|)}, @f]
 * a relative error for large derivatives and an absolute one for small ones (so derivatives
 * that are ~0 do not make the ratio blow up). The loss is a sum over the batch, so for large
 * batches scale the tolerance with the batch, or check on a small one.
 */
struct GradientCheckResult {
  double max_abs_error = 0;  ///< max_i abs_i
  double max_rel_error = 0;  ///< max_i rel_i, compared with the tolerance
  Index worst_index = -1;    ///< the coordinate of θ with the largest rel_i (−1 if none was checked)
  bool passed = false;       ///< every check below the tolerance and everything finite
  double analytic = 0;       ///< a_i at worst_index
  double numeric = 0;        ///< n_i at worst_index
  Index coordinates = 0;     ///< how many coordinates were checked
  /// |L_g − L| / max(1, |L|): loss_and_gradient()'s loss L_g against loss()'s L at θ; it must
  /// also be within the tolerance, so that the two functions describe the same loss.
  double loss_rel_error = 0;
  double tolerance = 0;  ///< the tolerance that was applied
};

/**
 * @brief Checks a model's gradient against central finite differences of its loss.
 *
 * For each checked coordinate i of θ (all, or an evenly spaced subset, see
 * GradientCheckOptions::max_coordinates):
 * @f[ n_i = \frac{L(\theta + h_i e_i) - L(\theta - h_i e_i)}{(\theta_i + h_i) - (\theta_i - h_i)}, @f]
 * where L = model.loss(θ, batch) is the summed loss and the denominator is the step actually
 * taken in the model's scalar type. n_i is compared with a_i, coordinate i of the gradient
 * that model.loss_and_gradient() adds to a zero vector; see GradientCheckResult for the error
 * measures. It costs one loss_and_gradient() and 2 · coordinates loss() evaluations.
 *
 * The loss must be smooth around θ: a ReLU unit whose input is within h of 0 can make a
 * correct gradient fail. A diagnostic, not for the training loop: it allocates.
 *
 * @tparam M a dptrain::Model.
 * @param model the model; only const methods are called.
 * @param theta the point to check at, of length model.num_parameters().
 * @param batch a small batch (a handful of rows is enough, and keeps the float loss accurate).
 * @param options step, subset and tolerance; the defaults suit float and double.
 * @return the errors, the worst coordinate and whether it passed.
 * @throws dptrain::invalid_argument if theta has the wrong length or max_coordinates < 1;
 *         whatever the model throws (e.g. for a batch it does not accept).
 *
 * @code
 * dptrain::Mlp<double> model({4, 8, 3});
 * dptrain::Vector<double> theta = model.init_parameters(1);
 * dptrain::GradientCheckResult r = dptrain::gradient_check(model, theta, data.rows(0, 8));
 * if (!r.passed)
 *   std::cerr << "coordinate " << r.worst_index << ": analytic " << r.analytic
 *             << ", numeric " << r.numeric << '\n';
 * @endcode
 */
template <Model M>
[[nodiscard]] GradientCheckResult gradient_check(const M& model, ConstVectorRef<typename M::scalar_type> theta,
                                                 const typename M::batch_type& batch,
                                                 GradientCheckOptions options = {}) {
  using Scalar = typename M::scalar_type;
  const Index n = static_cast<Index>(model.num_parameters());
  if (theta.size() != n)
    throw invalid_argument("dptrain::gradient_check: the model has " + std::to_string(n) + " parameters, theta has " +
                           std::to_string(theta.size()));
  if (options.max_coordinates < 1)
    throw invalid_argument("dptrain::gradient_check: max_coordinates must be at least 1, got " +
                           std::to_string(options.max_coordinates));
  const double epsilon =
      options.epsilon > 0 ? options.epsilon : std::cbrt(static_cast<double>(std::numeric_limits<Scalar>::epsilon()));
  GradientCheckResult result;
  result.tolerance = options.tolerance > 0 ? options.tolerance : (sizeof(Scalar) >= sizeof(double) ? 1e-6 : 1e-2);

  typename M::workspace_type ws = model.make_workspace(std::max<Index>(1, static_cast<Index>(batch.size())));
  Vector<Scalar> analytic = Vector<Scalar>::Zero(n);
  const auto loss_with_gradient = static_cast<double>(model.loss_and_gradient(theta, batch, analytic, ws));
  const auto loss = static_cast<double>(model.loss(theta, batch, ws));
  result.loss_rel_error = std::abs(loss_with_gradient - loss) / std::max({1.0, std::abs(loss)});
  bool finite = std::isfinite(loss_with_gradient) && std::isfinite(loss);

  Vector<Scalar> point = theta;
  const Index checked = std::min(n, options.max_coordinates);
  for (Index j = 0; j < checked; ++j) {
    const Index i = checked == n ? j : j * n / checked;
    const Scalar original = point[i];
    const auto h = static_cast<Scalar>(epsilon * std::max(1.0, std::abs(static_cast<double>(original))));
    const Scalar up = original + h, down = original - h;
    point[i] = up;
    const auto loss_up = static_cast<double>(model.loss(point, batch, ws));
    point[i] = down;
    const auto loss_down = static_cast<double>(model.loss(point, batch, ws));
    point[i] = original;

    const double numeric = (loss_up - loss_down) / (static_cast<double>(up) - static_cast<double>(down));
    const auto a = static_cast<double>(analytic[i]);
    const double abs_error = std::abs(a - numeric);
    const double rel_error = abs_error / std::max({1.0, std::abs(a), std::abs(numeric)});
    finite = finite && std::isfinite(a) && std::isfinite(numeric);
    result.max_abs_error = std::max(result.max_abs_error, abs_error);
    if (result.worst_index < 0 || rel_error > result.max_rel_error || std::isnan(rel_error)) {
      result.max_rel_error = rel_error;
      result.worst_index = i;
      result.analytic = a;
      result.numeric = numeric;
    }
  }
  result.coordinates = checked;
  result.passed = finite && result.max_rel_error <= result.tolerance && result.loss_rel_error <= result.tolerance;
  return result;
}

}  // namespace dptrain
