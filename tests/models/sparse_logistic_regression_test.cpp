// SPDX-License-Identifier: MIT
// Tests of SparseLogisticRegression: equal to LogisticRegression on the dense copy, gradient check, predict,
// validation.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "dptrain/models/logistic_regression.hpp"
#include "dptrain/models/sparse_logistic_regression.hpp"
#include "models/sparse_model_test_support.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::SparseLogisticRegression;
using dptrain::Vector;

static_assert(dptrain::Model<SparseLogisticRegression<float>> && dptrain::Model<SparseLogisticRegression<double>>);
static_assert(dptrain::DatasetOf<dptrain::SparseDataset<float, Label>, SparseLogisticRegression<float>::batch_type>);

}  // namespace

TEMPLATE_TEST_CASE("SparseLogisticRegression: loss and gradient equal LogisticRegression on the dense copy", "[models]",
                   float, double) {
  test::SparseAndDense<TestType> data(37, 15, 0.3, 2, 11);
  const SparseLogisticRegression<TestType> sparse(15);
  const dptrain::LogisticRegression<TestType> dense(15);
  for (const double scale : {0.0, 0.5, 3.0}) {
    const Vector<TestType> theta = dptrain::test::random_vector<TestType>(16, scale, 12);
    data.for_each_batch([&](const auto& s, const auto& d) { test::require_matches_dense(sparse, dense, theta, s, d); });
  }
}

TEMPLATE_TEST_CASE("SparseLogisticRegression: gradient_support names every coordinate a batch touches", "[models]",
                   float, double) {
  static_assert(dptrain::SparseGradient<SparseLogisticRegression<TestType>>);
  test::SparseAndDense<TestType> data(37, 15, 0.2, 2, 17);
  const SparseLogisticRegression<TestType> model(15);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(16, 0.5, 18);
  data.for_each_batch([&](const auto& s, const auto&) { test::require_support_holds(model, theta, s, 1, 1); });
  test::require_support_holds(model, theta, data.sparse.rows(0, 0), 1, 1);
}

TEMPLATE_TEST_CASE("SparseLogisticRegression: the gradient passes gradient_check", "[models]", float, double) {
  const auto data = test::random_sparse<TestType>(8, 10, 0.4, 2, 13);
  const SparseLogisticRegression<TestType> model(10);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(11, 0.7, 14);
  dptrain::test::require_gradient_check_passes(model, theta, data.rows(0, 8));
  dptrain::test::require_adds_into_gradient(model, theta, data.rows(0, 8));
}

TEMPLATE_TEST_CASE("SparseLogisticRegression: predict is 1 exactly where the dense score is positive", "[models]",
                   float, double) {
  test::SparseAndDense<TestType> data(41, 12, 0.35, 2, 15);
  const SparseLogisticRegression<TestType> model(12);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(13, 1.0, 16);
  auto ws = model.make_workspace(41);
  Vector<Label> predicted(41);
  model.predict(theta, data.sparse.rows(0, 41), predicted, ws);
  const Vector<TestType> z = (data.dense.features * theta.head(12)).array() + theta[12];
  for (Index i = 0; i < 41; ++i) CHECK(predicted[i] == (z[i] > TestType(0) ? 1 : 0));
  // Targets are not needed.
  const Vector<Label> no_targets(0);
  const typename SparseLogisticRegression<TestType>::batch_type unlabelled{data.sparse.rows(0, 41).features,
                                                                           no_targets};
  Vector<Label> again(41);
  model.predict(theta, unlabelled, again, ws);
  CHECK(again == predicted);
  // An empty batch writes nothing.
  Vector<Label> none(0);
  model.predict(theta, data.sparse.rows(0, 0), none, ws);
  Vector<Label> wrong(3);
  CHECK_THROWS_WITH(model.predict(theta, data.sparse.rows(0, 4), wrong, ws),
                    Catch::Contains("predict: the batch has 4 rows but the output has 3 entries"));
}

TEST_CASE("SparseLogisticRegression: validate names bad labels, feature counts and non-finite values", "[models]") {
  auto data = test::random_sparse<double>(20, 6, 0.5, 2, 17);
  const SparseLogisticRegression<double> model(6);
  model.validate(data.rows(0, 20));
  CHECK_THROWS_WITH(SparseLogisticRegression<double>(7).validate(data.rows(0, 20)),
                    Catch::Contains("expects 7 features per sample, the data have 6"));
  data.targets[4] = 2;
  CHECK_THROWS_AS(model.validate(data.rows(0, 20)), dptrain::invalid_argument);
  CHECK_THROWS_WITH(model.validate(data.rows(0, 20)), Catch::Contains("label 2 in row 4 is out of range"));
  data.targets[4] = 1;
  REQUIRE(data.features.nonZeros() > 3);
  data.features.valuePtr()[3] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(model.validate(data.rows(0, 20)), Catch::Contains("is not finite (nan)"));
  // A view that starts after the bad value does not see it.
  Index row = 0;
  while (data.features.outerIndexPtr()[row + 1] <= 3) ++row;
  model.validate(data.rows(row + 1, 20 - row - 1));
  CHECK_THROWS_AS(SparseLogisticRegression<double>(0), dptrain::invalid_argument);
}

TEST_CASE("SparseLogisticRegression: empty batches and bad calls", "[models]") {
  const auto data = test::random_sparse<double>(10, 5, 0.5, 2, 18);
  const SparseLogisticRegression<double> model(5);
  const Vector<double> theta = dptrain::test::random_vector<double>(6, 1.0, 19);
  auto ws = model.make_workspace(4);
  Vector<double> grad = Vector<double>::LinSpaced(6, -1.0, 1.0);
  const Vector<double> before = grad;
  CHECK(model.loss_and_gradient(theta, data.rows(3, 0), grad, ws) == 0.0);
  CHECK(grad == before);
  CHECK_THROWS_WITH(model.loss(theta, data.rows(0, 5), ws), Catch::Contains("the workspace was made for at most 4"));
  const Vector<double> short_theta = theta.head(5);
  CHECK_THROWS_WITH(model.loss(short_theta, data.rows(0, 2), ws), Catch::Contains("theta has 5"));
  Vector<double> long_grad(7);
  CHECK_THROWS_WITH(model.loss_and_gradient(theta, data.rows(0, 2), long_grad, ws),
                    Catch::Contains("the gradient has 7"));
  CHECK_THROWS_AS(model.make_workspace(-1), dptrain::invalid_argument);
}

TEST_CASE("SparseLogisticRegression: bias_ranges is LogisticRegression's", "[models]") {
  static_assert(dptrain::DeclaresBiases<SparseLogisticRegression<double>>);
  CHECK(SparseLogisticRegression<double>(9).bias_ranges() == dptrain::LogisticRegression<double>(9).bias_ranges());
}
