// SPDX-License-Identifier: MIT
// LocalSgd: periodic model averaging. Each worker steps its own replica of θ for `period` steps,
// then the replicas are averaged: one communication every `period` steps instead of every step.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/synchronizers/step_parts.hpp"

namespace dptrain {

/**
 * @brief Local SGD (periodic model averaging): every worker — each thread of each process — takes
 * `period` steps on its own replica of θ with its own optimizer state, from its own micro-batches
 * (the Partitioner's, as in the synchronous step), and then the replicas are averaged over every
 * worker. The workers communicate once per period instead of once per step: the method to reach for
 * when the network between machines is the bottleneck (Stich, "Local SGD converges fast and
 * communicates little", 2019; Lin et al., "Don't use large mini-batches, use local SGD", 2020).
 *
 * How a period ends: its last step is the averaging point. Each worker computes its gradient at its
 * own replica; the replicas and their optimizer states are averaged (Σ over the team and the
 * processes, through the fit's Aggregator and Communicator) into the trainer's θ and state; then
 * that step's gradients are reduced and the Optimizer applies their mean to the average, as one
 * synchronous step. For Sgd and Momentum (linear in the gradient and the state) this is exactly the
 * average of the workers' own last steps; for every optimizer it makes `period = 1` the
 * synchronous step itself, bit for bit (no step is local, so there is nothing to average).
 *
 * The optimizer state is averaged with θ at every averaging point, not kept per worker. Stich
 * analyses plain SGD, where there is no state; Lin et al. run local momentum SGD with each worker's
 * buffer kept local. Averaging it costs one more vector per state slot at each averaging point, and
 * buys two things users rely on: at every averaging point there is one θ and one state (what
 * callbacks see and checkpoints save, so a run resumed there continues bit for bit), and
 * `period = 1` is the synchronous step for Adam too.
 *
 * Across MPI ranks every worker of every rank averages at the same points, every `period` steps:
 * the point of local SGD between machines. (Averaging a rank's threads every step and the ranks
 * every `period` steps, a hierarchical variant, is not offered.)
 *
 * `warmup_steps` synchronous steps come first (post-local SGD, Lin et al.: local steps once the
 * first phase of training has passed).
 *
 * What a user sees:
 * - Callbacks: on_step_end runs at averaging points only (on thread 0, while the other workers
 *   begin the next period), and every epoch's end is an averaging point; ctx.theta and ctx.state
 *   are the averages there, so checkpoints are taken where the run is one model.
 * - The record: a local step has no global loss until its period ends; the period's local steps
 *   are recorded at its averaging point, each with the period's mean loss over every worker
 *   (FitReport::epoch_loss is therefore exact; final_loss is the averaging step's).
 * - Clipping and the non-finite check of a local step use that worker's own gradient and norm.
 * - A worker that throws, a non-finite local step under NonFinitePolicy::stop, or a callback
 *   that stops: the team leaves at the next averaging point, with θ the last average (the failed
 *   period is not averaged in); fit() throws the first error.
 * - Memory: a replica of θ and of the optimizer state per thread.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Momentum{.lr = 0.05}, dptrain::LocalSgd{.period = 8});
 * static_assert(dptrain::Synchronizer<dptrain::LocalSgd>);
 * @endcode
 */
struct LocalSgd {
  Index period = 4;        ///< steps between two averagings (H); 1: the synchronous step
  Index warmup_steps = 0;  ///< synchronous steps before the first local one (post-local SGD)

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "LocalSgd";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"period", static_cast<double>(period)}, {"warmup_steps", static_cast<double>(warmup_steps)}};
  }

  template <class Step>
  class Loop;

  /// One fit()'s loop: the replicas and their optimizer states, sized here.
  template <class Step>
  [[nodiscard]] Loop<Step> start(Step& step) const {
    if (period < 1)
      throw invalid_argument("dptrain::LocalSgd: period must be at least 1, got " + std::to_string(period));
    if (warmup_steps < 0)
      throw invalid_argument("dptrain::LocalSgd: warmup_steps must be >= 0, got " + std::to_string(warmup_steps));
    if constexpr (ReadsGradientTable<typename Step::Optimizer>)
      throw invalid_argument(
          "dptrain::LocalSgd: Sag and Saga keep one mean of one table of per-sample gradients, which each replica "
          "would move on its own; use the synchronous step");
    if constexpr (SumsOverGroups<typename Step::Optimizer>)
      throw invalid_argument(
          "dptrain::LocalSgd: Lars and Lamb need sums over each parameter group between the two halves of their "
          "update, which only the synchronous step takes; use the synchronous step");
    return Loop<Step>(step, *this);
  }
};

template <class Step>
class LocalSgd::Loop {
  using Scalar = typename Step::Scalar;

 public:
  /// on_step_end runs at averaging points, from the loop (see the class).
  static constexpr bool runs_step_hooks = true;

  Loop(Step& step, const LocalSgd& policy)
      : step_(step),
        policy_(policy),
        biases_(whole_theta_biases(step)),
        workers_(static_cast<std::size_t>(step.options().threads)) {
    const Index n = step.theta().size();
    for (Worker& w : workers_) {
      w.theta = AlignedBuffer<Scalar>(n);
      w.state.assign(static_cast<std::size_t>(Step::state_slots), AlignedBuffer<Scalar>(n));
    }
  }

  /// Every thread of the team: the span's steps, local ones and averaging points.
  SpanEnd run(const TeamMember& me, const StepSpan& span) {
    Worker& my = workers_[static_cast<std::size_t>(me.rank)];
    SpanEnd end;
    for (Index k = 0; k < span.count; ++k) {
      const Index t = span.first + k, s = span.epoch_step + k;
      const bool averages =
          k + 1 == span.count || t <= policy_.warmup_steps || (t - policy_.warmup_steps) % policy_.period == 0;
      if (!averages) {
        local_step(me, my, t, s);
        continue;
      }
      end = {k + 1, averaging_step(me, my, span, k)};
      if (end.last.leave) break;
    }
    step_.adopt(me, end.last, {.samples = std::exchange(my.samples, 0)});
    return end;
  }

 private:
  // One worker's replica, its optimizer state, and what its local steps since the last averaging
  // point add up to; on cache lines of its own.
  struct alignas(cache_line_bytes) Worker {
    AlignedBuffer<Scalar> theta;
    std::vector<AlignedBuffer<Scalar>> state;
    StepScalars pending;    // the local steps' loss, samples, failures and stop requests
    Index local_steps = 0;  // since the last averaging point (0: the replica is not in use)
    Index samples = 0;      // of its local steps since the span began, for its report
    StepOutcome left;       // the decision to leave at an averaging point whose period failed
  };

  // A step on this worker's replica alone: no barrier, no communication.
  void local_step(const TeamMember& me, Worker& my, Index t, Index s) {
    const VectorMap<Scalar> theta = step_.theta();
    const Index n = theta.size();
    if (my.local_steps == 0) {  // the period's first local step: the replica starts from the average
      std::copy_n(theta.data(), n, my.theta.data());
      const auto state = step_.optimizer_state();
      for (std::size_t j = 0; j < my.state.size(); ++j) std::copy_n(state[j].data(), n, my.state[j].data());
    }
    ++my.local_steps;
    StepScalars part = step_.local_gradient(me, t, s, ConstVectorMap<Scalar>(my.theta.data(), n));
    const VectorMap<Scalar> g = step_.gradient(me);
    part.sumsq = Step::squared_norm(g);
    // The keeper keeps a non-finite step's error (NonFinitePolicy::stop); a failure is only counted
    // here, and judged at the averaging point, where every process takes part.
    const StepOutcome local = part.failures > 0 ? StepOutcome{.leave = true} : step_.judge(part, t, true);
    if (local.update) step_.update_range(g, {0, n}, my.theta.data(), my.state, biases_, local, t);
    if (local.leave) part.failures = std::max(part.failures, 1.0);
    part.sumsq = 0;
    my.pending += part;
    my.samples += static_cast<Index>(part.samples);
    step_.charge(me, &WorkerReport::update);
  }

  // The period's last step: the replicas averaged into θ and the trainer's state, then one
  // synchronous step from there with every worker's gradient at its own replica.
  const StepOutcome& averaging_step(const TeamMember& me, Worker& my, const StepSpan& span, Index k) {
    const Index t = span.first + k, s = span.epoch_step + k;
    const Index n = step_.theta().size();
    const bool local = my.local_steps > 0;
    if (local)
      step_.local_gradient(me, t, s, ConstVectorMap<Scalar>(my.theta.data(), n));
    else
      step_.local_gradient(me, t, s);
    if (local) {
      const StepScalars period = step_.sum_scalars(me, std::exchange(my.pending, {}));
      const Index steps = std::exchange(my.local_steps, 0);
      if (period.failures > 0 || period.stop_requests > 0) {  // leave with θ the last average
        // Named in the error: a hook's failure came after the last averaging point, before the
        // period's first step; a worker's, in one of the period's steps.
        const Index at = period.failures > 0 && period.hook_failures == period.failures ? t - steps : t - 1;
        my.left = step_.judge(period, at, me.rank == 0);
        return my.left;
      }
      average(me, my);
      if (me.rank == 0) record_local_steps(span, k, steps, period);
    }
    step_.wait_for_workers(me);
    const VectorMap<Scalar> shard = step_.reduce_gradients(me);
    if (step_.reduce_scalars(me, shard)) step_.update(me, shard);
    step_.publish(me);
    return step_.finish(me, span, k, /*hook_point=*/true);
  }

  // θ ← the mean of the replicas, and each state slot likewise: this thread's shard of each.
  void average(const TeamMember& me, Worker& my) {
    const IndexRange mine = step_.shard(me);
    const auto scale = Scalar(1) / static_cast<Scalar>(step_.workers());
    const auto mean_into = [&](AlignedBuffer<Scalar>& replica, Scalar* to) {
      const VectorMap<Scalar> sum = step_.sum_vectors(me, {replica.data(), replica.size()});
      VectorMap<Scalar>(to + mine.begin, mine.size) = sum * scale;
    };
    mean_into(my.theta, step_.theta().data());
    const auto state = step_.optimizer_state();
    for (std::size_t j = 0; j < my.state.size(); ++j) mean_into(my.state[j], state[j].data());
  }

  // Thread 0: the period's local steps, k − steps … k − 1 of the span, each with the period's mean loss.
  void record_local_steps(const StepSpan& span, Index k, Index steps, const StepScalars& period) {
    const auto samples = static_cast<Index>(period.samples);
    StepOutcome outcome{.loss = period.loss / std::max(period.samples, 1.0), .update = true};
    for (Index i = 0; i < steps; ++i) {
      outcome.samples = samples / steps + (i < samples % steps ? 1 : 0);
      step_.record(span, k - steps + i, outcome, nullptr, /*hook_point=*/false);
    }
  }

  Step& step_;
  LocalSgd policy_;
  std::vector<IndexRange> biases_;  // θ's biases, for a whole replica's update
  std::vector<Worker> workers_;
};

}  // namespace dptrain
