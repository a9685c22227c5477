// SPDX-License-Identifier: MIT
// The data-parallel loop of the evaluation helpers: fixed chunks of rows, assigned statically.
#pragma once

#include <algorithm>
#include <atomic>

#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/dataset_rows.hpp"

namespace dptrain::detail::evaluation {

/// The most rows one model call sees during an evaluation.
inline constexpr Index max_chunk_rows = 1024;

/// How n rows are cut into chunks: `rows` per chunk (the last may be shorter), `count` chunks.
struct Chunking {
  Index rows = 0;
  Index count = 0;
};

/**
 * @brief Cuts n rows into chunks whose size depends on n only, never on the thread count, so a
 * per-chunk result (e.g. a float loss sum) is the same for any number of threads: about 64
 * chunks, each of 64 to 1024 rows (fewer rows only when n itself is smaller).
 */
[[nodiscard]] inline Chunking chunking(Index n) noexcept {
  if (n <= 0) return {};
  const Index rows = std::min({max_chunk_rows, std::max<Index>(64, (n + 63) / 64), n});
  return {rows, (n + rows - 1) / rows};
}

/**
 * @brief Runs `body(rank, chunk, batch, ws, predictions)` for every chunk of `data` on `team`;
 * member r of a team of T takes chunks r, r + T, r + 2T, … (static, so which thread computes
 * what never depends on timing).
 *
 * Each member with chunks to do makes its own workspace (model.make_workspace(chunk rows)) and,
 * when `Predictions`, its own prediction buffer; `predictions` is then a view of `batch.size()`
 * entries, else empty. After a member throws, the others stop at their next chunk; the first
 * exception is rethrown with its original type.
 */
template <bool Predictions, class M, class D, class Body>
void for_each_chunk(const M& model, const D& data, const ThreadTeam& team, const Chunking& chunks, Body&& body) {
  using Target = typename M::target_type;
  if (chunks.count == 0) return;
  const Index n = data.size();
  std::atomic<bool> failed{false};
  team.run([&](const TeamMember& me) {
    if (me.rank >= chunks.count) return;
    try {
      typename M::workspace_type ws = model.make_workspace(chunks.rows);
      Vector<Target> buffer(Predictions ? chunks.rows : 0);
      auto copied_rows = rows_buffer(data, chunks.rows);
      for (Index k = me.rank; k < chunks.count && !failed.load(std::memory_order_relaxed); k += me.size) {
        const Index begin = k * chunks.rows, count = std::min(chunks.rows, n - begin);
        const auto batch = read_rows(data, begin, count, copied_rows);
        Eigen::Ref<Vector<Target>> predictions(buffer.head(Predictions ? count : 0));
        body(me.rank, k, batch, ws, predictions);
      }
    } catch (...) {
      failed.store(true, std::memory_order_relaxed);
      throw;
    }
  });
}

}  // namespace dptrain::detail::evaluation
