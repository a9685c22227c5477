// SPDX-License-Identifier: MIT
// A least-squares problem with a known optimum, for the variance-reduced methods' tests.
#pragma once

#include <Eigen/Cholesky>

#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/models/linear_regression.hpp"
#include "support/data.hpp"

namespace test {

// (1/n) Σ ½(wᵀx + b − y)² on 512 samples of 8 features, and its minimiser from the normal equations.
struct LeastSquares {
  dptrain::DenseDataset<double> data = linear_data<double>(512, 8, 21, 0.5);
  dptrain::LinearRegression<double> model{8};

  [[nodiscard]] double mean_loss(const dptrain::Vector<double>& theta) const {
    auto ws = model.make_workspace(data.size());
    return model.loss(theta, data.rows(0, data.size()), ws) / static_cast<double>(data.size());
  }
  [[nodiscard]] dptrain::Vector<double> optimum() const {
    dptrain::RowMatrix<double> a(data.size(), 9);
    a << data.features, dptrain::Vector<double>::Ones(data.size());
    return (a.transpose() * a).ldlt().solve(a.transpose() * data.targets);
  }
};

// Σ ∇ℓⱼ(θ) over rows [begin, begin + count) of a data set.
template <class M, class D>
dptrain::Vector<double> summed_gradient(const M& model, const D& data, const dptrain::Vector<double>& theta,
                                        dptrain::Index begin, dptrain::Index count) {
  dptrain::Vector<double> g = dptrain::Vector<double>::Zero(theta.size());
  auto ws = model.make_workspace(count);
  (void)model.loss_and_gradient(theta, data.rows(begin, count), g, ws);
  return g;
}

}  // namespace test
