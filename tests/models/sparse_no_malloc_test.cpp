// SPDX-License-Identifier: MIT
// After make_workspace and make_buffer, the sparse models and SparseDataset::rows/gather make no heap allocation.
//
// models/no_malloc.hpp counts Eigen's heap allocations (it comes first, before Eigen); Eigen's
// allocations are what it sees. gather() writes into the buffer's std::vectors by index only
// (sparse_dataset_test.cpp checks that their storage never moves).
#include "models/no_malloc.hpp"

#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "dptrain/data/sparse_dataset.hpp"
#include "dptrain/models/sparse_logistic_regression.hpp"
#include "dptrain/models/sparse_softmax_regression.hpp"
#include "models/model_test_support.hpp"
#include "support/sparse_data.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::Vector;
using no_malloc::NoMalloc;

// One step of a worker: gather (or view) a batch, then loss_and_gradient, loss and predict.
template <class M, class D>
long count_allocations(const M& model, const D& data, std::span<const Index> rows, bool gather,
                       typename D::Buffer& buffer, const Vector<typename M::scalar_type>& theta,
                       Vector<typename M::scalar_type>& grad, typename M::workspace_type& ws, Vector<Label>& out) {
  const NoMalloc guard;
  const typename D::batch_type batch =
      gather ? data.gather(rows, buffer) : data.rows(rows.empty() ? 0 : rows.front(), static_cast<Index>(rows.size()));
  model.loss_and_gradient(theta, batch, grad, ws);
  static_cast<void>(model.loss(theta, batch, ws));
  model.predict(theta, batch, out.head(batch.size()), ws);
  return guard.attempts();
}

long count_vector_allocation() {
  const NoMalloc guard;
  Vector<double> v(1000);
  v.setZero();
  return guard.attempts();
}

template <class M>
void require_no_allocation(const M& model, Index classes) {
  using Scalar = typename M::scalar_type;
  const auto data = test::random_sparse<Scalar>(64, 300, 0.05, classes, 401);
  const Vector<Scalar> theta = dptrain::test::random_vector<Scalar>(model.num_parameters(), 0.5, 402);
  const Index max_rows = 32;
  auto ws = model.make_workspace(max_rows);
  auto buffer = data.make_buffer(max_rows);
  Vector<Scalar> grad = Vector<Scalar>::Zero(model.num_parameters());
  Vector<Label> out(max_rows);
  std::vector<Index> order(64);
  std::iota(order.begin(), order.end(), Index{0});
  std::reverse(order.begin(), order.end());
  for (const Index rows : {max_rows, Index{17}, Index{1}, Index{0}}) {
    for (const bool gather : {true, false}) {
      INFO(rows << " rows, " << (gather ? "gathered" : "a view"));
      const std::span<const Index> some(order.data() + (gather ? 0 : 64 - rows), static_cast<std::size_t>(rows));
      CHECK(count_allocations(model, data, some, gather, buffer, theta, grad, ws, out) == 0);
    }
  }
  CHECK(grad.allFinite());
  CHECK(grad.norm() > 0);
}

}  // namespace

TEST_CASE("Sparse no-allocation check: the detector sees Eigen's heap allocations", "[models]") {
  CHECK(count_vector_allocation() > 0);
}

TEMPLATE_TEST_CASE("SparseLogisticRegression: a step allocates nothing", "[models]", float, double) {
  require_no_allocation(dptrain::SparseLogisticRegression<TestType>(300), 2);
}

TEMPLATE_TEST_CASE("SparseSoftmaxRegression: a step allocates nothing", "[models]", float, double) {
  require_no_allocation(dptrain::SparseSoftmaxRegression<TestType>(300, 10), 10);
  require_no_allocation(dptrain::SparseSoftmaxRegression<TestType>(300, 3), 3);
}
