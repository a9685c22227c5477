// SPDX-License-Identifier: MIT
// BoundedStaleness: stale synchronous parallel SGD. A worker may run up to `staleness` steps ahead
// of the slowest, computing its gradients at a θ at most that many updates old.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/step_events.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/synchronizers/step_parts.hpp"

namespace dptrain {

/**
 * @brief Bounded staleness (stale synchronous parallel, Ho et al., "More effective distributed ML
 * via a stale synchronous parallel parameter server", 2013): a worker does not wait for the others
 * before its next gradient, only for θ to be at most `staleness` updates behind the step it
 * computes. A worker that is momentarily slow (descheduled, a page fault, a longer micro-batch)
 * no longer stalls the team; the others run up to `staleness` steps ahead of it.
 *
 * Every update is still the mean gradient of a whole minibatch — every worker's micro-batch of
 * step t, as the Partitioner cuts it — and one Optimizer step, so any Optimizer works (Adam's
 * state sees one mean gradient per step). What changes is the θ at which each micro-batch's
 * gradient is taken: step t's gradients may be taken at θ after update t − 1 − s … t − 1 (the
 * freshest one published when the worker starts it), where s = `staleness`. With s = 0 that is
 * θ after update t − 1: the synchronous step (the same θ up to the order of the sum).
 *
 * A worker never runs more than s steps ahead of the slowest: it starts step t only once update
 * t − 1 − s is published, which needs every worker's gradient of that step. FitReport's
 * largest_staleness() and mean_staleness() say how stale the applied gradients were.
 *
 * How a step runs: each worker keeps its last s + 1 gradients; the last worker to finish step t
 * sums the step's gradients in worker order, decides the step (clipping, the non-finite check),
 * writes θ after update t into the next of s + 2 copies of θ and publishes it. That update is
 * one thread's, not shared out like the synchronous step's: it pays where a gradient costs well
 * more than the workers' passes over θ (models with a large batch per parameter).
 *
 * Not reproducible for s > 0: which θ a gradient is taken at depends on timing.
 *
 * What a user sees:
 * - Callbacks: on_step_end runs after every update, on the thread that made it, with ctx.theta
 *   the new θ and ctx.team that thread alone; the other workers go on computing (up to s steps
 *   ahead) but no update is made until it returns. Every epoch's end waits for every update.
 * - Checkpoints, from on_step_end or at an epoch's end, save θ and the optimizer state as of
 *   that update; a resumed run takes its next gradients at that θ (for s > 0 the gradients in
 *   flight at the save are not saved, so the resumed run is not the uninterrupted one).
 * - A worker that throws, or a callback that stops: the next update is not made and the team
 *   leaves with θ as of the update before; fit() throws the first error.
 * - One process: across processes it is refused (LocalSgd communicates less there), and so is
 *   an adaptive partitioner (it learns at a barrier that this loop does not have).
 * - Memory: s + 1 gradients per thread and s + 2 copies of θ.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Adam{.lr = 1e-3}, dptrain::BoundedStaleness{.staleness = 2});
 * static_assert(dptrain::Synchronizer<dptrain::BoundedStaleness>);
 * @endcode
 */
struct BoundedStaleness {
  Index staleness = 2;  ///< s: the most updates a gradient's θ may be behind the θ it updates

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "BoundedStaleness";
  [[nodiscard]] std::vector<Setting> settings() const { return {{"staleness", static_cast<double>(staleness)}}; }

  template <class Step>
  class Loop;

  /// One fit()'s loop: the copies of θ and each worker's last s + 1 gradients, sized here.
  template <class Step>
  [[nodiscard]] Loop<Step> start(Step& step) const {
    if (staleness < 0 || staleness > max_staleness)
      throw invalid_argument("dptrain::BoundedStaleness: staleness must be in [0, " + std::to_string(max_staleness) +
                             "], got " + std::to_string(staleness));
    if (step.processes() > 1)
      throw invalid_argument("dptrain::BoundedStaleness runs in one process; this run has " +
                             std::to_string(step.processes()) +
                             " (between processes, LocalSgd is the mode that communicates less)");
    if (Step::adaptive_partitioner)
      throw invalid_argument(
          "dptrain::BoundedStaleness: an adaptive partitioner learns at the barrier after each step's gradients, "
          "which this mode does not have; use EvenPartitioner or WeightedPartitioner");
    if constexpr (ReadsGradientTable<typename Step::Optimizer>)
      throw invalid_argument(
          "dptrain::BoundedStaleness: Sag and Saga store each sample's gradient when it is computed, at a stale "
          "theta, and move their mean only at the update; use the synchronous step");
    if constexpr (SumsOverGroups<typename Step::Optimizer>)
      throw invalid_argument(
          "dptrain::BoundedStaleness: Lars and Lamb need sums over each parameter group between the two halves "
          "of their update, which only the synchronous step takes; use the synchronous step");
    return Loop<Step>(step, *this);
  }

  /// Each worker keeps s + 1 gradients: more than this is memory spent on a stale θ.
  static constexpr Index max_staleness = 64;
};

template <class Step>
class BoundedStaleness::Loop {
  using Scalar = typename Step::Scalar;

 public:
  /// on_step_end runs after each update, on the thread that made it (see the class).
  static constexpr bool runs_step_hooks = true;

  Loop(Step& step, const BoundedStaleness& policy)
      : step_(step),
        slots_(policy.staleness + 1),
        lag_(policy.staleness),
        biases_(whole_theta_biases(step)),
        workers_(static_cast<std::size_t>(step.options().threads)),
        thetas_(static_cast<std::size_t>(slots_ + 1)),
        sum_(step.theta().size()),
        arrived_(static_cast<std::size_t>(slots_)),
        events_(step.spin()) {
    const Index n = step.theta().size();
    for (Worker& w : workers_) {
      w.gradients.assign(static_cast<std::size_t>(slots_), AlignedBuffer<Scalar>(n));
      w.parts.resize(static_cast<std::size_t>(slots_));
      w.lags.resize(static_cast<std::size_t>(slots_));
    }
    for (auto& theta : thetas_) theta = AlignedBuffer<Scalar>(n);
  }

  /// Every thread of the team: its gradients of the span's steps, and the updates it is last to.
  SpanEnd run(const TeamMember& me, const StepSpan& span) {
    begin(me, span);
    Worker& my = workers_[static_cast<std::size_t>(me.rank)];
    const Index n = step_.theta().size(), last = span.first + span.count - 1;
    for (Index t = span.first; t <= last; ++t) {
      // Step t's gradient may be taken at θ after update t − 1 − s, or a later one.
      wait_until(me, [&] { return version_.load() >= t - 1 - lag_ || left_.load(); });
      if (left_.load()) break;
      const Index v = version_.load();
      const std::size_t slot = ring(t);
      my.parts[slot] =
          step_.local_gradient(me, t, span.epoch_step + (t - span.first), ConstVectorMap<Scalar>(theta(v), n));
      const VectorMap<Scalar> g = step_.gradient(me);
      std::copy_n(g.data(), n, my.gradients[slot].data());
      my.lags[slot] = t - 1 - v;
      if (arrived_[slot].fetch_add(1) + 1 == step_.options().threads) update(me, span, t);
    }
    wait_until(me, [&] { return version_.load() == last || left_.load(); });
    step_.adopt(me, outcome_, my.counts);
    my.counts = {};
    return {version_.load() - (span.first - 1), outcome_};
  }

 private:
  // One worker's last s + 1 gradients (step t in slot t mod (s + 1)), their scalars and the
  // staleness of the θ each was taken at; and its counts, written by the thread that updates.
  struct alignas(cache_line_bytes) Worker {
    std::vector<AlignedBuffer<Scalar>> gradients;
    std::vector<StepScalars> parts;
    std::vector<Index> lags;
    WorkerReport counts;  // samples and staleness of its gradients that went into updates
  };

  [[nodiscard]] std::size_t ring(Index t) const noexcept { return static_cast<std::size_t>(t % slots_); }
  // θ after update v, in copy v mod (s + 2): a reader holds one at most s updates old, and the
  // next update needs its gradient first, so the copy written is never one being read.
  [[nodiscard]] Scalar* theta(Index v) noexcept {
    return thetas_[static_cast<std::size_t>(v % static_cast<Index>(thetas_.size()))].data();
  }

  // Between two barriers, thread 0 starts the span from the trainer's θ (update first − 1).
  void begin(const TeamMember& me, const StepSpan& span) {
    me.barrier();  // every thread has left the last span
    if (me.rank == 0) {
      const VectorMap<Scalar> from = step_.theta();
      std::copy_n(from.data(), from.size(), theta(span.first - 1));
      for (auto& count : arrived_) count.store(0, std::memory_order_relaxed);
      left_.store(false, std::memory_order_relaxed);
      outcome_ = {};
      version_.store(span.first - 1);
    }
    me.barrier();
    step_.charge(me, &WorkerReport::wait);
  }

  // The last worker to finish step t: once update t − 1 is published, the step's decision from
  // every worker's part, θ after update t into its copy, the step's record and hooks, and then
  // update t published (the hooks run before the next update can start).
  void update(const TeamMember& me, const StepSpan& span, Index t) {
    wait_until(me, [&] { return version_.load() == t - 1 || left_.load(); });
    if (left_.load()) return;
    const std::size_t slot = ring(t);
    const Index n = sum_.size();
    StepScalars totals = step_.hook_scalars();
    VectorMap<Scalar> sum(sum_.data(), n);
    sum.setZero();
    for (Worker& w : workers_) {
      totals += w.parts[slot];
      sum += VectorMap<Scalar>(w.gradients[slot].data(), n);
    }
    totals.sumsq = Step::squared_norm(sum);
    step_.charge(me, &WorkerReport::aggregate);
    const StepOutcome outcome = step_.judge(totals, t, true);
    arrived_[slot].store(0, std::memory_order_relaxed);  // published by version_ below
    if (outcome.leave) {
      leave(t - 1, outcome);
      return;
    }
    std::copy_n(theta(t - 1), n, theta(t));
    if (outcome.update) step_.update_range(sum, {0, n}, theta(t), step_.optimizer_state(), biases_, outcome, t);
    for (Worker& w : workers_) {
      w.counts.samples += static_cast<Index>(w.parts[slot].samples);
      w.counts.staleness += w.lags[slot];
      w.counts.largest_staleness = std::max(w.counts.largest_staleness, w.lags[slot]);
    }
    step_.charge(me, &WorkerReport::update);
    outcome_ = outcome;
    if (t == span.first + span.count - 1) keep_theta(t);
    step_.record(span, t - span.first, outcome, theta(t), /*hook_point=*/true);
    step_.charge(me, &WorkerReport::hooks);
    version_.store(t);
    events_.signal();
  }

  // Update v's θ into the trainer's θ, where the hooks and the next span read it.
  void keep_theta(Index v) {
    VectorMap<Scalar> to = step_.theta();
    std::copy_n(theta(v), to.size(), to.data());
  }

  // The team leaves with θ after update v, the last one made.
  void leave(Index v, const StepOutcome& outcome) {
    keep_theta(v);
    outcome_ = outcome;
    left_.store(true);
    events_.signal();
  }

  template <class Done>
  void wait_until(const TeamMember& me, Done&& done) {
    events_.wait_until(done);
    step_.charge(me, &WorkerReport::wait);
  }

  Step& step_;
  Index slots_;                     // s + 1: the steps a worker's gradients may be ahead of the last update
  Index lag_;                       // s
  std::vector<IndexRange> biases_;  // θ's biases, for a whole vector's update
  std::vector<Worker> workers_;
  std::vector<AlignedBuffer<Scalar>> thetas_;  // θ after each of the last s + 2 updates
  AlignedBuffer<Scalar> sum_;                  // Σ G of the step being updated
  std::vector<std::atomic<Index>> arrived_;    // gradients done of each step in flight
  StepOutcome outcome_;                        // the last update's, or the decision to leave
  std::atomic<Index> version_{0};              // the last update published (the span's first − 1 at its start)
  std::atomic<bool> left_{false};
  detail::StepEvents events_;
};

}  // namespace dptrain
