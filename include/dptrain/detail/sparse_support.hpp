// SPDX-License-Identifier: MIT
// Internals of the sparse models: the CSR loops (Z = XW, ∇W += XᵀD) and the non-finite value check.
#pragma once

#include <cmath>
#include <string>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/batch.hpp"
#include "dptrain/detail/model_support.hpp"

namespace dptrain::detail::sparse {

/// Throws at the first non-finite stored value, naming its row and column.
template <class Scalar>
void check_finite_features(const char* model, const Eigen::Map<const SparseRowMatrix<Scalar>>& x) {
  const Index* outer = x.outerIndexPtr();
  const Index* inner = x.innerIndexPtr();
  const Scalar* values = x.valuePtr();
  for (Index r = 0; r < x.rows(); ++r)
    for (Index k = outer[r]; k < outer[r + 1]; ++k)
      if (!std::isfinite(values[k]))
        throw invalid_argument(std::string("dptrain::") + model + ": feature " + std::to_string(inner[k]) + " of row " +
                               std::to_string(r) + " is not finite (" +
                               models::model_value_text(static_cast<double>(values[k])) + ")");
}

/// Z += X·W for CSR X (m × d) and row-major W (d × k): row r of Z gains v·W(j, :) per entry (j, v).
template <class Scalar, class ZMatrix, class WMatrix>
void add_product(ZMatrix& z, const Eigen::Map<const SparseRowMatrix<Scalar>>& x, const WMatrix& w) {
  const Index* outer = x.outerIndexPtr();
  const Index* inner = x.innerIndexPtr();
  const Scalar* values = x.valuePtr();
  for (Index r = 0; r < x.rows(); ++r)
    for (Index k = outer[r]; k < outer[r + 1]; ++k) z.row(r) += values[k] * w.row(inner[k]);
}

/// G += Xᵀ·D for CSR X (m × d) and row-major D (m × k): row j of G gains v·D(r, :) per entry (j, v) of row r.
template <class Scalar, class GMatrix, class DMatrix>
void add_transposed_product(GMatrix& g, const Eigen::Map<const SparseRowMatrix<Scalar>>& x, const DMatrix& d) {
  const Index* outer = x.outerIndexPtr();
  const Index* inner = x.innerIndexPtr();
  const Scalar* values = x.valuePtr();
  for (Index r = 0; r < x.rows(); ++r)
    for (Index k = outer[r]; k < outer[r + 1]; ++k) g.row(inner[k]) += values[k] * d.row(r);
}

}  // namespace dptrain::detail::sparse
