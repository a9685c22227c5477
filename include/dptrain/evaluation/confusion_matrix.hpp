// SPDX-License-Identifier: MIT
// confusion_matrix: counts of (true class, predicted class) pairs, computed data-parallel.
#pragma once

#include <concepts>
#include <string>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/evaluation.hpp"

namespace dptrain {

/// A classes × classes matrix of counts.
using CountMatrix = Eigen::Matrix<Index, Eigen::Dynamic, Eigen::Dynamic>;

/**
 * @brief The confusion matrix of a classifier on `data`: entry (i, j) counts the samples of
 * true class i that the model predicts as class j.
 *
 * The matrix sums to n, and its trace / n is accuracy(). Runs `model.predict` on chunks of at
 * most 1024 rows on every thread of `team`; each thread counts into its own matrix and the
 * matrices are summed in thread order afterwards (integer counts: the same for any thread count).
 *
 * @tparam M a Predictor whose target_type is an integer label (a classifier)
 * @tparam D a data set (DatasetOf) of the model's batch_type;
 *           the batch has `targets` indexable by row
 * @param classes k ≥ 1, the number of classes; labels and predictions must lie in [0, k)
 * @param team    the threads: a count (default: OpenMP's default) or a hook's `ctx.team`
 * @return a k × k matrix of counts (rows: true class, columns: predicted class); all zero for
 *         an empty data set
 * @throws dptrain::invalid_argument for classes < 1, a label or a prediction
 *         outside [0, k) (naming the row), or what predict throws
 *
 * @code
 * dptrain::CountMatrix cm = dptrain::confusion_matrix(model, theta, test_data, 10);
 * @endcode
 */
template <Predictor M, class D>
requires std::integral<typename M::target_type>
[[nodiscard]] CountMatrix confusion_matrix(const M& model, ConstVectorRef<typename M::scalar_type> theta, const D& data,
                                           Index classes, const ThreadTeam& team = {}) {
  using Target = typename M::target_type;
  if (classes < 1)
    throw invalid_argument("dptrain::confusion_matrix: classes must be at least 1, got " + std::to_string(classes));
  const detail::evaluation::Chunking chunks = detail::evaluation::chunking(data.size());
  std::vector<CountMatrix> partial(static_cast<std::size_t>(team.size()), CountMatrix::Zero(classes, classes));
  detail::evaluation::for_each_chunk<true>(
      model, data, team, chunks,
      [&](Index rank, Index chunk, const auto& batch, typename M::workspace_type& ws, Eigen::Ref<Vector<Target>> out) {
        model.predict(theta, batch, out, ws);
        CountMatrix& counts = partial[static_cast<std::size_t>(rank)];
        for (Index i = 0; i < batch.size(); ++i) {
          const auto truth = static_cast<Index>(batch.targets[i]);
          const auto predicted = static_cast<Index>(out[i]);
          if (truth < 0 || truth >= classes || predicted < 0 || predicted >= classes)
            throw invalid_argument("dptrain::confusion_matrix: row " + std::to_string(chunk * chunks.rows + i) +
                                   (truth < 0 || truth >= classes
                                        ? " has label " + std::to_string(truth)
                                        : " is predicted as class " + std::to_string(predicted)) +
                                   ", expected 0 <= class < " + std::to_string(classes));
          ++counts(truth, predicted);
        }
      });
  CountMatrix total = CountMatrix::Zero(classes, classes);
  for (const CountMatrix& counts : partial) total += counts;  // thread order
  return total;
}

}  // namespace dptrain
