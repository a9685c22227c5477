// SPDX-License-Identifier: MIT
// The data-parallel loop of the evaluation helpers: fixed chunks of rows, assigned statically.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/omp.hpp"
#include "dptrain/core/types.hpp"

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

/// Throws dptrain::invalid_argument unless threads ≥ 1.
inline void check_threads(const char* function, Index threads) {
  if (threads < 1)
    throw invalid_argument(std::string("dptrain: ") + function + ": threads must be at least 1, got " +
                           std::to_string(threads));
}

/**
 * @brief Runs `body(rank, chunk, batch, ws, predictions)` for every chunk of `data`, in one
 * OpenMP parallel region of up to `threads` threads; thread r of a team of T takes chunks
 * r, r + T, r + 2T, … (static, so which thread computes what never depends on timing).
 *
 * Each thread makes its own workspace (model.make_workspace(chunk rows)) and, when
 * `Predictions`, its own prediction buffer; `predictions` is then a view of `batch.size()`
 * entries, else empty. Inside an active parallel region (a trainer hook) the nested region is
 * inactive and the team has one thread; results do not change. The first exception thrown by
 * any thread is rethrown after the region, with its original type.
 */
template <bool Predictions, class M, class D, class Body>
void for_each_chunk(const M& model, const D& data, Index threads, const Chunking& chunks, Body&& body) {
  using Target = typename M::target_type;
  if (chunks.count == 0) return;
  const Index n = data.size();
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  const Index team = std::min(threads, chunks.count);
  static_cast<void>(team);  // unused without OpenMP
  DPTRAIN_OMP(parallel num_threads(team)) {
    try {
      const Index rank = detail::omp_thread_id(), size = detail::omp_team_size();
      typename M::workspace_type ws = model.make_workspace(chunks.rows);
      Vector<Target> buffer(Predictions ? chunks.rows : 0);
      for (Index k = rank; k < chunks.count && !failed.load(std::memory_order_relaxed); k += size) {
        const Index begin = k * chunks.rows, count = std::min(chunks.rows, n - begin);
        const auto batch = data.rows(begin, count);
        Eigen::Ref<Vector<Target>> predictions(buffer.head(Predictions ? count : 0));
        body(rank, k, batch, ws, predictions);
      }
    } catch (...) {
      DPTRAIN_OMP(critical(dptrain_evaluation_error)) {
        if (!error) error = std::current_exception();
      }
      failed.store(true, std::memory_order_relaxed);
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace dptrain::detail::evaluation
