// SPDX-License-Identifier: MIT
// Places each policy argument of DataParallelTrainer by the concept it satisfies, and checks that
// each fills exactly one role.
#pragma once

#include <type_traits>
#include <utility>

#include "dptrain/concepts.hpp"

namespace dptrain::detail {

/// Stands for the optimizer a DataParallelTrainer was not given (a compile error names it).
struct MissingOptimizer {};

// A near miss: a type with a role's member but the wrong signature claims the role, so that the
// error names that role's requirements instead of "satisfies no policy concept".
template <class T>
concept ClaimsOptimizer = requires(const T& t) {
  t.lr;
}
|| requires {
  T::state_slots;
};
template <class T>
concept ClaimsSchedule = requires {
  &T::factor;
};
template <class T>
concept ClaimsPartitioner = requires {
  &T::range;
};
template <class T>
concept ClaimsAggregator = requires(const T& a, const TeamMember& t, const GradientBuffers<float>& f,
                                    const GradientBuffers<double>& d) {
  a.all_reduce(t, f);
}
|| requires(const T& a, const TeamMember& t, const GradientBuffers<double>& d) {
  a.all_reduce(t, d);
};
template <class T>
concept ClaimsWorker = requires(const T& w, const ProbeModel& m, Index i) {
  w.make(m, i, i);
};
template <class T>
concept ClaimsCommunicator = requires(const T& c, Index threads, const RunSignature& run) {
  c.connect(threads, run);
};
template <class T>
concept ClaimsSynchronizer = requires {
  &T::start;
}
|| requires {
  &T::template start<StepArchetype>;
};

// One role per policy: the concept that places an argument there, the near-miss test, and the
// type used when no argument fills it.
struct OptimizerRole {
  template <class T>
  static constexpr bool fits = Optimizer<T>;
  template <class T>
  static constexpr bool claims = ClaimsOptimizer<T>;
  using fallback = MissingOptimizer;
};
template <class Default>
struct ScheduleRole {
  template <class T>
  static constexpr bool fits = Schedule<T>;
  template <class T>
  static constexpr bool claims = ClaimsSchedule<T>;
  using fallback = Default;
};
template <class Default>
struct PartitionerRole {
  template <class T>
  static constexpr bool fits = Partitioner<T>;
  template <class T>
  static constexpr bool claims = ClaimsPartitioner<T>;
  using fallback = Default;
};
template <class Default>
struct AggregatorRole {
  template <class T>
  static constexpr bool fits = Aggregator<T>;
  template <class T>
  static constexpr bool claims = ClaimsAggregator<T>;
  using fallback = Default;
};
template <class Default>
struct WorkerRole {
  template <class T>
  static constexpr bool fits = WorkerPolicy<T>;
  template <class T>
  static constexpr bool claims = ClaimsWorker<T>;
  using fallback = Default;
};
template <class Default>
struct CommunicatorRole {
  template <class T>
  static constexpr bool fits = Communicator<T>;
  template <class T>
  static constexpr bool claims = ClaimsCommunicator<T>;
  using fallback = Default;
};
template <class Default>
struct SynchronizerRole {
  template <class T>
  static constexpr bool fits = Synchronizer<T>;
  template <class T>
  static constexpr bool claims = ClaimsSynchronizer<T>;
  using fallback = Default;
};

/// The first of Ps that fits Role, or Role's fallback.
template <class Role, class... Ps>
struct placed {
  using type = typename Role::fallback;
};
template <class Role, class P, class... Ps>
struct placed<Role, P, Ps...> {
  using type = std::conditional_t<Role::template fits<P>, P, typename placed<Role, Ps...>::type>;
};
template <class Role, class... Ps>
using placed_t = typename placed<Role, std::decay_t<Ps>...>::type;

/// The first argument that fits Role.
template <class Role, class P, class... Ps>
decltype(auto) first_fitting(P&& p, Ps&&... ps) {
  if constexpr (Role::template fits<std::decay_t<P>>)
    return std::forward<P>(p);
  else
    return first_fitting<Role>(std::forward<Ps>(ps)...);
}

/// The argument that fits Role, or a default-constructed fallback.
template <class Role, class... Ps>
placed_t<Role, Ps...> take(Ps&&... ps) {
  if constexpr ((Role::template fits<std::decay_t<Ps>> || ...)) {
    return first_fitting<Role>(std::forward<Ps>(ps)...);
  } else {
    return {};
  }
}

/// The check of one policy argument T of DataParallelTrainer among all of them: it fills exactly
/// one role, and no other argument fills the same; its static_asserts say what is wrong. (Which
/// type is a role's default does not matter here.)
template <class T, class... All>
struct ArgumentCheck {
  template <class Role>
  static constexpr int fits = Role::template fits<T> ? 1 : 0;
  static constexpr int roles = fits<OptimizerRole> + fits<ScheduleRole<void>> + fits<PartitionerRole<void>> +
                               fits<AggregatorRole<void>> + fits<WorkerRole<void>> + fits<CommunicatorRole<void>> +
                               fits<SynchronizerRole<void>>;
  // Whether no other argument fills T's role.
  template <class Role>
  static constexpr bool alone = !Role::template fits<T> || ((Role::template fits<All> ? 1 : 0) + ...) == 1;

  // A near miss (a role's member with the wrong signature) gets that role's sentence.
  static_assert(roles > 0 || !OptimizerRole::template claims<T>,
                "dptrain: the Optimizer policy must provide a `double lr` member, `static constexpr int "
                "state_slots` and `template <class Scalar> void update(const UpdateSlice<Scalar, state_slots>&, "
                "const StepInfo&) const`");
  static_assert(roles > 0 || !ScheduleRole<void>::template claims<T>,
                "dptrain: the Schedule policy must provide `double factor(Index step) const`");
  static_assert(roles > 0 || !PartitionerRole<void>::template claims<T>,
                "dptrain: the Partitioner policy must provide `IndexRange range(Index batch, Index workers, "
                "Index rank) const`");
  static_assert(roles > 0 || !AggregatorRole<void>::template claims<T>,
                "dptrain: the Aggregator policy must provide `template <class Scalar> VectorMap<Scalar> "
                "all_reduce(const TeamMember&, const GradientBuffers<Scalar>&) const` for float and double");
  static_assert(
      roles > 0 || !WorkerRole<void>::template claims<T>,
      "dptrain: the Worker policy must provide `make(model, rank, max_rows)` returning a state with "
      "zero(), accumulate(model, theta, batch) (or accumulate(model, theta, batch, ids)), gradient(), loss() and "
      "samples()");
  static_assert(roles > 0 || !CommunicatorRole<void>::template claims<T>,
                "dptrain: the Communicator policy must provide `connect(Index threads, const RunSignature&) "
                "const` returning a ProcessGroup");
  static_assert(roles > 0 || !SynchronizerRole<void>::template claims<T>,
                "dptrain: the Synchronizer policy must provide `template <class Step> Loop start(Step&) const` "
                "returning a loop with `SpanEnd run(const TeamMember&, const StepSpan&)`");
  static_assert(roles > 0,
                "dptrain: an argument of DataParallelTrainer after the options satisfies no policy concept "
                "(Optimizer, Schedule, Partitioner, Aggregator, Worker, Communicator, Synchronizer)");
  static_assert(roles < 2,
                "dptrain: an argument of DataParallelTrainer satisfies more than one policy concept, so its role "
                "is ambiguous");
  static_assert(alone<OptimizerRole> && alone<ScheduleRole<void>> && alone<PartitionerRole<void>> &&
                    alone<AggregatorRole<void>> && alone<WorkerRole<void>> && alone<CommunicatorRole<void>> &&
                    alone<SynchronizerRole<void>>,
                "dptrain: two arguments of DataParallelTrainer fill the same policy role");
};

}  // namespace dptrain::detail
