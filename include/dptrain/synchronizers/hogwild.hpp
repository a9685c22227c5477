// SPDX-License-Identifier: MIT
// Hogwild!: lock-free asynchronous SGD. Each thread reads θ and adds its own update to it with no
// barrier between steps.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/synchronizers/step_parts.hpp"

namespace dptrain {

/**
 * @brief Hogwild! (Niu, Recht, Ré and Wright, "Hogwild!: a lock-free approach to parallelizing
 * stochastic gradient descent", 2011): every thread takes its micro-batch of each step (as the
 * Partitioner cuts it) at θ as it reads it, and adds its own update to θ, with no barrier and no
 * lock between steps. No worker ever waits for another inside an epoch.
 *
 * No undefined behaviour: during a span, θ is read and written only through `std::atomic_ref`
 * (relaxed loads into the thread's own copy, which the model reads; each coordinate's change
 * added with an atomic fetch_add, so no update is lost), and the threads meet at a barrier at
 * every span's end, where θ is plain again for the hooks.
 *
 * Each update is one worker's: the Optimizer applied to its own gradient (the mean of its
 * micro-batch; clipping and the non-finite check use its own norm) at the θ it read, and the
 * change added to θ. Only a stateless Optimizer is accepted (Sgd, with or without weight
 * decay): a state per coordinate (momentum, Adam's moments) raced the same way would mix every
 * thread's history into one.
 *
 * Not reproducible: which updates a thread's read of θ has seen depends on timing, and so do the
 * bits of θ. With one thread it is SGD on that thread's micro-batches (θ + (θ′ − θ) for θ′, equal
 * to the synchronous step up to rounding).
 *
 * What a user sees:
 * - Callbacks: on_step_end runs at the end of each span (every epoch's end, max_steps), on thread 0
 *   once every thread has stopped writing θ; no hook can read θ while threads write it.
 * - The record: each step's loss is the mean over every worker's micro-batch of it, each at the θ
 *   that worker read; the steps are recorded at the span's end.
 * - Checkpoints at epoch ends save θ (there is no optimizer state).
 * - A worker that throws, or a non-finite update under NonFinitePolicy::stop: every thread stops
 *   at its next step; θ keeps every update made until then; fit() throws the first error. A stop
 *   asked by a callback is acted on before the next span's first step.
 * - One process (across processes LocalSgd is the mode to use); an adaptive partitioner is refused.
 * - Memory: two copies of θ per thread.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.1}, dptrain::Hogwild{});
 * static_assert(dptrain::Synchronizer<dptrain::Hogwild>);
 * @endcode
 */
struct Hogwild {
  template <class Step>
  class Loop;

  /// One fit()'s loop: each thread's copies of θ, sized here.
  template <class Step>
  [[nodiscard]] Loop<Step> start(Step& step) const {
    if (Step::state_slots > 0)
      throw invalid_argument("dptrain::Hogwild: the optimizer keeps " + std::to_string(Step::state_slots) +
                             " state vector(s); Hogwild!'s threads write θ with no lock, and a state raced the same "
                             "way would mix every thread's history into one: use Sgd");
    if (step.processes() > 1)
      throw invalid_argument("dptrain::Hogwild runs in one process; this run has " + std::to_string(step.processes()) +
                             " (between processes, LocalSgd is the mode that communicates less)");
    if (Step::adaptive_partitioner)
      throw invalid_argument(
          "dptrain::Hogwild: an adaptive partitioner learns at the barrier after each step's gradients, which this "
          "mode does not have; use EvenPartitioner or WeightedPartitioner");
    return Loop<Step>(step);
  }
};

template <class Step>
class Hogwild::Loop {
  using Scalar = typename Step::Scalar;

 public:
  /// on_step_end runs at span ends, from the loop (see the class).
  static constexpr bool runs_step_hooks = true;

  explicit Loop(Step& step)
      : step_(step), biases_(whole_theta_biases(step)), workers_(static_cast<std::size_t>(step.options().threads)) {
    for (Worker& w : workers_) w.read = w.updated = AlignedBuffer<Scalar>(step.theta().size());
  }

  /// Every thread of the team: its micro-batch of each of the span's steps, at its own pace.
  SpanEnd run(const TeamMember& me, const StepSpan& span) {
    Worker& my = workers_[static_cast<std::size_t>(me.rank)];
    if (my.parts.size() < static_cast<std::size_t>(span.count)) my.parts.resize(static_cast<std::size_t>(span.count));
    // A callback's stop or failure at the last span's end: every thread sees it here, after the
    // trainer's barrier, and leaves before writing θ.
    if (const StepScalars hooks = step_.hook_scalars(); hooks.failures > 0 || hooks.stop_requests > 0)
      return {0, step_.judge(hooks, span.first, false)};
    my.done = 0;
    for (Index k = 0; k < span.count && !left_.load(std::memory_order_relaxed); ++k) {
      if (!take_step(me, my, span, k)) {
        left_.store(true, std::memory_order_relaxed);
        break;
      }
      my.done = k + 1;
    }
    me.barrier();  // every thread has stopped writing θ
    const SpanEnd end = close(me, span);
    step_.adopt(me, end.last, {.samples = my.samples});
    my.samples = 0;
    me.barrier();  // the hooks at the span's end have run
    step_.charge(me, &WorkerReport::wait);
    return end;
  }

 private:
  // One thread's θ as it read it, the same after its update, and the scalars of its steps.
  struct alignas(cache_line_bytes) Worker {
    AlignedBuffer<Scalar> read, updated;
    std::vector<StepScalars> parts;  // of the span's steps
    Index done = 0;                  // steps of the span it completed
    Index samples = 0;
    StepOutcome failed;  // its decision to leave, if it made one
  };

  // Step k of the span on this thread: read θ, its gradient there, its update added to θ. False
  // if the team must leave (a failure, a stop, a non-finite step under NonFinitePolicy::stop).
  bool take_step(const TeamMember& me, Worker& my, const StepSpan& span, Index k) {
    const Index t = span.first + k, n = my.read.size();
    Scalar *theta = step_.theta().data(), *read = my.read.data(), *updated = my.updated.data();
    for (Index i = 0; i < n; ++i) read[i] = std::atomic_ref<Scalar>(theta[i]).load(std::memory_order_relaxed);
    StepScalars part = step_.local_gradient(me, t, span.epoch_step + k, ConstVectorMap<Scalar>(read, n));
    const VectorMap<Scalar> g = step_.gradient(me);
    part.sumsq = Step::squared_norm(g);
    const StepOutcome outcome = step_.judge(part, t, true);
    my.parts[static_cast<std::size_t>(k)] = part;
    if (outcome.leave) {
      my.failed = outcome;
      return false;
    }
    my.samples += static_cast<Index>(part.samples);
    if (outcome.update) {
      std::copy_n(read, n, updated);
      step_.update_range(g, {0, n}, updated, {}, biases_, outcome, t);
      for (Index i = 0; i < n; ++i)
        std::atomic_ref<Scalar>(theta[i]).fetch_add(updated[i] - read[i], std::memory_order_relaxed);
    }
    step_.charge(me, &WorkerReport::update);
    return true;
  }

  // After the span's barrier: thread 0 records the steps every thread completed (the last one a
  // hook point), each with the mean loss of its micro-batches; every thread returns the same end.
  SpanEnd close(const TeamMember& me, const StepSpan& span) {
    Index steps = span.count;
    for (const Worker& w : workers_) steps = std::min(steps, w.done);
    for (const Worker& w : workers_)
      if (w.failed.leave) return {steps, w.failed};
    StepOutcome outcome;
    for (Index k = 0; k < steps; ++k) {
      StepScalars totals;
      for (const Worker& w : workers_) totals += w.parts[static_cast<std::size_t>(k)];
      outcome = {.loss = totals.loss / std::max(totals.samples, 1.0),
                 .samples = static_cast<Index>(totals.samples),
                 .update = true};
      if (me.rank == 0) step_.record(span, k, outcome, nullptr, /*hook_point=*/k + 1 == steps);
    }
    return {steps, outcome};
  }

  Step& step_;
  std::vector<IndexRange> biases_;  // θ's biases, for a whole vector's update
  std::vector<Worker> workers_;
  std::atomic<bool> left_{false};  // a worker made the decision to leave
};

}  // namespace dptrain
