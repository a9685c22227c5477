// SPDX-License-Identifier: MIT
// DataParallelTrainer: synchronous data-parallel SGD on one persistent OpenMP team.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "dptrain/aggregators/reduce_scatter_aggregator.hpp"
#include "dptrain/communicators/single_process_communicator.hpp"
#include "dptrain/concepts.hpp"
#include "dptrain/core/cores.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/omp.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/team_barrier.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/detail/callback_hooks.hpp"
#include "dptrain/detail/dataset_rows.hpp"
#include "dptrain/detail/parameter_groups.hpp"
#include "dptrain/optimizers/constant_schedule.hpp"
#include "dptrain/partitioners/even_partitioner.hpp"
#include "dptrain/synchronizers/every_step_synchronizer.hpp"
#include "dptrain/trainer/first_error.hpp"
#include "dptrain/trainer/hook_channel.hpp"
#include "dptrain/trainer/policy_placement.hpp"
#include "dptrain/trainer/run_plan.hpp"
#include "dptrain/trainer/run_record.hpp"
#include "dptrain/trainer/run_setup.hpp"
#include "dptrain/trainer/trainer_options.hpp"
#include "dptrain/trainer/training_step.hpp"
#include "dptrain/workers/gradient_worker.hpp"

namespace dptrain {

/**
 * @brief Synchronous data-parallel SGD: each step splits a minibatch among N OpenMP threads,
 * sums their local gradients, applies one optimizer update and lets every thread see the new θ.
 *
 * One step, on one persistent team of `options.threads` threads (× the processes of the
 * Communicator):
 * 1. every worker reads the same θ (shared memory, no copy);
 * 2. the Partitioner gives worker i its micro-batch D_i of the minibatch B;
 * 3. worker i computes G_i = Σ_{x∈D_i} ∇ℓ(x; θ) into its own buffer (Worker);
 * 4. the Aggregator sums the buffers in the team, the Communicator across processes; thread t
 *    receives shard t of Σ_i G_i, and one reduction of the step's scalars decides for everyone;
 * 5. thread t scales its shard to the mean (1/|B|), clips it, and applies the Optimizer to its
 *    slice of θ and of the optimizer state;
 * 6. a barrier: every worker now sees the new θ.
 * Steps 4–6 are the Synchronizer's (EveryStepSynchronizer). With the default by-samples weighting
 * the result equals, up to rounding, one worker's step on the whole minibatch.
 *
 * The constructor takes the options and then the policies, in any order, each placed by the
 * concept it satisfies; all but the Optimizer are optional:
 * Schedule (ConstantSchedule), Partitioner (EvenPartitioner), Aggregator
 * (ReduceScatterAggregator), Worker (GradientWorker), Communicator (SingleProcessCommunicator),
 * Synchronizer (EveryStepSynchronizer).
 *
 * fit() may be called again (with the same or another model and data); each call starts with
 * fresh optimizer state and works on its own copy of the options. A trainer is not meant to run
 * two fit() calls at once.
 *
 * @code
 * dptrain::SoftmaxRegression<float> model(784, 10);
 * dptrain::Vector<float> theta = model.init_parameters();
 * dptrain::DataParallelTrainer trainer({.threads = 4, .batch_size = 256, .epochs = 5},
 *                                      dptrain::Momentum{.lr = 0.05}, dptrain::CosineSchedule{},
 *                                      dptrain::RingAllReduceAggregator{});
 * dptrain::FitReport report = trainer.fit(model, theta, data);
 * @endcode
 */
template <class OptimizerT, class ScheduleT, class PartitionerT, class AggregatorT, class WorkerT, class CommunicatorT,
          class SynchronizerT>
class DataParallelTrainer {
 public:
  using optimizer_type = OptimizerT;
  using schedule_type = ScheduleT;
  using partitioner_type = PartitionerT;
  using aggregator_type = AggregatorT;
  using worker_policy = WorkerT;
  using communicator_type = CommunicatorT;
  using synchronizer_type = SynchronizerT;

  /**
   * @brief The options, then the policies in any order (the optimizer is required).
   *
   * Each policy argument must satisfy exactly one policy concept, and no two may fill the same
   * one; otherwise the build stops with a sentence that names the concept.
   */
  template <class... Policies>
  explicit DataParallelTrainer(const TrainerOptions& options, Policies&&... policies)
      : options_(options),
        optimizer_(detail::take<detail::OptimizerRole>(policies...)),
        schedule_(detail::take<detail::ScheduleRole<ScheduleT>>(policies...)),
        partitioner_(detail::take<detail::PartitionerRole<PartitionerT>>(policies...)),
        aggregator_(detail::take<detail::AggregatorRole<AggregatorT>>(policies...)),
        worker_(detail::take<detail::WorkerRole<WorkerT>>(policies...)),
        communicator_(detail::take<detail::CommunicatorRole<CommunicatorT>>(policies...)),
        synchronizer_(detail::take<detail::SynchronizerRole<SynchronizerT>>(policies...)) {
    // A class's static_asserts fire where it is completed: here, before anything else fails.
    static_assert(((sizeof(detail::ArgumentCheck<std::decay_t<Policies>, std::decay_t<Policies>...>) > 0) && ...));
    static_assert(Optimizer<OptimizerT>,
                  "dptrain: DataParallelTrainer needs an Optimizer after the options, e.g. dptrain::Sgd{.lr = 0.1}");
  }

  /// The options each fit() copies.
  [[nodiscard]] const TrainerOptions& options() const noexcept { return options_; }
  [[nodiscard]] const OptimizerT& optimizer() const noexcept { return optimizer_; }

  /**
   * @brief Trains θ in place on `data` and returns a report.
   *
   * @param model      a Model; called concurrently from every worker
   * @param theta      the parameters, of length model.num_parameters(); updated in place
   * @param data       a data set whose batches are the model's batch_type (e.g. DenseDataset)
   * @param callbacks  objects with any of the hooks on_fit_begin, on_epoch_begin, on_step_end,
   *                   on_epoch_end, on_fit_end taking `TrainContext<Scalar>&`; all run on the
   *                   thread that called fit() while the other workers wait or run the work
   *                   the hook hands to ctx.team; returning true stops
   * @throws dptrain::invalid_argument for bad options, hyperparameters or data (before training)
   * @throws dptrain::non_finite_error when a step's loss or gradient is not finite (policy stop)
   * @throws whatever a model or callback threw, with its original type, after the team has left
   */
  template <class M, class D, class... Callbacks>
  FitReport fit(const M& model, VectorRef<typename M::scalar_type> theta, const D& data, Callbacks&&... callbacks);

  /**
   * @brief Goes on training from `state` (ctx.state of an earlier fit(), or load_checkpoint()) as
   * if that fit() had never stopped: with θ as it was then and the same ranks × threads (or any,
   * under BackupWorkers with fixed chunks), the result is bitwise the one of an uninterrupted run.
   *
   * Steps and epochs count from the start of training: `options().epochs` and `max_steps` are
   * the totals of the whole run, ctx.step and ctx.epoch continue from the state's; the report
   * counts what this call ran, and its `notes` what changed since the state was made (other
   * optimizer settings, synchronizer or workers: state.made_by, docs/checkpoints.md).
   *
   * @throws dptrain::invalid_argument when the state does not fit this run: another sampling plan
   *         (data size, batch_size, accumulation_steps, drop_last, shuffle, seed), another
   *         optimizer type (by name, or number of state buffers) or θ length, an inconsistent
   *         position, or under TrainerOptions::same_workers_on_resume other workers; besides
   *         everything fit() throws
   */
  template <class M, class D, class... Callbacks>
  FitReport resume(const M& model, VectorRef<typename M::scalar_type> theta, const D& data,
                   const TrainingState<typename M::scalar_type>& state, Callbacks&&... callbacks);

  /// A "model" without the Model's types: stops the build with the Model's sentence first,
  /// instead of "no matching function for call to fit".
  template <class M, class... Arguments>
  requires(!ModelTypes<M>) FitReport fit(const M&, Arguments&&...) {
    static_assert(ModelTypes<M>,
                  "dptrain: the Model must define scalar_type (float or double), batch_type and workspace_type");
    return {};
  }

 private:
  template <class M, class D>
  struct ModelCheck;
  template <class M, class D>
  void validate(const M& model, VectorRef<typename M::scalar_type> theta, const D& data) const;
  template <class M, class D>
  void validate_everywhere(const M& model, VectorRef<typename M::scalar_type> theta, const D& data) const;

  template <class M, class D, class... Callbacks>
  class Run;

  TrainerOptions options_;
  OptimizerT optimizer_;
  ScheduleT schedule_;
  PartitionerT partitioner_;
  AggregatorT aggregator_;
  WorkerT worker_;
  CommunicatorT communicator_;
  SynchronizerT synchronizer_;
};

/// `DataParallelTrainer trainer(options, dptrain::Adam{...}, dptrain::TreeAggregator{})`: each
/// policy argument fills the role whose concept it satisfies; the others keep their defaults.
template <class... Policies>
DataParallelTrainer(const TrainerOptions&, Policies&&...)
    -> DataParallelTrainer<detail::placed_t<detail::OptimizerRole, Policies...>,
                           detail::placed_t<detail::ScheduleRole<ConstantSchedule>, Policies...>,
                           detail::placed_t<detail::PartitionerRole<EvenPartitioner>, Policies...>,
                           detail::placed_t<detail::AggregatorRole<ReduceScatterAggregator>, Policies...>,
                           detail::placed_t<detail::WorkerRole<GradientWorker>, Policies...>,
                           detail::placed_t<detail::CommunicatorRole<SingleProcessCommunicator>, Policies...>,
                           detail::placed_t<detail::SynchronizerRole<EveryStepSynchronizer>, Policies...>>;

// ---------------------------------------------------------------------------------------------
// One fit(): the plan, the step, the hooks and the record are sized here, before the team
// starts, so steps allocate nothing. thread_main() is the loop every worker runs.
// ---------------------------------------------------------------------------------------------

template <class O, class S, class P, class A, class W, class C, class Y>
template <class M, class D, class... Callbacks>
class DataParallelTrainer<O, S, P, A, W, C, Y>::Run final : StepLog<typename M::scalar_type> {
  using Scalar = typename M::scalar_type;
  using Group = decltype(std::declval<const C&>().connect(Index{}, std::declval<const RunSignature&>()));
  using Step = TrainingStep<M, D, W, P, A, O, S, Group>;
  using Record = RunRecord<Scalar, Callbacks...>;
  using Loop = decltype(std::declval<const Y&>().start(std::declval<Step&>()));
  static_assert(StepParts<Step>, "dptrain: TrainingStep must provide every part StepParts lists");
  // A loop that calls on_step_end itself, from the thread that ends each step (BackupWorkers):
  // the steps between hook points are then whole epochs even with step hooks.
  static constexpr bool loop_runs_step_hooks = requires { requires Loop::runs_step_hooks; };
  static constexpr bool steps_end_in_hooks = Record::has_step_hooks && !loop_runs_step_hooks;
  using Clock = std::chrono::steady_clock;

 public:
  Run(const DataParallelTrainer& trainer, const M& model, VectorRef<Scalar> theta, const D& data,
      const TrainingState<Scalar>* from, Callbacks&... callbacks)
      : opt_(trainer.options_),
        synchronizer_(trainer.synchronizer_),
        theta_(theta),
        plan_(opt_, data.size()),
        schedule_(for_run(trainer.schedule_, plan_.length())),
        group_(trainer.communicator_.connect(
            opt_.threads,
            detail::run_signature<M>(opt_, trainer.optimizer_, schedule_, trainer.synchronizer_, theta.size(), data,
                                     from != nullptr ? from->step : 0, plan_.total_steps()))),
        cores_(available_cores()),
        barrier_(spin_budget(opt_, cores_)),
        step_({opt_, plan_, model, theta, data, group_, state_, errors_, trainer.worker_, trainer.partitioner_,
               trainer.aggregator_, trainer.optimizer_, schedule_,
               opt_.wait_policy == WaitPolicy::spin_then_sleep ? &barrier_ : nullptr, this}),
        loop_(synchronizer_.start(step_)),  // its refusals come before the workers are made
        hooks_(opt_.threads),
        record_(plan_, theta, state_, opt_.threads, group_.rank(), group_.size(), callbacks...) {
    step_.make_workers();
    state_.plan = plan_.sampler();
    state_.made_by = {.threads = opt_.threads,
                      .ranks = group_.size(),
                      .shards = fixed_shards(trainer.synchronizer_),
                      .synchronizer = detail::policy_setup(trainer.synchronizer_),
                      .optimizer = detail::policy_setup(trainer.optimizer_)};
    // Checks of this process's own state, after connect(): a failure is kept, and run() still
    // takes part in the broadcast and the agreement before the first step, so every process
    // leaves there (this one with its own exception) instead of waiting for this one.
    errors_.guard([&] {
      if constexpr (requires { schedule_.validate(); }) schedule_.validate();
      if constexpr (AdaptivePartitioner<P>)
        if (group_.size() > 1)
          throw invalid_argument(
              "dptrain::DataParallelTrainer: an adaptive partitioner (BalancingPartitioner) learns the speeds of "
              "this process's threads only, but with " +
              std::to_string(group_.size()) +
              " processes every minibatch is split over all their workers: use EvenPartitioner, or "
              "WeightedPartitioner with a share for every worker of every process");
      if (from != nullptr) resume_from(*from);
    });
  }

  FitReport run() {
    const Clock::time_point start = Clock::now();
    // What the CPUs had done before the fit: at its end, what other work took of them.
    const CpuUsage usage_at_start = CpuUsage::now();
    record_.report().cores = cores_;  // before on_fit_begin, which may warn about oversubscription
    // The workers are the parallelism: Eigen's own GEMM threads would oversubscribe the cores.
    // The setting is process-wide, so a fit() inside another parallel region (where Eigen starts
    // no threads anyway) leaves it alone: another fit() may be running beside this one.
    const bool outermost = !detail::omp_in_parallel();
    const int eigen_threads = outermost ? Eigen::nbThreads() : 1;
    if (outermost) Eigen::setNbThreads(1);
    step_.start_clocks(start);
    bool stop = false;
    const bool ready = !errors_;  // the constructor's checks passed
    const bool began = errors_.guard([&] {
      group_.broadcast(VectorMap<Scalar>(theta_.data(), theta_.size()));
      if (!ready) return;
      // A team short of threads is found out only inside it, where the other processes would
      // wait for this one: ask OpenMP before the agreement.
      const Index allowed = detail::omp_threads_allowed(opt_.threads);
      if (allowed < opt_.threads) throw short_team(allowed);
      stop = record_.call(detail::on_fit_begin, state_.epoch, state_.step, 0, ThreadTeam(opt_.threads));
    }) && ready;
    // Every process starts the team, or none does (a hook may stop or fail on one of them).
    StepScalars agreed{.failures = began ? 0.0 : 1.0, .stop_requests = stop ? 1.0 : 0.0};
    if (group_.size() > 1) group_.all_reduce(agreed);
    if (agreed.failures == 0 && agreed.stop_requests == 0) {
      DPTRAIN_OMP(parallel num_threads(opt_.threads)) {
        thread_main();
      }
    }
    if (agreed.failures > 0) step_.note_failure("before the first step");
    if (agreed.stop_requests > 0) record_.report().stopped_by_callback = true;
    if (outermost) Eigen::setNbThreads(eigen_threads);
    const Clock::time_point end = Clock::now();
    step_.stop_clocks(end);
    FitReport& report = record_.report();
    report.seconds = std::chrono::duration<double>(end - start).count();
    report.other_load = other_load(usage_at_start, CpuUsage::now(), report.seconds);
    for (Index rank = 0; rank < opt_.threads; ++rank)
      report.workers[static_cast<std::size_t>(rank)] = step_.report(rank);
    errors_.rethrow();
    record_.call(detail::on_fit_end, plan_.start().epoch + report.epochs, state_.step, record_.last_epoch_loss(),
                 ThreadTeam(opt_.threads));
    return std::move(report);
  }

 private:
  // The loop every worker runs. Every decision to leave is taken from the step's one reduction
  // of scalars, the same on every worker of every process, so they leave together and never hang.
  void thread_main() {
    if (detail::omp_team_size() != opt_.threads) {  // fewer threads than asked for (dynamic adjustment)
      if (detail::omp_thread_id() == 0) errors_.keep(std::make_exception_ptr(short_team(detail::omp_team_size())));
      return;
    }
    const TeamMember me = step_.member(detail::omp_thread_id());
    const detail::WorkerMark mark(group_.first_worker() + me.rank);               // current_worker()
    step_.charge(me, me.rank == 0 ? &WorkerReport::hooks : &WorkerReport::wait);  // on_fit_begin, the team's start
    Index step = plan_.start().step;
    for (Index epoch = plan_.start().epoch; step < plan_.total_steps(); ++epoch) {
      in_hooks(me, [&] { begin_epoch(epoch); });
      for (Index s = plan_.first_step(epoch); s < plan_.steps_per_epoch() && step < plan_.total_steps();) {
        // The steps up to the next hook point: the rest of the epoch, or one step with step hooks.
        const Index count = steps_end_in_hooks ? 1 : std::min(plan_.steps_per_epoch() - s, plan_.total_steps() - step);
        const SpanEnd end = loop_.run(me, {.epoch = epoch, .first = step + 1, .epoch_step = s, .count = count});
        if (end.last.leave) {
          if (me.rank == 0 && end.last.stop_requested) record_.report().stopped_by_callback = true;
          return;
        }
        step += end.steps;
        s += end.steps;
        if constexpr (steps_end_in_hooks) in_hooks(me, [&] { end_step_hooks(epoch, step, end.last.loss); });
      }
      if constexpr (Record::has_epoch_end_hooks) {  // on_epoch_end reads every worker's report
        step_.snapshot(me);
        me.barrier();
      }
      in_hooks(me, [&] { end_epoch(epoch); });
    }
    step_.agree_on_end(me);
  }

  [[nodiscard]] error short_team(Index got) const {
    return error("dptrain::DataParallelTrainer: asked OpenMP for " + std::to_string(opt_.threads) +
                 " threads but got " + std::to_string(got) +
                 " (OMP_THREAD_LIMIT, a parallel region that may not nest another, or dynamic adjustment)");
  }

  // Step k of `span` was taken: into the record (one thread per step, in step order), and, if
  // the loop runs them, to the step hooks: on that thread, with θ as the step left it, while the
  // other threads wait for the next step, so ctx.team is that thread alone.
  void record(const StepSpan& span, Index k, const StepOutcome& outcome, double lr, Scalar* theta,
              bool hook_point) override {
    const Index step = span.first + k;
    record_.end_step(span.epoch, span.epoch_step + k, step, outcome.loss, outcome.samples, outcome.update, lr);
    if constexpr (Record::has_step_hooks && loop_runs_step_hooks) {
      if (!hook_point || step_.stopping()) return;
      bool stop = false;
      if (!errors_.guard(
              [&] { stop = record_.call(detail::on_step_end, span.epoch, step, outcome.loss, ThreadTeam(1), theta); }))
        step_.hook_failed();
      else if (stop)
        step_.request_stop();
    }
  }

  // Thread 0 runs `hooks` while the others serve ctx.team; the time is the hooks'.
  template <class F>
  void in_hooks(const TeamMember& me, F&& hooks) {
    hooks_.run(me, [&] {
      if (!errors_.guard(hooks)) step_.hook_failed();
    });
    step_.charge(me, &WorkerReport::hooks);
  }

  // Thread 0: this epoch's order, then on_epoch_begin. After a stop or failure, no more hooks.
  void begin_epoch(Index epoch) {
    if (step_.stopping()) return;
    plan_.shuffle(epoch);
    if (record_.begin_epoch(epoch, hooks_.team())) step_.request_stop();
  }

  void end_step_hooks(Index epoch, Index step, double loss) {
    if (step_.stopping()) return;
    if (record_.call(detail::on_step_end, epoch, step, loss, hooks_.team())) step_.request_stop();
  }

  void end_epoch(Index epoch) {
    if (step_.stopping()) return;
    if (record_.end_epoch(epoch, hooks_.team(), [&](Index rank) { return step_.snapshot(rank); })) step_.request_stop();
  }

  // Takes over an earlier run's position and optimizer state, once it is known to fit this run.
  void resume_from(const TrainingState<Scalar>& from) {
    record_.report().notes = detail::resume_notes(from.made_by, state_.made_by, opt_.same_workers_on_resume);
    plan_.resume_at(from.plan, {from.step, from.epoch, from.epoch_step});
    if (from.optimizer_state.size() != state_.optimizer_state.size())
      throw invalid_argument("dptrain::DataParallelTrainer::resume: the state has " +
                             std::to_string(from.optimizer_state.size()) +
                             " optimizer buffers but this optimizer keeps " + std::to_string(O::state_slots));
    for (const AlignedBuffer<Scalar>& buffer : from.optimizer_state)
      if (buffer.size() != theta_.size())
        throw invalid_argument("dptrain::DataParallelTrainer::resume: an optimizer buffer has " +
                               std::to_string(buffer.size()) + " values but theta has " +
                               std::to_string(theta_.size()));
    if constexpr (ReadsGradientTable<O>) {
      // ᾱ is the mean of a table the checkpoint does not hold: both start again at zero.
      record_.report().notes.push_back(std::string(O::name) +
                                       ": the table of per-sample gradients is not in the saved state; it and its "
                                       "mean start again at zero from the resumed theta");
    } else {
      state_.optimizer_state = from.optimizer_state;
    }
    state_.step = plan_.start().step;
    state_.epoch = plan_.start().epoch;
    state_.epoch_step = plan_.start().epoch_step;
  }

  // With more threads than cores a waiter spins while the thread it waits for may need its
  // core: it sleeps at once (libgomp, too, spins far less when oversubscribed).
  static std::chrono::nanoseconds spin_budget(const TrainerOptions& options, Index cores) {
    if (options.threads > cores) return std::chrono::nanoseconds(0);
    return std::chrono::nanoseconds(std::llround(options.spin_microseconds * 1e3));
  }

  // A synchronizer whose θ does not depend on the worker count names its shard count.
  static Index fixed_shards(const Y& synchronizer) {
    if constexpr (requires { synchronizer.fixed_shards(); })
      return synchronizer.fixed_shards();
    else
      return 0;
  }

  static S for_run(const S& schedule, const RunLength& length) {
    if constexpr (FitsRun<S>)
      return schedule.for_run(length);
    else
      return schedule;
  }

  const TrainerOptions opt_;  // this fit()'s copy: a hook cannot change the run under it
  const Y& synchronizer_;
  VectorRef<Scalar> theta_;
  RunPlan plan_;
  const S schedule_;  // with the lengths it takes from this run
  const Group group_;
  TrainingState<Scalar> state_;  // where training stands after the last step (ctx.state)
  FirstError errors_;
  const Index cores_;    // CPUs this process may run on (FitReport::cores)
  TeamBarrier barrier_;  // the team's barrier under WaitPolicy::spin_then_sleep (unused otherwise)
  Step step_;
  Loop loop_;  // the Synchronizer's loop for this fit (any state it keeps across steps)
  HookChannel hooks_;
  Record record_;
};

// ---------------------------------------------------------------------------------------------
// Checks: the model and data fit the policies (each argument's role: detail::ArgumentCheck).
// ---------------------------------------------------------------------------------------------

template <class O, class S, class P, class A, class W, class C, class Y>
template <class M, class D>
struct DataParallelTrainer<O, S, P, A, W, C, Y>::ModelCheck {
  static_assert(ModelTypes<M>,
                "dptrain: the Model must define scalar_type (float or double), batch_type and workspace_type");
  static_assert(HasParameterCount<M>, "dptrain: the Model must provide `Index num_parameters() const`");
  static_assert(MakesWorkspace<M>, "dptrain: the Model must provide `workspace_type make_workspace(Index) const`");
  static_assert(ComputesLossAndGradient<M>,
                "dptrain: the Model must provide `scalar_type loss_and_gradient(ConstVectorRef<scalar_type>, const "
                "batch_type&, VectorRef<scalar_type>, workspace_type&) const` and `scalar_type "
                "loss(ConstVectorRef<scalar_type>, const batch_type&, workspace_type&) const`");
  static_assert(ValidatesData<M>, "dptrain: the Model must provide `void validate(const batch_type&) const`");
  static_assert(DatasetOf<D, typename M::batch_type>,
                "dptrain: the data set must provide size(), validate(), make_buffer(rows), gather(rows, buffer) and "
                "rows(begin, count) or rows(begin, count, buffer), returning the model's batch_type");
  static_assert(Worker<W, M>,
                "dptrain: the Worker policy must provide `make(model, rank, max_rows)` returning a state with "
                "zero(), accumulate(model, theta, batch), gradient(), loss() and samples()");
};

template <class O, class S, class P, class A, class W, class C, class Y>
template <class M, class D>
void DataParallelTrainer<O, S, P, A, W, C, Y>::validate(const M& model, VectorRef<typename M::scalar_type> theta,
                                                        const D& data) const {
  const TrainerOptions& opt = options_;
  opt.validate();
  const auto name = [](Index v) { return std::to_string(v); };
  const double lr = optimizer_.lr;
  if (!std::isfinite(lr) || lr <= 0)
    throw invalid_argument("dptrain::DataParallelTrainer: the learning rate must be finite and positive, got " +
                           std::to_string(lr));
  if constexpr (requires { optimizer_.validate(); }) optimizer_.validate();
  if constexpr (AdaptivePartitioner<P>)
    if (opt.weighting == Weighting::equal)
      throw invalid_argument(
          "dptrain::DataParallelTrainer: Weighting::equal weights each worker's mean gradient alike, so with an "
          "adaptive partitioner "
          "the gradient would depend on timings; use Weighting::by_samples");
  if constexpr (ReadsGradientTable<O> && !FillsGradientTable<W>)
    throw invalid_argument(
        "dptrain::DataParallelTrainer: Sag and Saga read a GradientTable's gradients; give the trainer its "
        "worker (GradientTable::worker()) and the table as a callback");
  if constexpr (FillsGradientTable<W> && !ReadsGradientTable<O>)
    throw invalid_argument(
        "dptrain::DataParallelTrainer: a GradientTable's worker computes each sample's gradient less the one it "
        "stored, which only Sag or Saga can use");
  if constexpr (ReadsGradientTable<O>) {
    if (opt.weighting != Weighting::by_samples)
      throw invalid_argument(
          "dptrain::DataParallelTrainer: Sag and Saga need Weighting::by_samples: the mean of the stored "
          "gradients moves by the step's exact mean over its samples");
    if (opt.clip_norm > 0)
      throw invalid_argument(
          "dptrain::DataParallelTrainer: Sag and Saga cannot clip (clip_norm): the mean of the stored gradients "
          "moves by the step's exact mean over its samples");
    if (opt.on_non_finite == NonFinitePolicy::skip)
      throw invalid_argument(
          "dptrain::DataParallelTrainer: Sag and Saga cannot skip a step (NonFinitePolicy::skip): its samples' "
          "gradients are already stored in the table, and the mean of the table would no longer be the "
          "optimizer's; use NonFinitePolicy::stop");
  }
  data.validate();
  if (data.size() == 0) throw invalid_argument("dptrain::DataParallelTrainer: the data set is empty");
  if (theta.size() != model.num_parameters())
    throw invalid_argument("dptrain::DataParallelTrainer: theta has " + name(theta.size()) +
                           " values but the model has " + name(model.num_parameters()) + " parameters");
  detail::validate_rows(model, data);
  RunPlan::check(opt, data.size());
  (void)detail::model_biases(model, optimizer_);  // decay_biases = false needs the model's biases
  if constexpr (SumsOverGroups<O>) (void)detail::model_parameter_groups(model);
}

// validate(); a process whose checks fail still connects, with a signature marked refused, so
// that the other processes of the run throw too instead of waiting for it in a collective.
template <class O, class S, class P, class A, class W, class C, class Y>
template <class M, class D>
void DataParallelTrainer<O, S, P, A, W, C, Y>::validate_everywhere(const M& model,
                                                                   VectorRef<typename M::scalar_type> theta,
                                                                   const D& data) const {
  try {
    validate(model, theta, data);
  } catch (...) {
    const std::exception_ptr refused = std::current_exception();
    try {
      (void)communicator_.connect(std::max<Index>(options_.threads, 1), RunSignature{.refused = true});
    } catch (...) {  // the others were told; this process throws its own reason
    }
    std::rethrow_exception(refused);
  }
}

template <class O, class S, class P, class A, class W, class C, class Y>
template <class M, class D, class... Callbacks>
FitReport DataParallelTrainer<O, S, P, A, W, C, Y>::fit(const M& model, VectorRef<typename M::scalar_type> theta,
                                                        const D& data, Callbacks&&... callbacks) {
  static_assert(sizeof(ModelCheck<M, D>) > 0);  // its static_asserts, before anything depends on M
  validate_everywhere(model, theta, data);
  return Run<M, D, std::remove_reference_t<Callbacks>...>(*this, model, theta, data, nullptr, callbacks...).run();
}

template <class O, class S, class P, class A, class W, class C, class Y>
template <class M, class D, class... Callbacks>
FitReport DataParallelTrainer<O, S, P, A, W, C, Y>::resume(const M& model, VectorRef<typename M::scalar_type> theta,
                                                           const D& data,
                                                           const TrainingState<typename M::scalar_type>& state,
                                                           Callbacks&&... callbacks) {
  static_assert(sizeof(ModelCheck<M, D>) > 0);  // its static_asserts, before anything depends on M
  validate_everywhere(model, theta, data);
  return Run<M, D, std::remove_reference_t<Callbacks>...>(*this, model, theta, data, &state, callbacks...).run();
}

}  // namespace dptrain
