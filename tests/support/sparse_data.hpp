// SPDX-License-Identifier: MIT
// Seeded random sparse data sets for the sparse tests, and their dense copies.
#pragma once

#include <random>
#include <vector>

#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/data/sparse_dataset.hpp"

namespace test {

/// rows × cols, each entry stored with probability `density`, values N(0, 1); every fifth row
/// (from row 2) is left empty; targets uniform in [0, classes).
template <class Scalar>
dptrain::SparseDataset<Scalar, dptrain::Label> random_sparse(dptrain::Index rows, dptrain::Index cols, double density,
                                                             dptrain::Index classes, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution keep(density);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<dptrain::Label> label(0, static_cast<dptrain::Label>(classes - 1));
  std::vector<Eigen::Triplet<Scalar, dptrain::Index>> entries;
  dptrain::SparseDataset<Scalar, dptrain::Label> data;
  data.targets.resize(rows);
  for (dptrain::Index i = 0; i < rows; ++i) {
    data.targets[i] = label(rng);
    if (i % 5 == 2) continue;
    for (dptrain::Index j = 0; j < cols; ++j)
      if (keep(rng)) entries.emplace_back(i, j, static_cast<Scalar>(normal(rng)));
  }
  data.features.resize(rows, cols);
  data.features.setFromTriplets(entries.begin(), entries.end());
  data.features.makeCompressed();
  return data;
}

/// The same samples as a dense data set.
template <class Scalar, class Target>
dptrain::DenseDataset<Scalar, Target> dense_copy(const dptrain::SparseDataset<Scalar, Target>& sparse) {
  return {dptrain::RowMatrix<Scalar>(sparse.features.toDense()), sparse.targets};
}

}  // namespace test
