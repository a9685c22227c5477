// SPDX-License-Identifier: MIT
// GatherAsks: how many coming rows a gather of shuffled rows asks the memory for, chosen by timing.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief How many of the coming rows DenseDataset::gather() asks for while it copies a row: chosen
 * per buffer by timing its own first calls, or fixed by the user.
 *
 * Shuffled rows of a data set larger than the caches each start with a memory latency that the
 * hardware prefetcher cannot foresee, so the gather asks for the lines of the next rows as it
 * copies. How many rows pays off belongs to the memory system, which the compiler does not see:
 * for 256 Fashion-MNIST rows, four rows took 25.4 µs on an AMD EPYC Zen 5 core against 28.3–28.8
 * for two, and on a Zen 2 core 104.5 µs against 86–87 for two (benchmarks/RESULTS.md, sessions 14 and 15).
 * So each candidate is timed on `trials` calls of at least `min_rows` rows, taken in turn so that
 * a slow minute of a shared machine falls on all of them, and the fastest per row is kept. The
 * choice changes only when rows are read, never what is copied.
 */
class GatherAsks {
 public:
  /// The counts tried, in rows ahead of the one being copied (1 … n).
  static constexpr std::array<int, 3> candidates{1, 2, 4};
  /// Timed calls per candidate before choosing.
  static constexpr int trials = 3;
  /// Calls with fewer rows are not timed (their per-row time is mostly the call's own); 16 rows
  /// is a 256-row batch on 16 workers.
  static constexpr Index min_rows = 16;

  /// The count the next call uses.
  [[nodiscard]] int rows_ahead() const noexcept { return candidates[static_cast<std::size_t>(current())]; }

  /// Whether the count is chosen (or fixed) and no longer timed.
  [[nodiscard]] bool chosen() const noexcept { return chosen_ >= 0; }

  /// Uses `rows_ahead` from now on, untimed. @throws dptrain::invalid_argument unless it is one of candidates.
  void fix(int rows_ahead) {
    const auto* it = std::find(candidates.begin(), candidates.end(), rows_ahead);
    if (it == candidates.end())
      throw invalid_argument("dptrain::GatherAsks::fix: rows_ahead must be one of the candidates (1, 2, 4), got " +
                             std::to_string(rows_ahead));
    chosen_ = static_cast<int>(it - candidates.begin());
  }

  /// Runs copy(std::integral_constant<int, rows_ahead()>{}) over `rows` rows, timing it while the
  /// count is not yet chosen: the count as a compile-time constant, so the copy's loops unroll.
  template <class Copy>
  void run(Index rows, Copy&& copy) {
    if (chosen() || rows < min_rows) {
      with_count(copy);
      return;
    }
    const int c = current();
    const auto start = std::chrono::steady_clock::now();
    with_count(copy);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    auto& best = per_row_[static_cast<std::size_t>(c)];
    best = std::min(best, took.count() / static_cast<double>(rows));
    if (++timed_ == trials * static_cast<int>(candidates.size()))
      chosen_ = static_cast<int>(std::min_element(per_row_.begin(), per_row_.end()) - per_row_.begin());
  }

 private:
  template <class Copy>
  void with_count(Copy& copy) const {
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      static_cast<void>(
          ((current() == static_cast<int>(Is) ? (copy(std::integral_constant<int, candidates[Is]>{}), true) : false) ||
           ...));
    }
    (std::make_index_sequence<candidates.size()>{});
  }

  [[nodiscard]] int current() const noexcept {
    return chosen() ? chosen_ : timed_ % static_cast<int>(candidates.size());
  }

  int chosen_ = -1;  // index into candidates, or −1 while timing
  int timed_ = 0;    // calls timed so far
  std::array<double, candidates.size()> per_row_ = [] {
    std::array<double, candidates.size()> all{};
    all.fill(std::numeric_limits<double>::infinity());
    return all;
  }();  // the fastest seconds per row of each candidate
};

}  // namespace dptrain
