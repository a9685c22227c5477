// SPDX-License-Identifier: MIT
// accuracy(): exact counts on hand-built data, the same result for any thread count.
#include <catch2/catch.hpp>

#include "dptrain/evaluation/accuracy.hpp"
#include "dptrain/evaluation/confusion_matrix.hpp"
#include "dptrain/models/softmax_regression.hpp"
#include "evaluation/evaluation_data.hpp"
#include "support/data.hpp"

using dptrain::Index;
using dptrain::Vector;

TEMPLATE_TEST_CASE("accuracy: a threshold classifier gets exactly 5 of 8 right", "[evaluation]", float, double) {
  const dptrain::LogisticRegression<TestType> model(1);
  const Vector<TestType> theta{{TestType(1), TestType(0)}};
  const Index threads = GENERATE(1, 2, 3, 7);
  const Index copies = GENERATE(1, 3, 1000);  // 8 rows: one chunk; 8000 rows: many chunks
  CHECK(dptrain::accuracy(model, theta, test::threshold_data<TestType>(copies), threads) == 5.0 / 8.0);
}

TEST_CASE("accuracy: the same value for any thread count on generated data", "[evaluation]") {
  const auto data = test::cluster_data<float>(3001, 6, 4, 11, 1.0);
  const dptrain::SoftmaxRegression<float> model(6, 4);
  const Vector<float> theta = Vector<float>::LinSpaced(model.num_parameters(), -1.0f, 1.0f);
  const double one = dptrain::accuracy(model, theta, data, 1);
  CHECK(one > 0);
  CHECK(one < 1);
  const Index threads = GENERATE(2, 3, 7);
  CHECK(dptrain::accuracy(model, theta, data, threads) == one);
  const dptrain::CountMatrix cm = dptrain::confusion_matrix(model, theta, data, 4, threads);
  CHECK(static_cast<double>(cm.trace()) / 3001.0 == one);
}

TEST_CASE("accuracy: bad arguments throw invalid_argument", "[evaluation]") {
  const dptrain::LogisticRegression<double> model(1);
  const auto data = test::threshold_data<double>(2);
  CHECK_THROWS_WITH(dptrain::accuracy(model, Vector<double>::Zero(2), data, 0),
                    Catch::Contains("threads must be at least 1, got 0"));
  CHECK_THROWS_WITH(dptrain::accuracy(model, Vector<double>::Zero(3), data, 2), Catch::Contains("theta has 3"));
  const auto empty = test::threshold_data<double>(0);
  CHECK_THROWS_WITH(dptrain::accuracy(model, Vector<double>::Zero(2), empty, 2),
                    Catch::Contains("the data set is empty"));
}
