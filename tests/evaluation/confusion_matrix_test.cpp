// SPDX-License-Identifier: MIT
// confusion_matrix(): exact counts, sums to n, trace / n is the accuracy, any thread count.
#include <catch2/catch.hpp>

#include "dptrain/evaluation/accuracy.hpp"
#include "dptrain/evaluation/confusion_matrix.hpp"
#include "dptrain/models/mlp.hpp"
#include "evaluation/evaluation_data.hpp"
#include "support/data.hpp"

using dptrain::CountMatrix;
using dptrain::Index;
using dptrain::Vector;

TEMPLATE_TEST_CASE("confusion_matrix: a threshold classifier gives known counts", "[evaluation]", float, double) {
  const dptrain::LogisticRegression<TestType> model(1);
  const Vector<TestType> theta{{TestType(1), TestType(0)}};
  const Index threads = GENERATE(1, 2, 3, 7);
  const Index copies = GENERATE(1, 1000);
  const CountMatrix cm = dptrain::confusion_matrix(model, theta, test::threshold_data<TestType>(copies), 2, threads);
  CHECK(cm == CountMatrix{{2 * copies, copies}, {2 * copies, 3 * copies}});
}

TEST_CASE("confusion_matrix: sums to n and its trace over n is the accuracy", "[evaluation]") {
  const auto data = test::cluster_data<double>(2500, 5, 3, 21, 1.0);
  const dptrain::Mlp<double> model({5, 8, 3});
  const Vector<double> theta = model.init_parameters(4);
  const CountMatrix one = dptrain::confusion_matrix(model, theta, data, 3, 1);
  CHECK(one.sum() == 2500);
  CHECK(one.rowwise().sum() == (dptrain::Vector<Index>{{834, 833, 833}}));  // labels i mod 3
  CHECK(static_cast<double>(one.trace()) / 2500.0 == dptrain::accuracy(model, theta, data, 1));
  const Index threads = GENERATE(2, 3, 7);
  CHECK(dptrain::confusion_matrix(model, theta, data, 3, threads) == one);
}

TEST_CASE("confusion_matrix: a label or prediction outside the classes throws, naming the row", "[evaluation]") {
  const dptrain::LogisticRegression<double> model(1);
  const Vector<double> theta{{1.0, 0.0}};
  auto data = test::threshold_data<double>(100);
  CHECK_THROWS_WITH(dptrain::confusion_matrix(model, theta, data, 1, 3), Catch::Contains("expected 0 <= class < 1"));
  auto zeros = data;
  zeros.targets.setZero();
  CHECK_THROWS_WITH(dptrain::confusion_matrix(model, theta, zeros, 1, 1),
                    Catch::Contains("row 2 is predicted as class 1, expected 0 <= class < 1"));
  data.targets[700] = 5;
  data.targets[701] = 5;
  CHECK_THROWS_WITH(dptrain::confusion_matrix(model, theta, data, 2, 1), Catch::Contains("row 700 has label 5"));
  CHECK_THROWS_WITH(dptrain::confusion_matrix(model, theta, data, 0, 1), Catch::Contains("classes must be at least 1"));
  CHECK(dptrain::confusion_matrix(model, theta, test::threshold_data<double>(0), 2, 3) == CountMatrix::Zero(2, 2));
}
