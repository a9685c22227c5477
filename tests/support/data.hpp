// SPDX-License-Identifier: MIT
// Seeded test data sets and a hand-written single-thread reference loop.
#pragma once

#include <cmath>
#include <random>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/data/dense_dataset.hpp"

namespace test {

using dptrain::Index;
using dptrain::Label;

/// y = X·w + 0.5 + noise, X ~ N(0, 1); w_i = (i + 1) / d.
template <class Scalar>
dptrain::DenseDataset<Scalar> linear_data(Index n, Index d, unsigned seed, double noise = 0.1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  dptrain::DenseDataset<Scalar> data{dptrain::RowMatrix<Scalar>(n, d), dptrain::Vector<Scalar>(n)};
  for (Index i = 0; i < n; ++i) {
    double y = 0.5;
    for (Index j = 0; j < d; ++j) {
      data.features(i, j) = static_cast<Scalar>(normal(rng));
      y += static_cast<double>(data.features(i, j)) * static_cast<double>(j + 1) / static_cast<double>(d);
    }
    data.targets[i] = static_cast<Scalar>(y + noise * normal(rng));
  }
  return data;
}

/// `classes` Gaussian clusters with centres `separation` apart: linearly separable when large.
template <class Scalar>
dptrain::DenseDataset<Scalar, Label> cluster_data(Index n, Index d, Index classes, unsigned seed,
                                                  double separation = 4.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  dptrain::RowMatrix<double> centres(classes, d);
  for (Index c = 0; c < classes; ++c)
    for (Index j = 0; j < d; ++j) centres(c, j) = separation * normal(rng);
  dptrain::DenseDataset<Scalar, Label> data{dptrain::RowMatrix<Scalar>(n, d), dptrain::Vector<Label>(n)};
  for (Index i = 0; i < n; ++i) {
    const auto c = static_cast<Label>(i % classes);
    data.targets[i] = c;
    for (Index j = 0; j < d; ++j) data.features(i, j) = static_cast<Scalar>(centres(c, j) + normal(rng));
  }
  return data;
}

/// The textbook single-thread loop, no shuffling: step k takes minibatch (k − 1) mod
/// batches_per_epoch, computes its mean gradient on one thread and updates all of θ at once.
template <class M, class D, class O>
dptrain::Vector<typename M::scalar_type> reference_training(const M& model,
                                                            dptrain::Vector<typename M::scalar_type> theta,
                                                            const D& data, Index batch, Index steps,
                                                            const O& optimizer) {
  using Scalar = typename M::scalar_type;
  const Index n = data.size(), batches = (n + batch - 1) / batch, len = theta.size();
  std::array<dptrain::Vector<Scalar>, static_cast<std::size_t>(O::state_slots)> state;
  for (auto& s : state) s = dptrain::Vector<Scalar>::Zero(len);
  dptrain::Vector<Scalar> grad(len);
  auto ws = model.make_workspace(batch);
  for (Index step = 1; step <= steps; ++step) {
    const Index start = ((step - 1) % batches) * batch, size = std::min(batch, n - start);
    grad.setZero();
    model.loss_and_gradient(theta, data.rows(start, size), grad, ws);
    grad /= static_cast<Scalar>(size);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      optimizer.update(
          dptrain::UpdateSlice<Scalar, O::state_slots>{dptrain::VectorMap<Scalar>(theta.data(), len),
                                                       dptrain::ConstVectorMap<Scalar>(grad.data(), len),
                                                       {dptrain::VectorMap<Scalar>(state[K].data(), len)...}},
          dptrain::StepInfo{step, optimizer.lr});
    }
    (std::make_index_sequence<static_cast<std::size_t>(O::state_slots)>{});
  }
  return theta;
}

template <class Scalar>
double relative_error(const dptrain::Vector<Scalar>& a, const dptrain::Vector<Scalar>& b) {
  return (a - b).template cast<double>().norm() / std::max(1e-300, b.template cast<double>().norm());
}

}  // namespace test
