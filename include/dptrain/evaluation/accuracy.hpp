// SPDX-License-Identifier: MIT
// accuracy: the fraction of samples a classifier labels correctly, computed data-parallel.
#pragma once

#include <concepts>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/evaluation.hpp"

namespace dptrain {

/**
 * @brief The fraction of the samples of `data` whose predicted class equals their label.
 *
 * Runs `model.predict` on chunks of at most 1024 rows on every thread of `team`, each with its
 * own workspace and prediction buffer (allocated once per call); chunks are assigned statically
 * and the per-chunk counts are integers, so the result is the same for any thread count.
 *
 * @tparam M a Predictor whose target_type is an integer label (a classifier)
 * @tparam D a data set (DatasetOf) of the model's batch_type;
 *           the batch has `targets` indexable by row
 * @param theta   the parameters, of length model.num_parameters()
 * @param team    the threads: a count (default: OpenMP's default) or a hook's `ctx.team`
 * @return correct / n, in [0, 1]
 * @throws dptrain::invalid_argument for an empty data set, or what predict throws
 *         (θ of the wrong length, data with the wrong feature count)
 *
 * @code
 * double acc = dptrain::accuracy(model, theta, test_data, 4);
 * @endcode
 */
template <Predictor M, class D>
requires std::integral<typename M::target_type>
[[nodiscard]] double accuracy(const M& model, ConstVectorRef<typename M::scalar_type> theta, const D& data,
                              const ThreadTeam& team = {}) {
  using Target = typename M::target_type;
  const Index n = data.size();
  if (n == 0) throw invalid_argument("dptrain::accuracy: the data set is empty");
  const detail::evaluation::Chunking chunks = detail::evaluation::chunking(n);
  std::vector<Index> correct(static_cast<std::size_t>(chunks.count), 0);
  detail::evaluation::for_each_chunk<true>(
      model, data, team, chunks,
      [&](Index, Index chunk, const auto& batch, typename M::workspace_type& ws, Eigen::Ref<Vector<Target>> out) {
        model.predict(theta, batch, out, ws);
        Index hits = 0;
        for (Index i = 0; i < batch.size(); ++i) hits += out[i] == static_cast<Target>(batch.targets[i]) ? 1 : 0;
        correct[static_cast<std::size_t>(chunk)] = hits;
      });
  Index total = 0;
  for (const Index c : correct) total += c;
  return static_cast<double>(total) / static_cast<double>(n);
}

}  // namespace dptrain
