// SPDX-License-Identifier: MIT
// After make_workspace, the models' loss_and_gradient and loss make no heap allocation.
//
// How: models/no_malloc.hpp counts Eigen's heap allocations (it comes first, before Eigen). Two
// canaries show that the counter does see allocations: a vector, and the packing buffers of a
// matrix product too large for Eigen's stack buffers.
#include "models/no_malloc.hpp"

#include <catch2/catch.hpp>

#include <type_traits>

#include "dptrain/models/linear_regression.hpp"
#include "dptrain/models/logistic_regression.hpp"
#include "dptrain/models/mlp.hpp"
#include "dptrain/models/softmax_regression.hpp"
#include "models/model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::RowMatrix;
using dptrain::Vector;
using no_malloc::NoMalloc;

struct Counts {
  long loss_and_gradient = -1;
  long loss = -1;
};

template <class M>
Counts count_allocations(const M& model, const Vector<typename M::scalar_type>& theta,
                         const typename M::batch_type& batch, Vector<typename M::scalar_type>& grad,
                         typename M::workspace_type& ws) {
  Counts counts;
  {
    const NoMalloc guard;
    model.loss_and_gradient(theta, batch, grad, ws);
    counts.loss_and_gradient = guard.attempts();
  }
  {
    const NoMalloc guard;
    static_cast<void>(model.loss(theta, batch, ws));
    counts.loss = guard.attempts();
  }
  return counts;
}

// Full, partial and empty batches, after one make_workspace for the largest.
template <class M>
void require_no_allocation(const M& model, const typename M::batch_type& batch) {
  using Scalar = typename M::scalar_type;
  const Vector<Scalar> theta = dptrain::test::random_vector<Scalar>(model.num_parameters(), 0.5, 301);
  typename M::workspace_type ws = model.make_workspace(batch.size());
  Vector<Scalar> grad = Vector<Scalar>::Zero(model.num_parameters());
  for (const Index rows : {batch.size(), batch.size() / 2 + 1, Index{1}, Index{0}}) {
    const typename M::batch_type part{batch.features.topRows(rows), batch.targets.head(rows)};
    const Counts counts = count_allocations(model, theta, part, grad, ws);
    INFO(rows << " rows");
    CHECK(counts.loss_and_gradient == 0);
    CHECK(counts.loss == 0);
  }
  CHECK(grad.allFinite());
  CHECK(grad.norm() > 0);
}

template <class Scalar>
long count_vector_allocation() {
  const NoMalloc guard;
  Vector<Scalar> v(1000);
  v.setZero();
  return guard.attempts();
}

template <class Scalar>
long count_product_allocation(const RowMatrix<Scalar>& a, const RowMatrix<Scalar>& b, RowMatrix<Scalar>& c) {
  const NoMalloc guard;
  Eigen::Map<RowMatrix<Scalar>> out(c.data(), c.rows(), c.cols());
  out.noalias() += a.transpose() * b;  // the shape of SoftmaxRegression's ∇W += Xᵀ(P − Y)
  return guard.attempts();
}

}  // namespace

TEMPLATE_TEST_CASE("No-allocation check: the detector sees Eigen's heap allocations", "[models]", float, double) {
  CHECK(count_vector_allocation<TestType>() > 0);
  // 512 × 512 operands: the product's packing buffers exceed EIGEN_STACK_ALLOCATION_LIMIT and
  // come from the heap.
  const RowMatrix<TestType> a = RowMatrix<TestType>::Ones(512, 512);
  RowMatrix<TestType> c = RowMatrix<TestType>::Zero(512, 512);
  CHECK(count_product_allocation<TestType>(a, a, c) > 0);
  CHECK(c(3, 4) == TestType(512));
}

TEMPLATE_TEST_CASE("LinearRegression: loss_and_gradient and loss allocate nothing", "[models]", float, double) {
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(32, 20, 311);
  const Vector<TestType> y = dptrain::test::random_vector<TestType>(32, 1.0, 312);
  require_no_allocation(dptrain::LinearRegression<TestType>(20), {x, y});
}

TEMPLATE_TEST_CASE("LogisticRegression: loss_and_gradient and loss allocate nothing", "[models]", float, double) {
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(32, 20, 321);
  const Vector<Label> y = dptrain::test::random_labels(32, 2, 322);
  require_no_allocation(dptrain::LogisticRegression<TestType>(20), {x, y});
}

TEMPLATE_TEST_CASE("SoftmaxRegression: loss_and_gradient and loss allocate nothing", "[models]", float, double) {
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(32, 20, 331);
  const Vector<Label> y = dptrain::test::random_labels(32, 5, 332);
  require_no_allocation(dptrain::SoftmaxRegression<TestType>(20, 5), {x, y});
  // More classes than the narrow kernels take: Eigen's GEMM on the workspace's buffers.
  const Index wide = dptrain::detail::narrow::max_columns + 1;
  const Vector<Label> many = dptrain::test::random_labels(32, wide, 333);
  require_no_allocation(dptrain::SoftmaxRegression<TestType>(20, wide), {x, many});
}

TEMPLATE_TEST_CASE("Mlp: loss_and_gradient and loss allocate nothing", "[models]", float, double) {
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(32, 20, 341);
  const Vector<Label> y = dptrain::test::random_labels(32, 5, 342);
  require_no_allocation(dptrain::Mlp<TestType>({20, 24, 16, 5}), {x, y});
  require_no_allocation(dptrain::Mlp<TestType>({20, 5}), {x, y});
}

TEMPLATE_TEST_CASE("Models at MNIST scale allocate nothing either", "[models]", float, double) {
  // Products this large pack more than EIGEN_STACK_ALLOCATION_LIMIT: the packing buffers must
  // come from the workspace (detail/gemm.hpp), not from malloc on each call.
  const RowMatrix<TestType> x = dptrain::test::random_features<TestType>(256, 784, 351);
  const Vector<Label> y = dptrain::test::random_labels(256, 10, 352);
  require_no_allocation(dptrain::SoftmaxRegression<TestType>(784, 10), {x, y});
  require_no_allocation(dptrain::Mlp<TestType>({784, 256, 10}), {x, y});
  require_no_allocation(dptrain::Mlp<TestType>({784, 128, 64, 10}), {x, y});
  if constexpr (std::is_same_v<TestType, float>)
    require_no_allocation(dptrain::Mlp<float>({784, 256, 10}, dptrain::Precision::bf16), {x, y});
  const Vector<Label> binary = dptrain::test::random_labels(256, 2, 353);
  require_no_allocation(dptrain::LogisticRegression<TestType>(784), {x, binary});
}
