// SPDX-License-Identifier: MIT
// Hand-built data for the evaluation tests: a threshold classifier whose predictions are known.
#pragma once

#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/models/logistic_regression.hpp"

namespace test {

/// 8 one-feature samples, repeated `copies` times. With θ = (1, 0) LogisticRegression predicts
/// x > 0: predictions 0 0 1 1 1 0 1 0 against labels 0 1 1 1 0 0 1 1, so 5 of every 8 are
/// right and the confusion matrix is copies · [[2, 1], [2, 3]].
template <class Scalar>
dptrain::DenseDataset<Scalar, dptrain::Label> threshold_data(dptrain::Index copies) {
  const double x[8] = {-2, -1, 1, 2, 3, -3, 0.5, -0.5};
  const dptrain::Label y[8] = {0, 1, 1, 1, 0, 0, 1, 1};
  dptrain::DenseDataset<Scalar, dptrain::Label> data{dptrain::RowMatrix<Scalar>(8 * copies, 1),
                                                     dptrain::Vector<dptrain::Label>(8 * copies)};
  for (dptrain::Index i = 0; i < 8 * copies; ++i) {
    data.features(i, 0) = static_cast<Scalar>(x[i % 8]);
    data.targets[i] = y[i % 8];
  }
  return data;
}

}  // namespace test
