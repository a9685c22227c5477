// SPDX-License-Identifier: MIT
// DataParallelTrainer: synchronous data-parallel SGD on one persistent OpenMP team.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/aggregators/reduce_scatter_aggregator.hpp"
#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/omp.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/team.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/detail/callback_hooks.hpp"
#include "dptrain/detail/seed.hpp"
#include "dptrain/optimizers/constant_schedule.hpp"
#include "dptrain/optimizers/sgd.hpp"
#include "dptrain/partitioners/even_partitioner.hpp"
#include "dptrain/trainer/trainer_options.hpp"
#include "dptrain/workers/gradient_worker.hpp"

namespace dptrain {

/**
 * @brief Synchronous data-parallel SGD: each step splits a minibatch among N OpenMP threads,
 * sums their local gradients, applies one optimizer update and lets every thread see the new θ.
 *
 * One step, on one persistent team of `options.threads` threads:
 * 1. every worker reads the same θ (shared memory, no copy);
 * 2. the Partitioner gives worker i its micro-batch D_i of the minibatch B;
 * 3. worker i computes G_i = Σ_{x∈D_i} ∇ℓ(x; θ) into its own buffer (Worker policy);
 * 4. the Aggregator sums the buffers; thread t receives shard t of Σ_i G_i;
 * 5. thread t scales its shard to the mean (1/|B|), clips it, and applies the Optimizer to its
 *    slice of θ and of the optimizer state;
 * 6. a barrier: every worker now sees the new θ.
 * With the default by-samples weighting the result equals, up to rounding, one worker's step on
 * the whole minibatch, for any thread count.
 *
 * @tparam WorkerPolicy  makes each thread's gradient state (GradientWorker)
 * @tparam PartitionerT  splits a minibatch among workers (EvenPartitioner)
 * @tparam AggregatorT   all-reduces the gradient buffers (ReduceScatterAggregator)
 * @tparam OptimizerT    the elementwise update rule (Sgd)
 * @tparam ScheduleT     the learning-rate schedule (ConstantSchedule)
 *
 * fit() may be called again (with the same or another model and data); each call starts with
 * fresh optimizer state. A trainer is not meant to run two fit() calls at once.
 *
 * @code
 * dptrain::SoftmaxRegression<float> model(784, 10);
 * dptrain::Vector<float> theta = model.init_parameters();
 * dptrain::DataParallelTrainer trainer({.threads = 4, .batch_size = 256, .epochs = 5},
 *                                      dptrain::Momentum{.lr = 0.05});
 * dptrain::FitReport report = trainer.fit(model, theta, data);
 * @endcode
 */
template <class WorkerPolicy = GradientWorker, class PartitionerT = EvenPartitioner,
          class AggregatorT = ReduceScatterAggregator, class OptimizerT = Sgd, class ScheduleT = ConstantSchedule>
class DataParallelTrainer {
  static_assert(Partitioner<PartitionerT>,
                "dptrain: the Partitioner policy must provide `IndexRange range(Index batch, Index workers, "
                "Index rank) const`");
  static_assert(AllReducesBothScalars<AggregatorT>,
                "dptrain: the Aggregator policy must provide `template <class Scalar> VectorMap<Scalar> "
                "all_reduce(const TeamMember&, const GradientBuffers<Scalar>&) const`");
  static_assert(Aggregator<AggregatorT>, "dptrain: the Aggregator policy must be copy-constructible");
  static_assert(OptimizerHyperparameters<OptimizerT>,
                "dptrain: the Optimizer policy must provide a `double lr` member and `static constexpr int "
                "state_slots`");
  static_assert(Optimizer<OptimizerT>,
                "dptrain: the Optimizer policy must provide `template <class Scalar> void update(const "
                "UpdateSlice<Scalar, state_slots>&, const StepInfo&) const`");
  static_assert(Schedule<ScheduleT>, "dptrain: the Schedule policy must provide `double factor(Index step) const`");

 public:
  using worker_policy = WorkerPolicy;
  using partitioner_type = PartitionerT;
  using aggregator_type = AggregatorT;
  using optimizer_type = OptimizerT;
  using schedule_type = ScheduleT;

  explicit DataParallelTrainer(TrainerOptions options = {}, OptimizerT optimizer = {}, ScheduleT schedule = {},
                               PartitionerT partitioner = {}, AggregatorT aggregator = {}, WorkerPolicy worker = {})
      : options_(options),
        optimizer_(std::move(optimizer)),
        schedule_(std::move(schedule)),
        partitioner_(std::move(partitioner)),
        aggregator_(std::move(aggregator)),
        worker_(std::move(worker)) {}

  [[nodiscard]] const TrainerOptions& options() const noexcept { return options_; }
  [[nodiscard]] TrainerOptions& options() noexcept { return options_; }
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
   * if that fit() had never stopped: with θ as it was then and the same thread count, the
   * result is bitwise the one of an uninterrupted run.
   *
   * Steps and epochs count from the start of training: `options().epochs` and `max_steps` are
   * the totals of the whole run, ctx.step and ctx.epoch continue from the state's; the report
   * counts what this call ran.
   *
   * @throws dptrain::invalid_argument when the state does not fit this run: another sampling plan
   *         (data size, batch_size, accumulation_steps, drop_last, shuffle, seed), another
   *         optimizer (number of state buffers) or θ length, or an inconsistent position;
   *         besides everything fit() throws
   */
  template <class M, class D, class... Callbacks>
  FitReport resume(const M& model, VectorRef<typename M::scalar_type> theta, const D& data,
                   const TrainingState<typename M::scalar_type>& state, Callbacks&&... callbacks);

 private:
  template <class M, class D>
  static void check_policies();

  template <class M, class D, class... Callbacks>
  class Run;

  TrainerOptions options_;
  OptimizerT optimizer_;
  ScheduleT schedule_;
  PartitionerT partitioner_;
  AggregatorT aggregator_;
  WorkerPolicy worker_;
};

/// Deduction guides: `DataParallelTrainer trainer(options, dptrain::Adam{...})` uses the defaults
/// for the other policies.
DataParallelTrainer()->DataParallelTrainer<>;
DataParallelTrainer(TrainerOptions)->DataParallelTrainer<>;
template <class O>
DataParallelTrainer(TrainerOptions, O)
    -> DataParallelTrainer<GradientWorker, EvenPartitioner, ReduceScatterAggregator, O>;
template <class O, class S>
DataParallelTrainer(TrainerOptions, O, S)
    -> DataParallelTrainer<GradientWorker, EvenPartitioner, ReduceScatterAggregator, O, S>;
template <class O, class S, class P>
DataParallelTrainer(TrainerOptions, O, S, P) -> DataParallelTrainer<GradientWorker, P, ReduceScatterAggregator, O, S>;
template <class O, class S, class P, class A>
DataParallelTrainer(TrainerOptions, O, S, P, A) -> DataParallelTrainer<GradientWorker, P, A, O, S>;
template <class O, class S, class P, class A, class W>
DataParallelTrainer(TrainerOptions, O, S, P, A, W) -> DataParallelTrainer<W, P, A, O, S>;

// ---------------------------------------------------------------------------------------------
// One fit(): every buffer is sized here, before the team starts, so steps allocate nothing.
// ---------------------------------------------------------------------------------------------

template <class W, class P, class A, class O, class S>
template <class M, class D, class... Callbacks>
class DataParallelTrainer<W, P, A, O, S>::Run {
  using Scalar = typename M::scalar_type;
  using WorkerState = decltype(std::declval<const W&>().make(std::declval<const M&>(), Index{}, Index{}));
  using Clock = std::chrono::steady_clock;
  using Context = TrainContext<Scalar>;
  static constexpr int slots = O::state_slots;
  static constexpr bool step_hooks = detail::has_hook<decltype(detail::on_step_end), Context, Callbacks...>;
  static constexpr bool epoch_end_hooks = detail::has_hook<decltype(detail::on_epoch_end), Context, Callbacks...>;
  static constexpr bool adaptive = AdaptivePartitioner<P>;

  // A hook's ctx.team.run(f), posted to the waiting threads (run_hooks).
  struct Task {
    ThreadTeam::Task run = nullptr;
    void* f = nullptr;
  };

  // Everything one thread writes during a step, on cache lines of its own.
  struct alignas(cache_line_bytes) ThreadSlot {
    ThreadSlot(WorkerState w, typename D::Buffer b) : worker(std::move(w)), buffer(std::move(b)) {}
    WorkerState worker;
    typename D::Buffer buffer;
    WorkerTimes times;
    // Inputs of the per-step scalar all-reduce, and of an adaptive partitioner.
    double loss = 0, sumsq = 0, compute_seconds = 0;
    Index samples = 0;
    Index posts = 0;  // hook posts passed (run_hooks): picks the slot to read
  };

 public:
  Run(const DataParallelTrainer& trainer, const M& model, VectorRef<Scalar> theta, const D& data,
      const TrainingState<Scalar>* from, Callbacks&... callbacks)
      : t_(trainer),
        opt_(trainer.options_),
        model_(model),
        theta_(theta),
        data_(data),
        callbacks_(callbacks...),
        partitioner_(trainer.partitioner_) {
    validate();
    const Index n = data_.size(), b = opt_.batch_size;
    batches_per_epoch_ = opt_.drop_last ? n / b : (n + b - 1) / b;
    if (batches_per_epoch_ == 0)
      throw invalid_argument("dptrain: drop_last with batch_size " + std::to_string(b) +
                             " leaves no minibatch of a data set of " + std::to_string(n) + " samples");
    steps_per_epoch_ = (batches_per_epoch_ + opt_.accumulation_steps - 1) / opt_.accumulation_steps;
    total_steps_ = opt_.epochs * steps_per_epoch_;
    if (opt_.max_steps > 0) total_steps_ = std::min(total_steps_, opt_.max_steps);

    // A worker's largest micro-batch: only full minibatches and the last partial one occur.
    const Index threads = opt_.threads;
    for (const Index batch : {b, n % b}) {
      if constexpr (requires { partitioner_.max_size(batch, threads); }) {
        max_rows_ = std::max(max_rows_, std::min(batch, static_cast<Index>(partitioner_.max_size(batch, threads))));
      } else {
        for (Index rank = 0; rank < threads; ++rank)
          max_rows_ = std::max(max_rows_, partitioner_.range(batch, threads, rank).size);
      }
    }
    if constexpr (adaptive) loads_.resize(static_cast<std::size_t>(threads));
    slots_.reserve(static_cast<std::size_t>(threads));
    for (Index rank = 0; rank < threads; ++rank)
      slots_.emplace_back(t_.worker_.make(model_, rank, max_rows_), data_.make_buffer(opt_.shuffle ? max_rows_ : 0));
    for (ThreadSlot& slot : slots_) buffer_pointers_.push_back(slot.worker.gradient().data());
    buffers_ = {buffer_pointers_, {theta_.size(), threads}};
    state_.plan = {n, b, opt_.accumulation_steps, opt_.drop_last, opt_.shuffle, opt_.seed};
    state_.optimizer_state.assign(static_cast<std::size_t>(slots), AlignedBuffer<Scalar>(theta_.size()));
    if (from != nullptr) resume_from(*from);
    start_ = {state_.step, state_.epoch, state_.epoch_step};
    order_.resize(static_cast<std::size_t>(n));
    report_.threads = threads;
    total_epochs_ = (total_steps_ + steps_per_epoch_ - 1) / steps_per_epoch_;
    report_.epoch_loss.reserve(static_cast<std::size_t>(total_epochs_));
    report_.workers.resize(static_cast<std::size_t>(threads));
  }

  FitReport run() {
    const Clock::time_point start = Clock::now();
    // The workers are the parallelism: Eigen's own GEMM threads would oversubscribe the cores.
    // The setting is process-wide, so a fit() inside another parallel region (where Eigen starts
    // no threads anyway) leaves it alone: another fit() may be running beside this one.
    const bool outermost = !detail::omp_in_parallel();
    const int eigen_threads = outermost ? Eigen::nbThreads() : 1;
    if (outermost) Eigen::setNbThreads(1);
    Context begin_ctx = context(start_.epoch, start_.step, 0, ThreadTeam(opt_.threads));
    bool stop =
        std::apply([&](auto&... cb) { return detail::call_hook(detail::on_fit_begin, begin_ctx, cb...); }, callbacks_);
    if (!stop) {
      DPTRAIN_OMP(parallel num_threads(opt_.threads)) {
        thread_main();
      }
    }
    if (outermost) Eigen::setNbThreads(eigen_threads);
    report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (std::size_t rank = 0; rank < slots_.size(); ++rank) report_.workers[rank] = slots_[rank].times;
    if (error_) std::rethrow_exception(error_);
    report_.stopped_by_callback = report_.stopped_by_callback || stop;
    Context end_ctx = context(start_.epoch + report_.epochs, state_.step,
                              report_.epoch_loss.empty() ? 0 : report_.epoch_loss.back(), ThreadTeam(opt_.threads));
    std::apply([&](auto&... cb) { detail::call_hook(detail::on_fit_end, end_ctx, cb...); }, callbacks_);
    return std::move(report_);
  }

 private:
  void validate() const {
    const auto name = [](Index v) { return std::to_string(v); };
    if (opt_.threads < 1) throw invalid_argument("dptrain: threads must be at least 1, got " + name(opt_.threads));
    if (opt_.batch_size < 1)
      throw invalid_argument("dptrain: batch_size must be at least 1, got " + name(opt_.batch_size));
    if (opt_.epochs < 1) throw invalid_argument("dptrain: epochs must be at least 1, got " + name(opt_.epochs));
    if (opt_.max_steps < 0) throw invalid_argument("dptrain: max_steps must be ≥ 0, got " + name(opt_.max_steps));
    if (opt_.accumulation_steps < 1)
      throw invalid_argument("dptrain: accumulation_steps must be at least 1, got " + name(opt_.accumulation_steps));
    if (!std::isfinite(opt_.clip_norm) || opt_.clip_norm < 0)
      throw invalid_argument("dptrain: clip_norm must be finite and ≥ 0 (0: off), got " +
                             std::to_string(opt_.clip_norm));
    const double lr = t_.optimizer_.lr;
    if (!std::isfinite(lr) || lr <= 0)
      throw invalid_argument("dptrain: the learning rate must be finite and positive, got " + std::to_string(lr));
    if constexpr (requires { t_.optimizer_.validate(); }) t_.optimizer_.validate();
    if constexpr (requires { t_.schedule_.validate(); }) t_.schedule_.validate();
    if constexpr (requires { partitioner_.validate(opt_.threads); }) partitioner_.validate(opt_.threads);
    if constexpr (adaptive)
      if (opt_.weighting == Weighting::equal)
        throw invalid_argument(
            "dptrain: Weighting::equal weights each worker's mean gradient alike, so with an adaptive partitioner "
            "the gradient would depend on timings; use Weighting::by_samples");
    data_.validate();
    if (data_.size() == 0) throw invalid_argument("dptrain: the data set is empty");
    if (theta_.size() != model_.num_parameters())
      throw invalid_argument("dptrain: theta has " + name(theta_.size()) + " values but the model has " +
                             name(model_.num_parameters()) + " parameters");
    model_.validate(data_.rows(0, data_.size()));
  }

  // Takes over an earlier run's position and optimizer state, once it is known to fit this run.
  void resume_from(const TrainingState<Scalar>& from) {
    const auto text = [](const SamplerPlan& p) {
      return std::to_string(p.samples) + " samples, batch_size " + std::to_string(p.batch_size) +
             ", accumulation_steps " + std::to_string(p.accumulation_steps) + ", drop_last " +
             (p.drop_last ? "on" : "off") + ", shuffle " + (p.shuffle ? "on" : "off") + ", seed " +
             std::to_string(p.seed);
    };
    if (from.plan != state_.plan)
      throw invalid_argument("dptrain: resume: the state was saved under another sampling plan (" + text(from.plan) +
                             ") than this run's (" + text(state_.plan) + ")");
    if (from.optimizer_state.size() != state_.optimizer_state.size())
      throw invalid_argument("dptrain: resume: the state has " + std::to_string(from.optimizer_state.size()) +
                             " optimizer buffers but this optimizer keeps " + std::to_string(slots));
    for (const AlignedBuffer<Scalar>& buffer : from.optimizer_state)
      if (buffer.size() != theta_.size())
        throw invalid_argument("dptrain: resume: an optimizer buffer has " + std::to_string(buffer.size()) +
                               " values but theta has " + std::to_string(theta_.size()));
    if (from.epoch < 0 || from.epoch_step < 0 || from.epoch_step > steps_per_epoch_ ||
        from.step != from.epoch * steps_per_epoch_ + from.epoch_step)
      throw invalid_argument("dptrain: resume: inconsistent position (step " + std::to_string(from.step) + ", epoch " +
                             std::to_string(from.epoch) + ", epoch_step " + std::to_string(from.epoch_step) + ") for " +
                             std::to_string(steps_per_epoch_) + " steps per epoch");
    state_.optimizer_state = from.optimizer_state;
    state_.step = from.step;
    // A position at the end of an epoch is the start of the next.
    state_.epoch = from.epoch + (from.epoch_step == steps_per_epoch_ ? 1 : 0);
    state_.epoch_step = from.epoch_step == steps_per_epoch_ ? 0 : from.epoch_step;
  }

  // `team`: a new OpenMP region outside the team's region, the waiting team inside it.
  Context context(Index epoch, Index step, double loss, ThreadTeam team) {
    return {VectorMap<Scalar>(theta_.data(), theta_.size()),
            report_,
            epoch,
            step,
            loss,
            last_lr_,
            steps_per_epoch_,
            total_steps_,
            total_epochs_,
            team,
            state_};
  }

  // Inside the region, hooks hand their parallel work (ctx.team.run) to the waiting threads.
  Context context(Index epoch, Index step, double loss) {
    return context(epoch, step, loss, ThreadTeam(opt_.threads, this, &Run::dispatch));
  }

  template <class Hook>
  bool call(const Hook& hook, Context& ctx) {
    return std::apply([&](auto&... cb) { return detail::call_hook(hook, ctx, cb...); }, callbacks_);
  }

  // Runs f; an exception is kept (the first one wins) and the team leaves at the next check.
  template <class F>
  void guarded(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      DPTRAIN_OMP(critical(dptrain_first_error)) {
        if (!error_) error_ = std::current_exception();
      }
      failed_.store(true, std::memory_order_relaxed);
    }
  }

  // Thread 0 runs `hooks` while the other threads wait for what the hooks hand to ctx.team
  // (dispatch): each post is a barrier after which every thread reads the posted task and runs
  // it, until an empty post lets them return. Without tasks this costs one barrier.
  template <class F>
  void run_hooks(const TeamMember& team, F&& hooks) {
    if (team.rank == 0) {
      guarded(hooks);
      post({});
      return;
    }
    ThreadSlot& me = slots_[static_cast<std::size_t>(team.rank)];
    for (;;) {
      team.barrier();  // a post
      const Task task = posted_[static_cast<std::size_t>(me.posts++ % 2)];
      if (task.run == nullptr) return;
      run_task(task, team);
      team.barrier();  // every call of the task has returned
    }
  }

  // Thread 0 posts the next task, or none. Posts alternate between two slots: a thread reads
  // slot k after post k, and thread 0 writes slot k again only after post k + 1, which that
  // thread must have reached first, so no post overwrites a task a slow thread has yet to read.
  void post(Task task) {
    ThreadSlot& me = slots_[0];
    posted_[static_cast<std::size_t>(me.posts++ % 2)] = task;
    TeamMember{0, opt_.threads}.barrier();
  }

  // ctx.team.run(f) in a hook, on thread 0: the waiting threads run f with it.
  static void dispatch(void* self, ThreadTeam::Task run, void* f) {
    Run& r = *static_cast<Run*>(self);
    if (r.dispatching_) throw error("dptrain: ctx.team.run() cannot be called inside ctx.team.run()");
    r.dispatching_ = true;
    const Task task{run, f};
    r.post(task);
    r.run_task(task, TeamMember{0, r.opt_.threads});
    TeamMember{0, r.opt_.threads}.barrier();  // every call of f has returned
    r.dispatching_ = false;
    if (r.task_error_) std::rethrow_exception(std::exchange(r.task_error_, nullptr));
  }

  void run_task(const Task& task, const TeamMember& team) noexcept {
    try {
      task.run(task.f, team);
    } catch (...) {
      DPTRAIN_OMP(critical(dptrain_task_error)) {
        if (!task_error_) task_error_ = std::current_exception();
      }
    }
  }

  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }

  // Σ gᵢ², summed in double. Float squares are summed in blocks that Eigen vectorizes, and the
  // block sums in double (a double cast of every value runs scalar: it was most of the trainer's
  // own time per step); a block whose float sum overflows is summed again in double.
  static double squared_norm(VectorMap<Scalar> g) {
    if constexpr (!std::is_same_v<Scalar, float>) {
      return static_cast<double>(g.squaredNorm());
    } else {
      constexpr Index block = 1024;
      double sum = 0;
      for (Index begin = 0; begin < g.size(); begin += block) {
        const auto part = g.segment(begin, std::min(block, g.size() - begin));
        const float partial = part.squaredNorm();
        sum += std::isfinite(partial) ? static_cast<double>(partial) : part.template cast<double>().squaredNorm();
      }
      return sum;
    }
  }

  // The body of every thread of the team. Decisions to leave are taken only from values that
  // all threads read between the same two barriers, so they leave together and never hang.
  void thread_main() {
    const TeamMember team{detail::omp_thread_id(), detail::omp_team_size()};
    if (team.size != opt_.threads) {  // the OpenMP runtime gave fewer threads than asked for
      if (team.rank == 0)
        error_ = std::make_exception_ptr(error("dptrain: asked OpenMP for " + std::to_string(opt_.threads) +
                                               " threads but got " + std::to_string(team.size)));
      return;
    }
    ThreadSlot& me = slots_[static_cast<std::size_t>(team.rank)];
    const IndexRange shard = buffers_.layout.shard(team.rank);
    Index step = start_.step;
    for (Index epoch = start_.epoch; step < total_steps_; ++epoch) {
      run_hooks(team, [&] { begin_epoch(epoch); });
      if (!go_.after_epoch_begin) return;
      for (Index s = epoch == start_.epoch ? start_.epoch_step : 0; s < steps_per_epoch_ && step < total_steps_; ++s) {
        ++step;
        const Clock::time_point t0 = Clock::now();
        guarded([&] { local_gradient(team, me, s); });
        const Clock::time_point t1 = Clock::now();
        me.compute_seconds = seconds(t0, t1);
        team.barrier();
        // Every worker's load is written, and no worker calls range() before B3; a throw here is
        // seen by all threads after the scalar all-reduce's barrier, like a worker's.
        if constexpr (adaptive)
          if (team.rank == 0) guarded([&] { observe_loads(); });
        const Clock::time_point t2 = Clock::now();
        VectorMap<Scalar> g = t_.aggregator_.all_reduce(team, buffers_);
        me.sumsq = squared_norm(g);
        const StepTotals totals = reduce_scalars(team);
        const Clock::time_point t3 = Clock::now();
        if (failed_.load(std::memory_order_relaxed)) return;
        const double lr = t_.optimizer_.lr * t_.schedule_.factor(step);
        const bool finite = std::isfinite(totals.loss) && std::isfinite(totals.sumsq);
        if (!finite && opt_.on_non_finite == NonFinitePolicy::stop) {
          if (team.rank == 0)
            error_ = std::make_exception_ptr(non_finite_error(
                "dptrain: non-finite " + std::string(std::isfinite(totals.loss) ? "gradient" : "loss") + " at step " +
                    std::to_string(step) + "; theta keeps its value from before that step",
                step));
          return;
        }
        if (finite) update(g, shard, totals, step, lr);
        const Clock::time_point t4 = Clock::now();
        team.barrier();  // θ is complete: the next step reads it
        const Clock::time_point t5 = Clock::now();
        me.times.compute += me.compute_seconds;
        me.times.wait += seconds(t1, t2) + seconds(t4, t5);
        me.times.aggregate += seconds(t2, t3);
        me.times.update += seconds(t3, t4);
        me.times.samples += me.samples;
        if (team.rank == 0) end_step(epoch, s, totals, finite, lr);
        if constexpr (step_hooks) {
          run_hooks(team, [&] { call_step_hooks(epoch, step, totals.loss); });
          if (!go_.after_step) return;
        }
      }
      // on_epoch_end reads every worker's times: wait until each has added its last step's
      // (with step hooks, the barrier after on_step_end already did).
      if constexpr (epoch_end_hooks && !step_hooks) team.barrier();
      run_hooks(team, [&] { end_epoch(epoch); });
      if (!go_.after_epoch_end) return;
    }
  }

  // Thread 0, while the others wait: shuffle this epoch's order, call on_epoch_begin.
  void begin_epoch(Index epoch) {
    if (opt_.shuffle) {
      // The order depends on (seed, epoch) only, never on the thread count or earlier epochs,
      // so a resumed run shuffles like the run it continues.
      std::iota(order_.begin(), order_.end(), Index{0});
      std::mt19937_64 rng(detail::mix_seed(opt_.seed, static_cast<std::uint64_t>(epoch)));
      std::shuffle(order_.begin(), order_.end(), rng);
    }
    epoch_loss_ = 0;
    epoch_samples_ = 0;
    Context ctx = context(epoch, state_.step, 0);
    go_.after_epoch_begin = false;  // stays false if the hook throws
    const bool stop = call(detail::on_epoch_begin, ctx);
    report_.stopped_by_callback = report_.stopped_by_callback || stop;
    go_.after_epoch_begin = !stop && !failed_.load(std::memory_order_relaxed);
  }

  // Thread 0 between B1 and B3: the step's loads to an adaptive partitioner.
  void observe_loads() {
    for (std::size_t rank = 0; rank < slots_.size(); ++rank)
      loads_[rank] = {slots_[rank].samples, slots_[rank].compute_seconds};
    partitioner_.observe(std::span<const WorkerLoad>(loads_));
  }

  // Worker `team.rank`'s part of step s of the epoch: its micro-batch of each accumulated minibatch.
  void local_gradient(const TeamMember& team, ThreadSlot& me, Index s) {
    me.worker.zero();
    const Index n = data_.size(), b = opt_.batch_size;
    const Index first = s * opt_.accumulation_steps;
    const Index last = std::min(first + opt_.accumulation_steps, batches_per_epoch_);
    for (Index batch = first; batch < last; ++batch) {
      const Index start = batch * b;
      const IndexRange mine = partitioner_.range(std::min(b, n - start), team.size, team.rank);
      if (mine.empty()) continue;
      if (mine.size > max_rows_)
        throw error("dptrain: the partitioner gave worker " + std::to_string(team.rank) + " " +
                    std::to_string(mine.size) + " samples, more than the " + std::to_string(max_rows_) +
                    " its buffers were sized for (an adaptive partitioner's max_size() is too small)");
      if (opt_.shuffle) {
        const std::span<const Index> rows(order_.data() + start + mine.begin, static_cast<std::size_t>(mine.size));
        me.worker.accumulate(model_, theta_, data_.gather(rows, me.buffer));
      } else {
        me.worker.accumulate(model_, theta_, data_.rows(start + mine.begin, mine.size));
      }
    }
    me.loss = me.worker.loss();
    me.samples = me.worker.samples();
    if (opt_.weighting == Weighting::equal && me.samples > 0)
      me.worker.gradient() *= Scalar(1) / static_cast<Scalar>(me.samples);
  }

  struct StepTotals {
    double loss = 0, sumsq = 0, scale = 1;  // loss: the mean; scale: turns Σ buffers into g
    Index samples = 0;
  };

  // The step's scalars, summed over workers in rank order: identical on every thread.
  StepTotals reduce_scalars(const TeamMember& team) {
    team.barrier();
    StepTotals totals;
    double loss = 0;
    Index busy = 0;
    for (const ThreadSlot& slot : slots_) {
      loss += slot.loss;
      totals.sumsq += slot.sumsq;
      totals.samples += slot.samples;
      busy += slot.samples > 0 ? 1 : 0;
    }
    totals.loss = loss / static_cast<double>(std::max<Index>(totals.samples, 1));
    totals.scale =
        1.0 / static_cast<double>(std::max<Index>(opt_.weighting == Weighting::equal ? busy : totals.samples, 1));
    totals.sumsq *= totals.scale * totals.scale;
    return totals;
  }

  // This thread's slice: g ← scale·clip·Σ G_i, then the optimizer update.
  void update(VectorMap<Scalar> g, IndexRange shard, const StepTotals& totals, Index step, double lr) {
    double factor = totals.scale;
    const double norm = std::sqrt(totals.sumsq);
    if (opt_.clip_norm > 0 && norm > opt_.clip_norm) factor *= opt_.clip_norm / norm;
    g *= static_cast<Scalar>(factor);
    t_.optimizer_.update(slice(g, shard, std::make_integer_sequence<int, slots>{}), StepInfo{step, lr});
  }

  template <int... K>
  UpdateSlice<Scalar, slots> slice(VectorMap<Scalar> g, IndexRange shard, std::integer_sequence<int, K...>) {
    return {VectorMap<Scalar>(theta_.data() + shard.begin, shard.size),
            ConstVectorMap<Scalar>(g.data(), g.size()),
            {VectorMap<Scalar>(state_.optimizer_state[K].data() + shard.begin, shard.size)...}};
  }

  // Thread 0 after the step's last barrier, s of the epoch: the step's bookkeeping.
  void end_step(Index epoch, Index s, const StepTotals& totals, bool finite, double lr) {
    ++state_.step;
    const bool last = s + 1 == steps_per_epoch_;  // then a resumed run starts the next epoch
    state_.epoch = last ? epoch + 1 : epoch;
    state_.epoch_step = last ? 0 : s + 1;
    ++report_.steps;
    report_.samples += totals.samples;
    last_lr_ = lr;
    if (finite) {
      report_.final_loss = totals.loss;
      epoch_loss_ += totals.loss * static_cast<double>(totals.samples);
      epoch_samples_ += totals.samples;
    } else {
      ++report_.skipped_steps;
    }
  }

  // Thread 0 after end_step, when a callback has on_step_end.
  void call_step_hooks(Index epoch, Index step, double loss) {
    go_.after_step = false;  // stays false if the hook throws
    Context ctx = context(epoch, step, loss);
    const bool stop = call(detail::on_step_end, ctx);
    report_.stopped_by_callback = report_.stopped_by_callback || stop;
    go_.after_step = !stop;
  }

  // Thread 0 at the end of an epoch (complete, or cut short by max_steps).
  void end_epoch(Index epoch) {
    const double loss = epoch_loss_ / static_cast<double>(std::max<Index>(epoch_samples_, 1));
    report_.epoch_loss.push_back(loss);
    ++report_.epochs;
    // Cumulative phase times so far, so that on_epoch_end can difference them per epoch (read
    // only when that hook exists: only then has every worker passed a barrier since its last write).
    if constexpr (epoch_end_hooks)
      for (std::size_t rank = 0; rank < slots_.size(); ++rank) report_.workers[rank] = slots_[rank].times;
    Context ctx = context(epoch, state_.step, loss);
    go_.after_epoch_end = false;  // stays false if the hook throws
    const bool stop = call(detail::on_epoch_end, ctx);
    report_.stopped_by_callback = report_.stopped_by_callback || stop;
    go_.after_epoch_end = !stop && !failed_.load(std::memory_order_relaxed);
  }

  const DataParallelTrainer& t_;
  const TrainerOptions& opt_;
  const M& model_;
  VectorRef<Scalar> theta_;
  const D& data_;
  std::tuple<Callbacks&...> callbacks_;
  P partitioner_;                  // this fit()'s copy: an adaptive one learns as it trains
  Index max_rows_ = 0;             // the most samples a worker's buffers hold
  std::vector<WorkerLoad> loads_;  // the step's loads, for an adaptive partitioner (thread 0)

  Index batches_per_epoch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, total_epochs_ = 0;
  std::vector<ThreadSlot> slots_;
  std::vector<Scalar*> buffer_pointers_;
  GradientBuffers<Scalar> buffers_;
  TrainingState<Scalar> state_;  // where training stands after the last step (ctx.state)
  struct {
    Index step = 0, epoch = 0, epoch_step = 0;
  } start_;  // the position this fit() starts from
  std::vector<Index> order_;

  // Whether to go on after each point where thread 0 runs hooks while the others wait. Thread 0
  // writes one before a barrier and every thread reads it after; one variable per point, because
  // thread 0 may reach the next point's write before a slow thread has read this one.
  struct {
    bool after_epoch_begin = true, after_step = true, after_epoch_end = true;
  } go_;
  FitReport report_;
  double last_lr_ = 0, epoch_loss_ = 0;
  Index epoch_samples_ = 0;

  std::exception_ptr error_;
  std::atomic<bool> failed_{false};

  // The tasks hooks hand to the team (ctx.team.run): two post slots, and the first exception.
  std::array<Task, 2> posted_{};
  bool dispatching_ = false;  // thread 0 is inside ctx.team.run
  std::exception_ptr task_error_;
};

template <class W, class P, class A, class O, class S>
template <class M, class D>
void DataParallelTrainer<W, P, A, O, S>::check_policies() {
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
                "dptrain: the data set must provide size(), validate(), rows(begin, count), make_buffer(rows) and "
                "gather(rows, buffer) returning the model's batch_type");
  static_assert(Worker<W, M>,
                "dptrain: the Worker policy must provide `make(model, rank, max_rows)` returning a state with "
                "zero(), accumulate(model, theta, batch), gradient(), loss() and samples()");
}

template <class W, class P, class A, class O, class S>
template <class M, class D, class... Callbacks>
FitReport DataParallelTrainer<W, P, A, O, S>::fit(const M& model, VectorRef<typename M::scalar_type> theta,
                                                  const D& data, Callbacks&&... callbacks) {
  check_policies<M, D>();
  return Run<M, D, std::remove_reference_t<Callbacks>...>(*this, model, theta, data, nullptr, callbacks...).run();
}

template <class W, class P, class A, class O, class S>
template <class M, class D, class... Callbacks>
FitReport DataParallelTrainer<W, P, A, O, S>::resume(const M& model, VectorRef<typename M::scalar_type> theta,
                                                     const D& data, const TrainingState<typename M::scalar_type>& state,
                                                     Callbacks&&... callbacks) {
  check_policies<M, D>();
  return Run<M, D, std::remove_reference_t<Callbacks>...>(*this, model, theta, data, &state, callbacks...).run();
}

}  // namespace dptrain
