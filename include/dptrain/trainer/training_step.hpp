// SPDX-License-Identifier: MIT
// TrainingStep: one step's parts — local gradient, reduce, decide, update, publish θ — and their clocks.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cmath>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/team_barrier.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/synchronizers/step_parts.hpp"
#include "dptrain/detail/bias_ranges.hpp"
#include "dptrain/detail/dataset_rows.hpp"
#include "dptrain/detail/optimizer_support.hpp"
#include "dptrain/detail/parameter_groups.hpp"
#include "dptrain/trainer/first_error.hpp"
#include "dptrain/trainer/run_plan.hpp"
#include "dptrain/trainer/scalar_collective.hpp"
#include "dptrain/trainer/trainer_options.hpp"

namespace dptrain {

/// Where each step taken is recorded (the trainer's run, into its RunRecord): called once per
/// step, by one thread, in step order, with θ as the step left it (a loop that runs the step hooks
/// itself has them called there, on that θ).
template <class Scalar>
class StepLog {
 public:
  virtual void record(const StepSpan& span, Index k, const StepOutcome& outcome, double lr, Scalar* theta,
                      bool hook_point) = 0;

 protected:
  ~StepLog() = default;
};

/**
 * @brief The parts of a step that a Synchronizer's loop composes (StepParts, in
 * synchronizers/step_parts.hpp, lists and documents them), with each worker's state (gradient
 * buffer, workspace, gather buffer, phase clock), sized once before the first step. Its public
 * members are exactly that list; what only the trainer calls (clocks, reports, hook signals) is
 * private to DataParallelTrainer.
 *
 * @tparam Policies  the trainer's policy types (see DataParallelTrainer)
 */
template <class M, class D, class WorkerPolicy, class P, class A, class O, class S, class Group>
class TrainingStep {
 public:
  using Scalar = typename M::scalar_type;
  using Clock = std::chrono::steady_clock;
  using WorkerState = decltype(std::declval<const WorkerPolicy&>().make(std::declval<const M&>(), Index{}, Index{}));
  using Buffer = typename D::Buffer;
  using Model = M;
  using Optimizer = O;
  static constexpr int state_slots = O::state_slots;
  static constexpr bool adaptive_partitioner = AdaptivePartitioner<P>;
  static constexpr bool passes_partials = OrderedProcessGroup<Group>;
  static constexpr bool sums_groups = SumsOverGroups<O>;

  /// What the step works on, kept as given (the step reads `in_.options`, …); every reference
  /// must outlive it.
  struct Inputs {
    const TrainerOptions& options;
    const RunPlan& plan;
    const M& model;
    VectorRef<Scalar> theta;
    const D& data;
    const Group& group;
    TrainingState<Scalar>& state;  ///< its optimizer_state is sized here
    FirstError& errors;
    const WorkerPolicy& worker;
    const P& partitioner;  ///< copied: an adaptive one learns during this fit()
    const A& aggregator;
    const O& optimizer;
    const S& schedule;
    TeamBarrier* barrier;  ///< the team's barrier (WaitPolicy::spin_then_sleep), or null: `omp barrier`
    StepLog<Scalar>* log;  ///< where each step taken is recorded (null: nowhere)
  };

  /// Checks the Partitioner and sizes the workers' buffers, but makes nothing yet: make_workers()
  /// does, once the Synchronizer's loop has started, so that its refusals come first.
  explicit TrainingStep(const Inputs& in)
      : in_(in),
        partitioner_(in.partitioner),
        buffers_{{}, {in.theta.size(), in.options.threads}},
        biases_(detail::model_biases(in.model, in.optimizer), buffers_.layout),
        scalars_(in.options.threads) {
    const Index threads = in_.options.threads, workers = in_.group.workers();
    // The Partitioner serves every worker of every process (known only now, after connect); a
    // refusal is kept for run(), which then leaves with every process before the first step.
    const bool partitions = in_.errors.guard([&] {
      if constexpr (requires { partitioner_.validate(workers); }) partitioner_.validate(workers);
      if constexpr (ReadsGradientTable<O>) {
        if (in_.group.size() > 1 && !sharded_data())
          throw invalid_argument(
              "dptrain::DataParallelTrainer: Sag and Saga with several processes need sharded data "
              "(MpiData::sharded): each process keeps the table's rows of its own samples, and with the data "
              "replicated a sample's owner changes every epoch");
      }
      if constexpr (sums_groups) {
        if (!SumsValues<Group> && in_.group.size() > 1)
          throw invalid_argument(
              "dptrain::DataParallelTrainer: this optimizer sums over parameter groups, and this run's "
              "Communicator cannot sum them across its processes (ProcessGroup::all_reduce_values)");
        groups_ = detail::SliceGroups(detail::model_parameter_groups(in_.model), buffers_.layout, process_part());
      }
    });
    // A worker's largest micro-batch: only full minibatches and the last partial one occur.
    for (const Index batch : in_.plan.minibatch_sizes()) {
      if (!partitions) break;
      if constexpr (requires { partitioner_.max_size(batch, workers); }) {
        max_rows_ = std::max(max_rows_, std::min(batch, static_cast<Index>(partitioner_.max_size(batch, workers))));
      } else {
        for (Index rank = 0; rank < threads; ++rank)
          max_rows_ = std::max(max_rows_, partitioner_.range(batch, workers, global_worker(rank)).size);
      }
    }
  }

  /// Each worker's state and gather buffer, and the trainer's optimizer state (before the first
  /// step, after the Synchronizer's start()).
  void make_workers() {
    const Index threads = in_.options.threads;
    if constexpr (adaptive_partitioner) loads_.resize(static_cast<std::size_t>(threads));
    slots_.reserve(static_cast<std::size_t>(threads));
    for (Index rank = 0; rank < threads; ++rank)
      slots_.emplace_back(in_.worker.make(in_.model, global_worker(rank), max_rows_), make_buffer(max_rows_));
    for (Slot& slot : slots_) buffer_pointers_.push_back(slot.worker.gradient().data());
    if constexpr (sums_groups) {
      // Each thread's sums of every group, then group_sums values of scratch (GroupPiece::counted).
      const auto values = static_cast<std::size_t>(groups_.count() * O::group_sums);
      for (Slot& slot : slots_) {
        slot.group_sums.resize(values + static_cast<std::size_t>(O::group_sums));
        slot.group_totals.resize(values);
      }
    }
    for (auto& side : vector_pointers_) side.resize(static_cast<std::size_t>(threads));
    buffers_.data = buffer_pointers_;
    in_.state.optimizer_state.assign(static_cast<std::size_t>(slots), AlignedBuffer<Scalar>(in_.theta.size()));
  }

  // --- what a loop may ask before it starts (StepQueries) ----------------------------------------

  [[nodiscard]] const TrainerOptions& options() const noexcept { return in_.options; }
  [[nodiscard]] Index processes() const noexcept { return in_.group.size(); }
  [[nodiscard]] Index process() const noexcept { return in_.group.rank(); }
  /// The workers that share each minibatch, and this process's first among them.
  [[nodiscard]] Index workers() const noexcept { return in_.group.workers(); }
  [[nodiscard]] Index first_worker() const noexcept { return in_.group.first_worker(); }
  /// θ as the trainer holds it: what every step span starts from and leaves its result in.
  [[nodiscard]] VectorMap<Scalar> theta() noexcept { return {in_.theta.data(), in_.theta.size()}; }
  /// The trainer's optimizer state: state_slots vectors of θ's length (what checkpoints save).
  [[nodiscard]] std::span<AlignedBuffer<Scalar>> optimizer_state() noexcept { return in_.state.optimizer_state; }
  /// The slice of θ (and of any vector of its length) that thread me owns in the collective parts.
  [[nodiscard]] IndexRange shard(const TeamMember& me) const noexcept { return buffers_.layout.shard(me.rank); }
  /// How long the team's waits spin before they sleep (zero when they sleep at once).
  [[nodiscard]] std::chrono::nanoseconds spin() const noexcept {
    return in_.barrier != nullptr ? in_.barrier->spin() : std::chrono::nanoseconds(0);
  }
  /// The largest minibatch of the run: a chunk of it is the most a chunk's buffers hold.
  [[nodiscard]] Index max_minibatch() const { return std::ranges::max(in_.plan.minibatch_sizes()); }
  /// The learning rate of the run's `step`-th step.
  [[nodiscard]] double lr(Index step) const { return in_.optimizer.lr * in_.schedule.factor(step); }
  /// The fit's Model and Optimizer.
  [[nodiscard]] const M& model() const noexcept { return in_.model; }
  [[nodiscard]] const O& optimizer() const noexcept { return in_.optimizer; }

  // --- the collective parts (CollectiveStepParts) ------------------------------------------------

  /// Worker me's part of step s of the epoch (the run's `step`-th): the gradient of its
  /// micro-batch of each of the step's minibatches, at θ (or at `theta`), into its own buffer.
  StepScalars local_gradient(const TeamMember& me, Index step, Index s) {
    return local_gradient(me, step, s, ConstVectorMap<Scalar>(in_.theta.data(), in_.theta.size()));
  }
  StepScalars local_gradient(const TeamMember& me, Index step, Index s, ConstVectorRef<Scalar> theta) {
    Slot& my = slot(me.rank);
    my.step = step;
    std::exception_ptr failure;
    my.part = gradient(my.worker, my.buffer, ConstVectorMap<Scalar>(theta.data(), theta.size()), s,
                       Share{.index = global_worker(me.rank)}, failure);
    if (failure) {
      in_.errors.keep(std::move(failure));
      my.failed = true;
    }
    my.part.failures = my.failed ? 1.0 : 0.0;  // a hook's failure too (thread 0)
    my.part.hook_failures = me.rank == 0 && hook_failed_.load(std::memory_order_relaxed) ? 1.0 : 0.0;
    if (me.rank == 0 && stop_requested_.load(std::memory_order_relaxed)) my.part.stop_requests = 1;
    const Clock::time_point before = my.last;
    charge(me, &WorkerReport::compute);
    my.compute_seconds = std::chrono::duration<double>(my.last - before).count();
    return my.part;
  }

  /// Worker me's gradient as local_gradient() left it (the mean of its samples under Weighting::equal).
  [[nodiscard]] VectorMap<Scalar> gradient(const TeamMember& me) { return slot(me.rank).worker.gradient(); }

  /// A barrier after which every worker's local gradient is written. An adaptive partitioner
  /// learns here, on thread 0, from every worker's samples and gradient time.
  void wait_for_workers(const TeamMember& me) {
    me.barrier();
    if constexpr (adaptive_partitioner) {
      // No worker calls range() before the step's last barrier; a throw here is seen by every
      // worker in the scalar reduction, like a worker's.
      if (me.rank == 0 && !in_.errors.guard([&] { observe_loads(); })) {
        slot(0).failed = true;
        slot(0).part.failures += 1;
      }
    }
    charge(me, &WorkerReport::aggregate);
  }

  /// This thread's shard of Σ G over the team and the processes.
  [[nodiscard]] VectorMap<Scalar> reduce_gradients(const TeamMember& me) {
    VectorMap<Scalar> shard = in_.aggregator.all_reduce(me, buffers_);
    in_.group.all_reduce(me, shard);
    charge(me, &WorkerReport::aggregate);
    return shard;
  }

  /// The step's one reduction of scalars; returns whether to update θ (the same everywhere).
  [[nodiscard]] bool reduce_scalars(const TeamMember& me, VectorMap<Scalar> shard) {
    Slot& my = slot(me.rank);
    my.part.sumsq = squared_norm(norm_part(me, shard));
    decide(me, scalars_.all_reduce(me, my.part, in_.group));
    charge(me, &WorkerReport::aggregate);
    return my.outcome.update;
  }

  /// This thread's slice: g ← scale·clip·Σ G, then the optimizer update of θ and its state. For an
  /// optimizer that SumsOverGroups, collective: the groups' sums are totalled between its two halves.
  void update(const TeamMember& me, VectorMap<Scalar> shard) {
    if constexpr (sums_groups) {
      update_groups(me, shard);
    } else {
      const Slot& my = slot(me.rank);
      update_range(shard, buffers_.layout.shard(me.rank), in_.theta.data(), in_.state.optimizer_state,
                   biases_.of(me.rank), my.outcome, my.step);
    }
    charge(me, &WorkerReport::update);
  }

  /// A barrier after which every worker sees the new θ.
  void publish(const TeamMember& me) {
    me.barrier();
    charge(me, &WorkerReport::wait);
  }

  /// After publish(): thread 0 records step k of `span` if it was taken, and at a `hook_point` of
  /// a loop that runs step hooks calls on_step_end there (the other threads go on); returns the
  /// step's decision (leave: every worker leaves training now, the same on every worker).
  const StepOutcome& finish(const TeamMember& me, const StepSpan& span, Index k, bool hook_point = false) {
    const StepOutcome& out = slot(me.rank).outcome;
    if (me.rank == 0 && !out.leave) record(span, k, out, nullptr, hook_point);
    return out;
  }

  /// Σ v over the team (the Aggregator) and the processes, v of θ's length; this thread's shard
  /// of the sum, elements shard(me). The vectors are summed in place and read by other threads
  /// until the next barrier.
  [[nodiscard]] VectorMap<Scalar> sum_vectors(const TeamMember& me, VectorMap<Scalar> v) {
    assert(v.size() == in_.theta.size() && "sum_vectors: a vector of theta's length");  // inside the team: no throw
    // Two tables, used alternately: a thread writes one again two calls later, after a barrier
    // that every thread reaches only once it has done with this call.
    Slot& my = slot(me.rank);
    std::vector<Scalar*>& table = vector_pointers_[static_cast<std::size_t>(my.vector_sums++ % 2)];
    table[static_cast<std::size_t>(me.rank)] = v.data();
    me.barrier();
    VectorMap<Scalar> shard = in_.aggregator.all_reduce(me, GradientBuffers<Scalar>{table, buffers_.layout});
    in_.group.all_reduce(me, shard);
    charge(me, &WorkerReport::aggregate);
    return shard;
  }

  /// Any scalars summed over the team and the processes (every thread gets the totals).
  [[nodiscard]] StepScalars sum_scalars(const TeamMember& me, const StepScalars& mine) {
    const StepScalars totals = scalars_.all_reduce(me, mine, in_.group);
    charge(me, &WorkerReport::aggregate);
    return totals;
  }

  /// Returns once the piece (and *scalars, unless null) hold what the process before passed on
  /// (the first process's: at once); thread 0 receives while the team waits: a wait for the
  /// processes before.
  void receive_partial(const TeamMember& me, VectorMap<Scalar> piece, StepScalars* scalars) {
    if constexpr (passes_partials) {
      if (in_.group.rank() > 0) {
        if (me.rank == 0) in_.group.receive_partial(piece, scalars);
        me.barrier();
      }
    }
    charge(me, &WorkerReport::wait);
  }

  /// A barrier, then thread 0 starts passing the piece (and *scalars) on to the next process.
  void pass_partial(const TeamMember& me, VectorMap<Scalar> piece, const StepScalars* scalars) {
    me.barrier();
    if constexpr (passes_partials) {
      if (in_.group.size() > 1 && me.rank == 0) in_.group.pass_partial(piece, scalars);
    }
    charge(me, &WorkerReport::aggregate);
  }

  /// Returns once every piece passed since the last call, and `scalars`, hold the last process's
  /// sums (with one process: at once).
  void await_total(const TeamMember& me, StepScalars& scalars) {
    if constexpr (passes_partials) {
      if (in_.group.size() > 1) {
        if (me.rank == 0) in_.group.await_total(scalars);
        me.barrier();
      }
    }
    charge(me, &WorkerReport::aggregate);
  }

  // --- the parts one thread calls at its own pace (ChunkedStepParts) -----------------------------

  /// A worker's state for chunks of at most `rows` samples (`id` names it to the Worker policy),
  /// and a buffer of as many rows (of none where unshuffled rows are read in place): made before
  /// the first step.
  [[nodiscard]] WorkerState make_worker(Index id, Index rows) const { return in_.worker.make(in_.model, id, rows); }
  [[nodiscard]] Buffer make_buffer(Index rows) const {
    return in_.data.make_buffer(in_.plan.shuffles() || !detail::views_rows<D> ? rows : 0);
  }
  /// The model's biases, cut along `layout`'s slices (for update_range).
  [[nodiscard]] detail::SliceBiases biases(const ShardLayout<Scalar>& layout) const {
    return detail::SliceBiases(detail::model_biases(in_.model, in_.optimizer), layout);
  }

  /**
   * @brief `share` of step s of the epoch's minibatches at `theta`, into `w`. Returns its
   * scalars; a failure is counted in them and its exception left in `failure`, for keep() if this
   * result is the one the step takes. Skipped once a hook stopped.
   */
  template <class Theta>
  StepScalars gradient(WorkerState& w, Buffer& buffer, const Theta& theta, Index s, Share share,
                       std::exception_ptr& failure) {
    // θ, or what the caller's function of the micro-batch gives (see ChunkedStepParts); and the
    // batch's rows to a state that takes them.
    const auto run = [&](const typename M::batch_type& batch, SampleIds ids) {
      const auto at = [&]() -> ConstVectorRef<Scalar> {
        if constexpr (std::is_convertible_v<const Theta&, ConstVectorRef<Scalar>>)
          return theta;
        else
          return ConstVectorMap<Scalar>(theta(batch));
      };
      if constexpr (IndexedWorkerState<WorkerState, M>)
        w.accumulate(in_.model, at(), batch, ids);
      else
        w.accumulate(in_.model, at(), batch);
    };
    w.zero();
    failure = nullptr;
    if (!stopping()) {
      try {
        const IndexRange batches = in_.plan.minibatches(s);
        for (Index b = batches.begin; b < batches.end(); ++b) {
          const IndexRange minibatch = in_.plan.minibatch(b);
          const IndexRange part = cut(minibatch.size, share);
          if (part.empty()) continue;
          const IndexRange positions{minibatch.begin + part.begin, part.size};
          if (in_.plan.shuffles()) {
            const std::span<const Index> rows = in_.plan.samples(positions);
            run(in_.data.gather(rows, buffer), SampleIds{rows, 0, positions.size});
          } else {
            run(detail::read_rows(in_.data, positions.begin, positions.size, buffer),
                SampleIds{{}, positions.begin, positions.size});
          }
        }
      } catch (...) {
        failure = std::current_exception();
      }
    }
    const Index samples = w.samples();
    VectorMap<Scalar> gradient = w.gradient();  // final: the sum reads it next
    if (in_.options.weighting == Weighting::equal && samples > 0) gradient *= Scalar(1) / static_cast<Scalar>(samples);
    return {.loss = w.loss(),
            .samples = static_cast<double>(samples),
            .busy_workers = samples > 0 ? 1.0 : 0.0,
            .failures = failure ? 1.0 : 0.0};
  }

  /// Charges the time since the last charge to `phase`, less the barriers' waits (to wait).
  void charge(const TeamMember& me, double WorkerReport::*phase) noexcept {
    Slot& my = slot(me.rank);
    const Clock::time_point now = Clock::now();
    my.report.*phase += std::chrono::duration<double>(now - my.last).count() - my.waited;
    my.report.wait += my.waited;
    my.waited = 0;
    my.last = now;
  }

  /// Keeps a failure of the step for fit() to throw (the first one kept wins).
  void keep(std::exception_ptr failure) noexcept { in_.errors.keep(std::move(failure)); }

  /// What the hooks since the last step add to its scalars: a failure, a stop request.
  [[nodiscard]] StepScalars hook_scalars() const noexcept {
    const double failed = hook_failed_.load(std::memory_order_relaxed) ? 1.0 : 0.0;
    return {.failures = failed,
            .stop_requests = stop_requested_.load(std::memory_order_relaxed) ? 1.0 : 0.0,
            .hook_failures = failed};
  }

  /// The decision of the run's `step`-th step from its totals (`sumsq`: ‖Σ G‖²). One thread of
  /// each process, the `keeper`, keeps the step's error, if any, for fit() to throw (with
  /// several processes that is thread 0, and collective).
  [[nodiscard]] StepOutcome judge(const StepScalars& totals, Index step, bool keeper) {
    StepOutcome out;
    out.samples = static_cast<Index>(totals.samples);
    out.loss = totals.loss / std::max(totals.samples, 1.0);
    out.scale = 1.0 / std::max(in_.options.weighting == Weighting::equal ? totals.busy_workers : totals.samples, 1.0);
    const double sumsq = totals.sumsq * out.scale * out.scale;
    out.norm = std::sqrt(sumsq);
    const bool finite = std::isfinite(totals.loss) && std::isfinite(sumsq);
    out.stop_requested = totals.stop_requests > 0;
    out.update = finite && totals.failures == 0 && !out.stop_requested;
    out.leave = totals.failures > 0 || totals.stop_requests > 0 ||
                (!finite && in_.options.on_non_finite == NonFinitePolicy::stop);
    if (keeper && totals.failures > 0) {
      // Only hooks failed: they ran after the step before this one (on_step_end, on_epoch_end, …).
      const bool hooks = totals.hook_failures == totals.failures;
      note_failure(!hooks      ? "at step " + std::to_string(step)
                   : step == 1 ? std::string("in a callback before step 1")
                               : "in a callback after step " + std::to_string(step - 1));
    }
    if (keeper && totals.failures == 0 && totals.stop_requests == 0 && !finite &&
        in_.options.on_non_finite == NonFinitePolicy::stop)
      in_.errors.keep(std::make_exception_ptr(non_finite_error(
          "dptrain::DataParallelTrainer: non-finite " + std::string(std::isfinite(totals.loss) ? "gradient" : "loss") +
              " at step " + std::to_string(step) + "; theta keeps its value from before that step",
          step)));
    return out;
  }

  /**
   * @brief Elements `range` of a step's update: g (that range of Σ G, scaled in place to the
   * clipped mean), then the Optimizer on `theta` and `state` (whole vectors of θ's length, updated
   * in `range` only: the trainer's, or the caller's own). `biases` are the range's biases,
   * relative to its start.
   */
  void update_range(VectorMap<Scalar> g, IndexRange range, Scalar* theta, std::span<AlignedBuffer<Scalar>> state,
                    std::span<const IndexRange> biases, const StepOutcome& outcome, Index step) {
    assert(!sums_groups && "update_range: an optimizer that sums over groups needs update()");  // refused at start
    detail::scale_and_update(in_.optimizer, g, gradient_factor(outcome),
                             slice(g, theta, state, range, biases, std::make_integer_sequence<int, slots>{}),
                             step_info(outcome, step));
  }

  /// Worker me takes the outcome of its span's last step, and adds the loop's `counts` of its
  /// work (samples, recomputed, staleness; their times are the step's clocks') to its report.
  void adopt(const TeamMember& me, const StepOutcome& outcome, const WorkerReport& counts) noexcept {
    Slot& my = slot(me.rank);
    my.outcome = outcome;
    my.report.samples += counts.samples;
    my.report.recomputed += counts.recomputed;
    my.report.staleness += counts.staleness;
    my.report.largest_staleness = std::max(my.report.largest_staleness, counts.largest_staleness);
  }

  /// Records step k of `span`, once, from whichever thread took its decision; `theta` holds θ as
  /// the step left it (null: the trainer's θ). At a `hook_point` of a loop that runs step hooks,
  /// the callbacks' on_step_end run here, on this thread.
  void record(const StepSpan& span, Index k, const StepOutcome& outcome, Scalar* theta = nullptr,
              bool hook_point = true) {
    if (in_.log != nullptr)
      in_.log->record(span, k, outcome, lr(span.first + k), theta != nullptr ? theta : in_.theta.data(), hook_point);
  }

  /// Σgᵢ² in double (detail::squared_norm).
  static double squared_norm(VectorMap<Scalar> g) {
    return detail::squared_norm(ConstVectorMap<Scalar>(g.data(), g.size()));
  }

 private:
  template <class, class, class, class, class, class, class>
  friend class DataParallelTrainer;

  // --- what only the trainer calls ---------------------------------------------------------------

  /**
   * @brief Collective, after the last step when training was not left early: with several
   * processes, one more reduction of the failures and stop requests since that step (a hook at
   * the end of the last epoch), so that every process ends the same way.
   */
  void agree_on_end(const TeamMember& me) {
    if (in_.group.size() == 1) return;
    Slot& my = slot(me.rank);
    my.part = {.failures = my.failed ? 1.0 : 0.0};
    const StepScalars totals = scalars_.all_reduce(me, my.part, in_.group);
    if (me.rank == 0 && totals.failures > 0) note_failure("at the end of training");
  }

  /**
   * @brief Thread 0 of every process, once the reduced scalars count a failure (collective with
   * several processes): a process that did not fail keeps an error naming the failing process and
   * its message, `when` it happened ("at step 7"); the failing one keeps its own exception.
   */
  void note_failure(const std::string& when) noexcept {
    if (in_.group.size() == 1) return;  // the failure is this process's own, kept where it was thrown
    std::string what = "another process failed";
    if constexpr (requires { in_.group.first_failure(std::string_view{}); }) {
      in_.errors.guard([&] {
        std::string first = in_.group.first_failure(in_.errors.message());
        if (!first.empty()) what = std::move(first);
      });
    }
    if (!in_.errors)
      in_.errors.keep(std::make_exception_ptr(error("dptrain::DataParallelTrainer: " + when + ", " + what)));
  }

  // --- the worker's clock ------------------------------------------------------------------------

  /// This thread's view of the team, its barriers timed into its wait.
  [[nodiscard]] TeamMember member(Index rank) noexcept {
    return {rank, in_.options.threads, &slot(rank).waited, in_.barrier};
  }

  /// Starts every worker's clock at the fit's start (before on_fit_begin).
  void start_clocks(Clock::time_point fit_start) noexcept {
    for (Slot& my : slots_) my.last = fit_start;
  }

  /// After the team has left: the time from each worker's last charge to `end` was a wait.
  void stop_clocks(Clock::time_point end) noexcept {
    for (Slot& my : slots_) {
      my.report.wait += std::chrono::duration<double>(end - my.last).count();
      my.last = end;
    }
  }

  /// Worker `rank`'s phase times and samples so far; read it only after the team has left.
  [[nodiscard]] const WorkerReport& report(Index rank) const noexcept { return slot(rank).report; }

  /// Each worker keeps a copy of its report before the barrier that precedes an epoch's end, for
  /// thread 0 to read after it (its live report changes at every barrier).
  void snapshot(const TeamMember& me) noexcept { slot(me.rank).snapshot = slot(me.rank).report; }
  [[nodiscard]] const WorkerReport& snapshot(Index rank) const noexcept { return slot(rank).snapshot; }

  // --- what hooks tell the next step -------------------------------------------------------------

  /// The thread that runs a hook: a callback asked to stop, or failed. The next step's scalars
  /// carry it to every worker of every process, which then leave together; until then every
  /// local thread knows (it reads this after the hook's barrier, or after the step it ended) and
  /// skips its gradient.
  void request_stop() noexcept { stop_requested_.store(true, std::memory_order_relaxed); }
  void hook_failed() noexcept {
    hook_failed_.store(true, std::memory_order_relaxed);
    slot(0).failed = true;
  }
  [[nodiscard]] bool stopping() const noexcept {
    return stop_requested_.load(std::memory_order_relaxed) || hook_failed_.load(std::memory_order_relaxed);
  }

  static constexpr int slots = O::state_slots;

  // Everything one thread writes during a step, on cache lines of its own.
  struct alignas(cache_line_bytes) Slot {
    Slot(WorkerState w, typename D::Buffer b) : worker(std::move(w)), buffer(std::move(b)) {}
    WorkerState worker;
    typename D::Buffer buffer;
    WorkerReport report, snapshot;
    Clock::time_point last;  // the last charge
    double waited = 0;       // barrier waits since the last charge (TeamMember::waited)
    StepScalars part;        // this worker's part of the step's scalars
    double compute_seconds = 0;
    Index step = 0;
    Index vector_sums = 0;                         // sum_vectors() calls: which pointer table is this call's
    std::vector<double> group_sums, group_totals;  // an optimizer that SumsOverGroups: this step's
    bool failed = false;                           // this worker threw (thread 0: or a hook did)
    StepOutcome outcome;
  };

  [[nodiscard]] Slot& slot(Index rank) noexcept { return slots_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] const Slot& slot(Index rank) const noexcept { return slots_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] Index global_worker(Index rank) const noexcept { return in_.group.first_worker() + rank; }
  // Whether each process trains on a shard of its own (then workers() counts only this process's).
  [[nodiscard]] bool sharded_data() const noexcept {
    return in_.group.size() > 1 && in_.group.workers() == in_.options.threads;
  }
  // An epoch's samples over every process: this one's, times the processes when each has its own shard.
  [[nodiscard]] Index epoch_samples() const noexcept {
    return in_.plan.sampler().samples * (sharded_data() ? in_.group.size() : 1);
  }

  // The part of a minibatch of `batch` samples that `share` covers.
  [[nodiscard]] IndexRange cut(Index batch, Share share) const {
    if (share.chunks > 0) {
      const Index begin = batch * share.index / share.chunks, end = batch * (share.index + 1) / share.chunks;
      return {begin, end - begin};
    }
    const IndexRange mine = partitioner_.range(batch, in_.group.workers(), share.index);
    if (mine.size > max_rows_)
      throw error("dptrain::DataParallelTrainer: the partitioner gave worker " + std::to_string(share.index) + " " +
                  std::to_string(mine.size) + " samples, more than the " + std::to_string(max_rows_) +
                  " its buffers were sized for (an adaptive partitioner's max_size() is too small)");
    return mine;
  }

  // Thread 0 between the first and the last barrier of a step: the step's loads to an adaptive partitioner.
  void observe_loads() {
    for (std::size_t rank = 0; rank < slots_.size(); ++rank)
      loads_[rank] = {slots_[rank].worker.samples(), slots_[rank].compute_seconds};
    partitioner_.observe(std::span<const WorkerLoad>(loads_));
  }

  // Every worker, from the same totals: the same outcome (thread 0 keeps the step's error).
  void decide(const TeamMember& me, const StepScalars& totals) {
    Slot& my = slot(me.rank);
    my.outcome = judge(totals, my.step, me.rank == 0);
    if (!my.outcome.leave) my.report.samples += static_cast<Index>(my.part.samples);  // a step taken (or skipped)
  }

  // The part of θ whose sums this process adds to the step's. Every process holds the same
  // reduced gradient and θ, so each takes its own 1/R of θ (all of it with one process): no
  // process reads all of θ while the others wait for its sums.
  [[nodiscard]] IndexRange process_part() const noexcept {
    return ShardLayout<Scalar>{in_.theta.size(), in_.group.size()}.shard(in_.group.rank());
  }

  // The part of this thread's shard whose squares this process sums (process_part()).
  [[nodiscard]] VectorMap<Scalar> norm_part(const TeamMember& me, VectorMap<Scalar> shard) const {
    const IndexRange mine = buffers_.layout.shard(me.rank);
    const IndexRange ours = process_part();
    const Index begin = std::max(mine.begin, ours.begin), end = std::min(mine.end(), ours.end());
    return {shard.data() + (begin - mine.begin), std::max<Index>(end - begin, 0)};
  }

  // The factor of Σ G in the update: the mean's scale, times the clipping's.
  [[nodiscard]] Scalar gradient_factor(const StepOutcome& outcome) const noexcept {
    double factor = outcome.scale;
    if (in_.options.clip_norm > 0 && outcome.norm > in_.options.clip_norm)
      factor *= in_.options.clip_norm / outcome.norm;
    return static_cast<Scalar>(factor);
  }

  [[nodiscard]] StepInfo step_info(const StepOutcome& outcome, Index step) const {
    return {.step = step, .lr = lr(step), .samples = outcome.samples, .epoch_samples = epoch_samples()};
  }

  // update() for an optimizer that SumsOverGroups: the first half on this thread's slice, the
  // groups' sums totalled over the team (in thread order) and the processes, the second half.
  void update_groups(const TeamMember& me, VectorMap<Scalar> shard) {
    Slot& my = slot(me.rank);
    const UpdateSlice<Scalar, slots> s =
        slice(shard, in_.theta.data(), in_.state.optimizer_state, buffers_.layout.shard(me.rank), biases_.of(me.rank),
              std::make_integer_sequence<int, slots>{});
    const StepInfo info = step_info(my.outcome, my.step);
    const std::span<double> sums(my.group_sums);
    std::ranges::fill(sums, 0.0);
    constexpr auto width = static_cast<std::size_t>(O::group_sums);
    detail::scale_and_add_group_sums(in_.optimizer, shard, gradient_factor(my.outcome), s, groups_.of(me.rank), info,
                                     sums.first(sums.size() - width), sums.last(width));
    charge(me, &WorkerReport::update);
    const std::span<const double> totals = total_group_sums(me);
    charge(me, &WorkerReport::aggregate);
    detail::update_groups(in_.optimizer, s, groups_.of(me.rank), info, totals);
  }

  // Every thread's group sums, summed in thread order and over the processes. With one process
  // each thread sums them itself after one barrier; with several, thread 0 does and hands them to
  // the process group, and a second barrier publishes them. A thread writes its sums again only
  // in the next step's update, after the barrier that ends this step.
  [[nodiscard]] std::span<const double> total_group_sums(const TeamMember& me) {
    const auto team_sum = [this](std::vector<double>& totals) {
      std::ranges::fill(totals, 0.0);
      for (const Slot& other : slots_)
        for (std::size_t i = 0; i < totals.size(); ++i) totals[i] += other.group_sums[i];
    };
    me.barrier();
    if (in_.group.size() == 1) {
      team_sum(slot(me.rank).group_totals);
      return slot(me.rank).group_totals;
    }
    if (me.rank == 0) {
      team_sum(slot(0).group_totals);
      if constexpr (SumsValues<Group>) in_.group.all_reduce_values(std::span<double>(slot(0).group_totals));
    }
    me.barrier();
    return slot(0).group_totals;
  }

  template <int... K>
  static UpdateSlice<Scalar, slots> slice(VectorMap<Scalar> g, Scalar* theta,
                                          [[maybe_unused]] std::span<AlignedBuffer<Scalar>> state, IndexRange range,
                                          std::span<const IndexRange> biases, std::integer_sequence<int, K...>) {
    return {VectorMap<Scalar>(theta + range.begin, range.size),
            ConstVectorMap<Scalar>(g.data(), g.size()),
            {VectorMap<Scalar>(state[static_cast<std::size_t>(K)].data() + range.begin, range.size)...},
            biases};
  }

  Inputs in_;
  P partitioner_;  // this fit()'s copy: an adaptive one learns as it trains

  Index max_rows_ = 0;  // the most samples a worker's buffers hold
  std::vector<Slot> slots_;
  std::vector<Scalar*> buffer_pointers_;
  std::array<std::vector<Scalar*>, 2> vector_pointers_;  // sum_vectors()' tables, used alternately
  GradientBuffers<Scalar> buffers_;
  detail::SliceBiases biases_;  // each slice's biases (the model's bias_ranges()), for the optimizer
  detail::SliceGroups groups_;  // each slice's parameter groups, for an optimizer that SumsOverGroups
  ScalarCollective scalars_;
  std::vector<WorkerLoad> loads_;  // the step's loads, for an adaptive partitioner (thread 0)
  std::atomic<bool> stop_requested_{false}, hook_failed_{false};  // written by the thread that runs hooks
};

}  // namespace dptrain
