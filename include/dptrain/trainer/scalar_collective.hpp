// SPDX-License-Identifier: MIT
// ScalarCollective: the one reduction of a step's scalars over the team and the processes.
#pragma once

#include <array>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Sums every worker's StepScalars, over the thread team in rank order and then over the
 * processes (ProcessGroup::all_reduce), so that every worker of every process holds the same
 * totals: every decision to update, skip, stop or leave is taken from them.
 *
 * In one process this is one barrier, after which each thread sums the parts itself (no
 * broadcast). With several processes thread 0 sums the team's parts, hands them to the process
 * group, and a second barrier publishes the result.
 */
class ScalarCollective {
 public:
  explicit ScalarCollective(Index threads) : parts_(static_cast<std::size_t>(threads)) {}

  /// Collective, called by every thread of the team with its part; returns the totals.
  template <ProcessGroup Group>
  StepScalars all_reduce(const TeamMember& me, const StepScalars& mine, const Group& group) {
    // Two sides, used alternately: a thread writes side s again two calls later, after a barrier
    // that every thread reaches only once it has read this call's parts and result.
    Part& part = parts_[static_cast<std::size_t>(me.rank)];
    const std::size_t side = static_cast<std::size_t>(part.calls++ % 2);
    part.value[side] = mine;
    me.barrier();
    if (group.size() == 1) return team_sum(side);
    if (me.rank == 0) {
      result_[side] = team_sum(side);
      group.all_reduce(result_[side]);
    }
    me.barrier();
    return result_[side];
  }

 private:
  struct alignas(cache_line_bytes) Part {
    std::array<StepScalars, 2> value;
    Index calls = 0;
  };

  [[nodiscard]] StepScalars team_sum(std::size_t side) const noexcept {
    StepScalars sum;
    for (const Part& part : parts_) sum += part.value[side];
    return sum;
  }

  std::vector<Part> parts_;
  std::array<StepScalars, 2> result_{};
};

}  // namespace dptrain
