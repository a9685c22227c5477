// SPDX-License-Identifier: MIT
// AnyAggregator: one of the built-in aggregators, chosen at run time.
#pragma once

#include <array>
#include <concepts>
#include <string>
#include <string_view>
#include <variant>

#include "dptrain/aggregators/reduce_scatter_aggregator.hpp"
#include "dptrain/aggregators/ring_all_reduce_aggregator.hpp"
#include "dptrain/aggregators/serial_aggregator.hpp"
#include "dptrain/aggregators/tree_aggregator.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

namespace detail {
/// The aggregators an AnyAggregator can hold.
template <class A>
concept BuiltInAggregator = std::same_as<A, ReduceScatterAggregator> || std::same_as<A, RingAllReduceAggregator> ||
    std::same_as<A, TreeAggregator> || std::same_as<A, SerialAggregator>;
}  // namespace detail

/**
 * @brief One of the four built-in aggregators, chosen at run time, for a program that takes the
 * choice from its command line or a configuration file.
 *
 * Each aggregator given as the trainer's policy is a trainer type of its own, instantiated and
 * compiled once more; with AnyAggregator one trainer type serves all four. Each step reaches the
 * chosen aggregator through one std::visit: the same sums, bit for bit, as that aggregator given
 * directly, and nothing allocated.
 *
 * @code
 * // flag: "reduce-scatter", "ring", "tree" or "serial"; anything else throws invalid_argument.
 * dptrain::DataParallelTrainer trainer(options, dptrain::Momentum{.lr = 0.05},
 *                                      dptrain::AnyAggregator::named(flag));
 * @endcode
 */
class AnyAggregator {
 public:
  using Choice = std::variant<ReduceScatterAggregator, RingAllReduceAggregator, TreeAggregator, SerialAggregator>;

  /// The names named() takes and name() gives, in Choice's order.
  static constexpr std::array<std::string_view, 4> names = {"reduce-scatter", "ring", "tree", "serial"};

  /// ReduceScatterAggregator, the trainer's default.
  AnyAggregator() = default;

  /// Holds `aggregator`, one of the four (implicit: a built-in aggregator is an AnyAggregator).
  template <detail::BuiltInAggregator A>
  AnyAggregator(A aggregator) : choice_(aggregator) {}

  /// The aggregator called `name` (one of `names`).
  /// @throws dptrain::invalid_argument for any other name, listing them.
  [[nodiscard]] static AnyAggregator named(std::string_view name) {
    if (name == names[0]) return ReduceScatterAggregator{};
    if (name == names[1]) return RingAllReduceAggregator{};
    if (name == names[2]) return TreeAggregator{};
    if (name == names[3]) return SerialAggregator{};
    throw invalid_argument("dptrain::AnyAggregator: no aggregator is called \"" + std::string(name) +
                           "\" (reduce-scatter, ring, tree or serial)");
  }

  /// The chosen aggregator's name, one of `names`.
  [[nodiscard]] std::string_view name() const noexcept { return names[choice_.index()]; }

  /// Collective: every thread calls it; the chosen aggregator's all_reduce.
  template <class Scalar>
  VectorMap<Scalar> all_reduce(const TeamMember& team, const GradientBuffers<Scalar>& buffers) const {
    return std::visit([&](const auto& aggregator) { return aggregator.all_reduce(team, buffers); }, choice_);
  }

 private:
  Choice choice_;
};

}  // namespace dptrain
