// SPDX-License-Identifier: MIT
// mean_loss: the model's mean per-sample loss over a data set, computed data-parallel.
#pragma once

#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/evaluation.hpp"

namespace dptrain {

/**
 * @brief The mean per-sample loss (1/n) Σᵢ ℓ(xᵢ, yᵢ; θ) over `data`.
 *
 * Runs `model.loss` on chunks of at most 1024 rows on every thread of `team`, each with its own
 * workspace. The chunk size depends on n only, each chunk's loss is converted to double and the
 * chunk sums are added in chunk order afterwards, so the result is bitwise the same for any
 * thread count and any scheduling.
 *
 * @tparam M a Model
 * @tparam D a data set (DatasetOf) of the model's batch_type
 * @param theta   the parameters, of length model.num_parameters()
 * @param team    the threads: a count (default: OpenMP's default) or a hook's `ctx.team`
 * @return the summed loss divided by n
 * @throws dptrain::invalid_argument for an empty data set, or what loss throws
 *
 * @code
 * double validation_loss = dptrain::mean_loss(model, theta, validation, 4);
 * @endcode
 */
template <Model M, class D>
[[nodiscard]] double mean_loss(const M& model, ConstVectorRef<typename M::scalar_type> theta, const D& data,
                               const ThreadTeam& team = {}) {
  using Target = typename M::target_type;
  const Index n = data.size();
  if (n == 0) throw invalid_argument("dptrain::mean_loss: the data set is empty");
  const detail::evaluation::Chunking chunks = detail::evaluation::chunking(n);
  std::vector<double> sums(static_cast<std::size_t>(chunks.count), 0.0);
  detail::evaluation::for_each_chunk<false>(
      model, data, team, chunks,
      [&](Index, Index chunk, const auto& batch, typename M::workspace_type& ws, Eigen::Ref<Vector<Target>>) {
        sums[static_cast<std::size_t>(chunk)] = static_cast<double>(model.loss(theta, batch, ws));
      });
  double total = 0;
  for (const double s : sums) total += s;  // chunk order: independent of the thread count
  return total / static_cast<double>(n);
}

}  // namespace dptrain
