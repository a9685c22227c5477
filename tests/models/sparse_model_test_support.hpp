// SPDX-License-Identifier: MIT
// Shared by the sparse model tests: a sparse model against its dense twin on the dense copy of the data.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "dptrain/data/sparse_dataset.hpp"
#include "models/model_test_support.hpp"
#include "support/sparse_data.hpp"

namespace test {

/// Loss and gradient of `sparse` on `batch` equal those of `dense` on `dense_batch` (relative
/// to the gradient's norm), from a non-zero starting gradient, since both add into it.
template <class Sparse, class Dense>
void require_matches_dense(const Sparse& sparse, const Dense& dense,
                           const dptrain::Vector<typename Sparse::scalar_type>& theta,
                           const typename Sparse::batch_type& batch, const typename Dense::batch_type& dense_batch) {
  using Scalar = typename Sparse::scalar_type;
  const double tol = dptrain::test::Tolerance<Scalar>::relative;
  REQUIRE(sparse.num_parameters() == dense.num_parameters());
  const dptrain::Index n = sparse.num_parameters();
  auto sparse_ws = sparse.make_workspace(std::max<dptrain::Index>(1, batch.size()));
  auto dense_ws = dense.make_workspace(std::max<dptrain::Index>(1, batch.size()));
  const dptrain::Vector<Scalar> start = dptrain::Vector<Scalar>::LinSpaced(n, Scalar(-0.5), Scalar(0.5));
  dptrain::Vector<Scalar> sparse_grad = start, dense_grad = start;
  const Scalar sparse_loss = sparse.loss_and_gradient(theta, batch, sparse_grad, sparse_ws);
  const Scalar dense_loss = dense.loss_and_gradient(theta, dense_batch, dense_grad, dense_ws);
  INFO(batch.size() << " rows");
  CHECK(sparse_loss == Approx(dense_loss).epsilon(tol));
  CHECK(sparse.loss(theta, batch, sparse_ws) == Approx(dense_loss).epsilon(tol));
  CHECK((sparse_grad - dense_grad).norm() <= tol * std::max(Scalar(1), dense_grad.norm()));
}

/// gradient_support (SparseGradient) on `batch`: the gradient is zero outside the visited
/// coordinates, and the loss and gradient do not change when θ changes there; a batch of
/// `stored` entries visits at most `stored · per_entry + biases` coordinates (repeats included).
template <class M>
void require_support_holds(const M& model, const dptrain::Vector<typename M::scalar_type>& theta,
                           const typename M::batch_type& batch, dptrain::Index per_entry, dptrain::Index biases) {
  using Scalar = typename M::scalar_type;
  static_assert(dptrain::SparseGradient<M>);
  const dptrain::Index n = model.num_parameters();
  std::vector<bool> in_support(static_cast<std::size_t>(n), false);
  dptrain::Index visits = 0;
  model.gradient_support(batch, [&](dptrain::Index i) {
    REQUIRE(i >= 0);
    REQUIRE(i < n);
    in_support[static_cast<std::size_t>(i)] = true;
    ++visits;
  });
  const dptrain::Index stored =
      batch.size() == 0 ? 0 : batch.features.outerIndexPtr()[batch.size()] - batch.features.outerIndexPtr()[0];
  INFO(batch.size() << " rows, " << stored << " stored entries");
  CHECK(visits == (batch.size() == 0 ? 0 : stored * per_entry + biases));
  auto ws = model.make_workspace(std::max<dptrain::Index>(1, batch.size()));
  dptrain::Vector<Scalar> grad = dptrain::Vector<Scalar>::Zero(n);
  const Scalar loss = model.loss_and_gradient(theta, batch, grad, ws);
  dptrain::Vector<Scalar> moved = theta, moved_grad = dptrain::Vector<Scalar>::Zero(n);
  for (dptrain::Index i = 0; i < n; ++i) {
    if (in_support[static_cast<std::size_t>(i)]) continue;
    CHECK(grad[i] == Scalar(0));
    moved[i] += Scalar(1);
  }
  CHECK(model.loss_and_gradient(moved, batch, moved_grad, ws) == loss);
  CHECK(moved_grad == grad);
}

/// The batches to compare on: all rows, a block in the middle, one row, a gathered shuffle.
template <class Scalar>
struct SparseAndDense {
  dptrain::SparseDataset<Scalar, dptrain::Label> sparse;
  dptrain::DenseDataset<Scalar, dptrain::Label> dense;
  std::vector<dptrain::Index> shuffled;
  typename dptrain::SparseDataset<Scalar, dptrain::Label>::Buffer sparse_buffer;
  typename dptrain::DenseDataset<Scalar, dptrain::Label>::Buffer dense_buffer;

  SparseAndDense(dptrain::Index rows, dptrain::Index cols, double density, dptrain::Index classes, unsigned seed)
      : sparse(random_sparse<Scalar>(rows, cols, density, classes, seed)),
        dense(dense_copy(sparse)),
        shuffled(static_cast<std::size_t>(rows)),
        sparse_buffer(sparse.make_buffer(rows)),
        dense_buffer(dense.make_buffer(rows)) {
    std::iota(shuffled.begin(), shuffled.end(), dptrain::Index{0});
    std::reverse(shuffled.begin(), shuffled.end());
    std::rotate(shuffled.begin(), shuffled.begin() + rows / 3, shuffled.end());
  }

  template <class F>
  void for_each_batch(F&& f) {
    const dptrain::Index n = sparse.size();
    f(sparse.rows(0, n), dense.rows(0, n));
    f(sparse.rows(n / 4, n / 2), dense.rows(n / 4, n / 2));
    f(sparse.rows(n - 1, 1), dense.rows(n - 1, 1));
    f(sparse.rows(2, 1), dense.rows(2, 1));  // an empty row
    const std::span<const dptrain::Index> some(shuffled.data(), static_cast<std::size_t>(n - 3));
    f(sparse.gather(some, sparse_buffer), dense.gather(some, dense_buffer));
  }
};

}  // namespace test
