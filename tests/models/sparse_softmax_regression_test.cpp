// SPDX-License-Identifier: MIT
// Tests of SparseSoftmaxRegression: equal to SoftmaxRegression on the dense copy, gradient check, predict,
// validation, and training with DataParallelTrainer.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "dptrain/dptrain.hpp"
#include "dptrain/models/sparse_softmax_regression.hpp"
#include "models/sparse_model_test_support.hpp"
#include "support/data.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::RowMatrix;
using dptrain::SparseSoftmaxRegression;
using dptrain::Vector;

static_assert(dptrain::Model<SparseSoftmaxRegression<float>> && dptrain::Model<SparseSoftmaxRegression<double>>);

// n samples of k classes in d dimensions: class c owns features [c·d/k, (c+1)·d/k) and each
// sample stores a few of its own class's features (positive) and a few random ones (noise), so
// the classes are linearly separable and the rows sparse.
template <class Scalar>
dptrain::SparseDataset<Scalar, Label> separable(Index n, Index d, Index k, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<Index> feature(0, d - 1);
  std::uniform_real_distribution<double> value(0.5, 1.5);
  std::vector<Eigen::Triplet<Scalar, Index>> entries;
  dptrain::SparseDataset<Scalar, Label> data;
  data.targets.resize(n);
  const Index block = d / k;
  for (Index i = 0; i < n; ++i) {
    const auto c = static_cast<Label>(i % k);
    data.targets[i] = c;
    std::uniform_int_distribution<Index> own(c * block, (c + 1) * block - 1);
    std::vector<bool> used(static_cast<std::size_t>(d), false);
    for (int e = 0; e < 4; ++e) {
      const Index j = e < 3 ? own(rng) : feature(rng);
      if (used[static_cast<std::size_t>(j)]) continue;
      used[static_cast<std::size_t>(j)] = true;
      entries.emplace_back(i, j, static_cast<Scalar>(e < 3 ? value(rng) : 0.3 * value(rng)));
    }
  }
  data.features.resize(n, d);
  data.features.setFromTriplets(entries.begin(), entries.end());
  return data;
}

}  // namespace

TEMPLATE_TEST_CASE("SparseSoftmaxRegression: loss and gradient equal SoftmaxRegression on the dense copy", "[models]",
                   float, double) {
  test::SparseAndDense<TestType> data(43, 17, 0.3, 4, 21);
  const SparseSoftmaxRegression<TestType> sparse(17, 4);
  const dptrain::SoftmaxRegression<TestType> dense(17, 4);
  for (const double scale : {0.0, 0.5, 3.0}) {
    const Vector<TestType> theta = dptrain::test::random_vector<TestType>(18 * 4, scale, 22);
    data.for_each_batch([&](const auto& s, const auto& d) { test::require_matches_dense(sparse, dense, theta, s, d); });
  }
}

TEMPLATE_TEST_CASE("SparseSoftmaxRegression: gradient_support names every coordinate a batch touches", "[models]",
                   float, double) {
  static_assert(dptrain::SparseGradient<SparseSoftmaxRegression<TestType>>);
  test::SparseAndDense<TestType> data(43, 17, 0.2, 4, 23);
  const SparseSoftmaxRegression<TestType> model(17, 4);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(18 * 4, 0.5, 24);
  data.for_each_batch([&](const auto& s, const auto&) { test::require_support_holds(model, theta, s, 4, 4); });
  test::require_support_holds(model, theta, data.sparse.rows(0, 0), 4, 4);
}

TEMPLATE_TEST_CASE("SparseSoftmaxRegression: the gradient passes gradient_check", "[models]", float, double) {
  const auto data = test::random_sparse<TestType>(8, 7, 0.4, 3, 23);
  const SparseSoftmaxRegression<TestType> model(7, 3);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(24, 0.7, 24);
  dptrain::test::require_gradient_check_passes(model, theta, data.rows(0, 8));
  dptrain::test::require_adds_into_gradient(model, theta, data.rows(0, 8));
}

TEMPLATE_TEST_CASE("SparseSoftmaxRegression: predict is the argmax of the dense scores", "[models]", float, double) {
  test::SparseAndDense<TestType> data(50, 13, 0.35, 5, 25);
  const SparseSoftmaxRegression<TestType> model(13, 5);
  const Vector<TestType> theta = dptrain::test::random_vector<TestType>(14 * 5, 1.0, 26);
  auto ws = model.make_workspace(50);
  Vector<Label> predicted(50);
  model.predict(theta, data.sparse.rows(0, 50), predicted, ws);
  const Eigen::Map<const RowMatrix<TestType>> w(theta.data(), 13, 5);
  const RowMatrix<TestType> z = (data.dense.features * w).rowwise() + theta.tail(5).transpose();
  for (Index i = 0; i < 50; ++i) {
    Index best = 0;
    z.row(i).maxCoeff(&best);
    CHECK(predicted[i] == best);
  }
  // A gathered batch predicts the same rows alike.
  const std::vector<Index> rows{7, 3, 49, 2};
  Vector<Label> some(4);
  model.predict(theta, data.sparse.gather(rows, data.sparse_buffer), some, ws);
  for (Index i = 0; i < 4; ++i) CHECK(some[i] == predicted[rows[static_cast<std::size_t>(i)]]);
  Vector<Label> wrong(5);
  CHECK_THROWS_WITH(model.predict(theta, data.sparse.rows(0, 4), wrong, ws),
                    Catch::Contains("SparseSoftmaxRegression::predict: the batch has 4 rows but the output has 5"));
}

TEST_CASE("SparseSoftmaxRegression: validate names bad labels, feature counts and non-finite values", "[models]") {
  auto data = test::random_sparse<double>(20, 6, 0.5, 3, 27);
  const SparseSoftmaxRegression<double> model(6, 3);
  model.validate(data.rows(0, 20));
  CHECK_THROWS_WITH(SparseSoftmaxRegression<double>(5, 3).validate(data.rows(0, 20)),
                    Catch::Contains("SparseSoftmaxRegression: expects 5 features per sample, the data have 6"));
  data.targets[9] = 3;
  CHECK_THROWS_WITH(model.validate(data.rows(0, 20)),
                    Catch::Contains("label 3 in row 9 is out of range, expected 0 <= label < 3"));
  data.targets[9] = -1;
  CHECK_THROWS_AS(model.validate(data.rows(0, 20)), dptrain::invalid_argument);
  data.targets[9] = 0;
  const Index last = data.features.nonZeros() - 1;
  data.features.valuePtr()[last] = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(model.validate(data.rows(0, 20)),
                    Catch::Contains("feature " + std::to_string(data.features.innerIndexPtr()[last]) +
                                    " of row 19 is not finite (inf)"));
  CHECK_THROWS_AS(SparseSoftmaxRegression<double>(4, 1), dptrain::invalid_argument);
}

TEST_CASE("SparseSoftmaxRegression: an empty batch adds nothing and returns 0", "[models]") {
  const auto data = test::random_sparse<float>(6, 4, 0.5, 3, 28);
  const SparseSoftmaxRegression<float> model(4, 3);
  const Vector<float> theta = dptrain::test::random_vector<float>(15, 1.0, 29);
  for (const Index max_rows : {Index{0}, Index{3}}) {
    auto ws = model.make_workspace(max_rows);
    Vector<float> grad = Vector<float>::LinSpaced(15, -1.0f, 1.0f);
    const Vector<float> before = grad;
    CHECK(model.loss_and_gradient(theta, data.rows(6, 0), grad, ws) == 0.0f);
    CHECK(model.loss(theta, data.rows(0, 0), ws) == 0.0f);
    CHECK(grad == before);
  }
}

TEST_CASE("SparseSoftmaxRegression: DataParallelTrainer learns it and matches dense training", "[models]") {
  const auto data = separable<double>(150, 30, 3, 31);
  const auto dense_data = test::dense_copy(data);
  const SparseSoftmaxRegression<double> model(30, 3);
  const dptrain::SoftmaxRegression<double> dense_model(30, 3);
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 16, .epochs = 8, .shuffle = false};

  Vector<double> theta = model.init_parameters();
  auto ws = model.make_workspace(150);
  const double before = model.loss(theta, data.rows(0, 150), ws) / 150;
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.5}).fit(model, theta, data);
  const double after = model.loss(theta, data.rows(0, 150), ws) / 150;
  CHECK(before == Approx(std::log(3.0)));
  CHECK(after < 0.1 * before);
  REQUIRE(report.epoch_loss.size() == 8);
  CHECK(report.epoch_loss.back() < report.epoch_loss.front());
  Vector<Label> predicted(150);
  model.predict(theta, data.rows(0, 150), predicted, ws);
  CHECK((predicted.array() == data.targets.array()).all());

  Vector<double> dense_theta = dense_model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.5}).fit(dense_model, dense_theta, dense_data);
  CHECK(test::relative_error(theta, dense_theta) <= 1e-12);

  // With shuffling the workers gather into their buffers; still the dense result, and 1 thread = 3.
  dptrain::TrainerOptions shuffled = options;
  shuffled.shuffle = true;
  shuffled.seed = 5;
  Vector<double> sparse_shuffled = model.init_parameters(), dense_shuffled = dense_model.init_parameters();
  dptrain::DataParallelTrainer(shuffled, dptrain::Sgd{.lr = 0.5}).fit(model, sparse_shuffled, data);
  dptrain::DataParallelTrainer(shuffled, dptrain::Sgd{.lr = 0.5}).fit(dense_model, dense_shuffled, dense_data);
  CHECK(test::relative_error(sparse_shuffled, dense_shuffled) <= 1e-12);
  shuffled.threads = 1;
  Vector<double> one = model.init_parameters();
  dptrain::DataParallelTrainer(shuffled, dptrain::Sgd{.lr = 0.5}).fit(model, one, data);
  CHECK(test::relative_error(sparse_shuffled, one) <= 1e-12);
}

TEST_CASE("SparseSoftmaxRegression: bias_ranges is SoftmaxRegression's", "[models]") {
  static_assert(dptrain::DeclaresBiases<SparseSoftmaxRegression<float>>);
  CHECK(SparseSoftmaxRegression<float>(9, 4).bias_ranges() == dptrain::SoftmaxRegression<float>(9, 4).bias_ranges());
}
