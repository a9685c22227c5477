// SPDX-License-Identifier: MIT
// StepParts: the parts of DataParallelTrainer's step that a Synchronizer's loop may call — the
// one list, checked against the trainer's TrainingStep and against every synchronizer's loop.
#pragma once

#include <chrono>
#include <concepts>
#include <exception>
#include <span>
#include <type_traits>
#include <vector>

#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/optimizers/sgd.hpp"
#include "dptrain/trainer/trainer_options.hpp"

namespace dptrain {

/// The steps a Synchronizer runs between two hook points, all in one epoch: the run's steps
/// first … first + count − 1 (numbered from 1), which are the epoch's steps epoch_step … .
struct StepSpan {
  Index epoch = 0;
  Index first = 1;
  Index epoch_step = 0;
  Index count = 1;
};

/// What a Synchronizer's `loop.run(me, span)` returns: the steps it took and the last one's
/// decision. `last.leave` (the same on every worker) means the team leaves training now.
struct SpanEnd {
  Index steps = 0;
  StepOutcome last;
};

/// Which part of each of a step's minibatches a gradient covers.
struct Share {
  Index index = 0;  ///< the global worker (chunks = 0) or the chunk
  Index chunks =
      0;  ///< 0: worker `index`'s micro-batch as the Partitioner cuts it; else chunk `index` of this many even parts
};

namespace detail {
// A function from a micro-batch to the θ to run it at, to check the gradient part with.
template <class Step>
struct ThetaForBatch {
  ConstVectorMap<typename Step::Scalar> operator()(const typename Step::Model::batch_type&) const {
    return {nullptr, 0};
  }
};
}  // namespace detail

/**
 * @name The step's parts
 * What a Synchronizer's loop may call on the `Step& step` that `start(step)` receives, in three
 * groups. Nothing else of the trainer is a loop's to call.
 */
///@{

/**
 * @brief What a loop may ask before it starts (and refuse: a throw from `start()` is fit()'s).
 * - `Step::Scalar`, `Step::WorkerState` (a Worker policy's state: `gradient()`, …),
 *   `Step::Buffer` (a data set's gather buffer), `Step::Model` and `Step::Optimizer` (the fit's
 *   Model and Optimizer types);
 * - `Step::state_slots`: the optimizer's state vectors (0: stateless, e.g. Sgd);
 * - `Step::passes_partials`: the Communicator's groups pass partial sums along the processes
 *   (OrderedProcessGroup), which receive_partial, pass_partial and await_total need with several
 *   processes;
 * - `Step::adaptive_partitioner`: the Partitioner learns from each step's loads (AdaptivePartitioner),
 *   at `wait_for_workers()` (a loop without that barrier cannot let it act);
 * - `options()`, `processes()` (the run's processes), `process()` (this one, from 0), `workers()` (the workers that
 * share each minibatch: every process's, or with data sharded per process (MpiData::sharded) this one's),
 *   `first_worker()` (this process's first among them), `theta()` (θ as the trainer holds it: every span starts from it
 * and leaves its result in it), `optimizer_state()` (the trainer's state, Step::state_slots vectors of θ's length: what
 *   checkpoints save), `shard(me)` (the slice of θ that thread me owns), `spin()` (how long the
 *   team's waits spin before they sleep), `max_minibatch()` (the run's largest minibatch),
 *   `lr(step)` (the learning rate of the run's `step`-th step), `model()` and `optimizer()` (the
 *   fit's Model and Optimizer, to read, e.g. an optional member or a hyperparameter).
 */
template <class Step>
concept StepQueries = requires(Step& s, const Step& c, const TeamMember& me, Index i) {
  typename Step::Scalar;
  typename Step::WorkerState;
  typename Step::Buffer;
  typename Step::Model;
  typename Step::Optimizer;
  { Step::state_slots } -> std::convertible_to<int>;
  { Step::adaptive_partitioner } -> std::convertible_to<bool>;
  { Step::passes_partials } -> std::convertible_to<bool>;
  { c.options() } -> std::same_as<const TrainerOptions&>;
  { c.processes() } -> std::same_as<Index>;
  { c.process() } -> std::same_as<Index>;
  { c.workers() } -> std::same_as<Index>;
  { c.first_worker() } -> std::same_as<Index>;
  { s.theta() } -> std::same_as<VectorMap<typename Step::Scalar>>;
  { s.optimizer_state() } -> std::same_as<std::span<AlignedBuffer<typename Step::Scalar>>>;
  { c.shard(me) } -> std::same_as<IndexRange>;
  { c.spin() } -> std::same_as<std::chrono::nanoseconds>;
  { c.max_minibatch() } -> std::same_as<Index>;
  { c.lr(i) } -> std::same_as<double>;
  { c.model() } -> std::same_as<const typename Step::Model&>;
  { c.optimizer() } -> std::same_as<const typename Step::Optimizer&>;
};

/**
 * @brief The collective parts: called by every thread of the team (of every process), in the same
 * order. Each charges its time to a phase of the worker's WorkerReport; barriers' waits go to wait.
 * - `local_gradient(me, step, epoch_step)`: worker me's micro-batches of the step (as the
 *   Partitioner cuts them) at θ, into its own buffer; `local_gradient(me, step, epoch_step, theta)`
 *   the same at a θ the caller gives (a replica of θ's length). Returns its scalars (loss, samples,
 *   failures; a throw is counted there, not thrown); `gradient(me)` is the result. No barrier.
 * - `wait_for_workers(me)`: a barrier after which every local gradient is written.
 * - `reduce_gradients(me)`: this thread's shard of Σ G over the team (Aggregator) and the
 *   processes (Communicator), elements `shard(me)` of θ.
 * - `reduce_scalars(me, shard)`: the step's one reduction of scalars (its loss, ‖Σ G‖², samples,
 *   failures, stop requests); returns whether to update θ, the same on every worker.
 * - `update(me, shard)`: the mean, clipping and the Optimizer on this thread's slice of θ and of
 *   the trainer's optimizer state; for an Optimizer that SumsOverGroups (Lars, Lamb) collective,
 *   with the groups' sums totalled over the team and the processes between its two halves.
 * - `publish(me)`: a barrier after which every worker sees the new θ.
 * - `finish(me, span, k, hook_point = false)`: records step k of `span` (thread 0) and, at a
 *   hook point of a loop that runs step hooks, calls on_step_end there while the other threads go
 *   on; returns the step's decision (leave: every worker leaves training now).
 * - `sum_vectors(me, v)`: Σ v over the team and the processes, v of θ's length (a replica of θ or
 *   of a state vector); returns this thread's shard of the sum, elements `shard(me)`. The
 *   vectors are summed in place and read by other threads until the next barrier.
 * - `sum_scalars(me, mine)`: any StepScalars summed over the team and the processes (no gradient).
 * - A sum in process order, for a loop whose sums must not depend on the process count
 *   (Reproducible), in pieces of a vector v so that the processes work on different pieces at
 *   once: for each piece, in the same order on every process, `receive_partial(me, piece,
 *   scalars)`, the team adds its process's terms to the piece (and thread 0 to `*scalars`), then
 *   `pass_partial(me, piece, scalars)`; after the last piece `await_total(me, scalars)`.
 *   `receive_partial` returns once the piece (and `*scalars`, unless null) holds what the process
 *   before passed on (in the first process: at once, as they are); `pass_partial` is a barrier,
 *   then passes them on to the next process without waiting; `await_total` returns once every
 *   piece and the scalars hold the last process's sums, on every process. With one process,
 *   `pass_partial` is the barrier and the others do nothing.
 */
template <class Step>
concept CollectiveStepParts = requires(Step& s, const TeamMember& me, VectorMap<typename Step::Scalar> v,
                                       ConstVectorRef<typename Step::Scalar> theta, const StepSpan& span, Index i,
                                       const StepScalars& scalars, StepScalars& partial) {
  { s.local_gradient(me, i, i) } -> std::same_as<StepScalars>;
  { s.local_gradient(me, i, i, theta) } -> std::same_as<StepScalars>;
  { s.gradient(me) } -> std::same_as<VectorMap<typename Step::Scalar>>;
  s.wait_for_workers(me);
  { s.reduce_gradients(me) } -> std::same_as<VectorMap<typename Step::Scalar>>;
  { s.reduce_scalars(me, v) } -> std::same_as<bool>;
  s.update(me, v);
  s.publish(me);
  { s.finish(me, span, i) } -> std::same_as<const StepOutcome&>;
  { s.finish(me, span, i, true) } -> std::same_as<const StepOutcome&>;
  { s.sum_vectors(me, v) } -> std::same_as<VectorMap<typename Step::Scalar>>;
  { s.sum_scalars(me, scalars) } -> std::same_as<StepScalars>;
  s.receive_partial(me, v, &partial);
  s.pass_partial(me, v, &scalars);
  s.await_total(me, partial);
};

/**
 * @brief The parts a loop calls from one thread, at its own pace: for loops that share a step's
 * work out themselves (BackupWorkers) or keep θ replicas.
 * - `make_worker(id, rows)`, `make_buffer(rows)`: a Worker policy's state for `rows` samples
 *   (`id` names it to the policy) and a gather buffer of as many rows; made before the first step;
 * - `biases(layout)`: the model's biases cut along `layout`'s slices (`.of(t)`), for update_range;
 * - `gradient(w, buffer, theta, epoch_step, share, failure)`: the gradient of `share` of the
 *   step's minibatches at `theta`, into `w`; returns its scalars, a throw counted there and left
 *   in `failure` (for keep()). `theta` is θ (a ConstVectorMap), or a function that is given each
 *   micro-batch (a `const Step::Model::batch_type&`) before the model runs on it and returns the
 *   θ to run it at: Hogwild! reads there only the coordinates the micro-batch touches;
 * - `keep(failure)`: a failure for fit() to throw (the first kept wins);
 * - `hook_scalars()`: what the hooks since the last step add to its scalars;
 * - `judge(totals, step, keeper)`: the decision of a step from its totals (`sumsq` = ‖Σ G‖²);
 *   the `keeper` (one thread per process) keeps the step's error;
 * - `update_range(g, range, theta, state, biases, outcome, step)`: elements `range` of the update:
 *   g (that range of Σ G) scaled in place to the clipped mean, then the Optimizer on `theta` and
 *   `state` (whole vectors of θ's length: the trainer's or the caller's own); not for an Optimizer
 *   that SumsOverGroups, which a loop that calls it refuses in its start();
 * - `squared_norm(g)`: Σgᵢ² in double;
 * - `charge(me, phase)`: the time since the last charge to a phase of me's report;
 * - `adopt(me, outcome, counts)`: worker me ends the span with this decision, and the loop's
 *   counts of its work (a WorkerReport's samples, recomputed, staleness) go into its report;
 * - `record(span, k, outcome, theta, hook_point)`: records step k of `span` (θ as it left it) and,
 *   at a hook point of a loop that runs step hooks, calls the callbacks' on_step_end on this thread.
 */
template <class Step>
concept ChunkedStepParts = requires(Step& s, const Step& c, const TeamMember& me, typename Step::WorkerState& w,
                                    typename Step::Buffer& buffer, VectorMap<typename Step::Scalar> g,
                                    ConstVectorMap<typename Step::Scalar> theta, typename Step::Scalar* data,
                                    std::span<AlignedBuffer<typename Step::Scalar>> state,
                                    const ShardLayout<typename Step::Scalar>& layout,
                                    std::span<const IndexRange> biases, std::exception_ptr& failure,
                                    const StepScalars& totals, const StepOutcome& outcome, const StepSpan& span,
                                    Index i, bool flag, const detail::ThetaForBatch<Step>& read) {
  { c.make_worker(i, i) } -> std::same_as<typename Step::WorkerState>;
  { c.make_buffer(i) } -> std::same_as<typename Step::Buffer>;
  { c.biases(layout).of(i) } -> std::convertible_to<std::span<const IndexRange>>;
  { s.gradient(w, buffer, theta, i, Share{}, failure) } -> std::same_as<StepScalars>;
  { s.gradient(w, buffer, read, i, Share{}, failure) } -> std::same_as<StepScalars>;
  s.keep(failure);
  { c.hook_scalars() } -> std::same_as<StepScalars>;
  { s.judge(totals, i, flag) } -> std::same_as<StepOutcome>;
  s.update_range(g, IndexRange{}, data, state, biases, outcome, i);
  { Step::squared_norm(g) } -> std::same_as<double>;
  s.charge(me, &WorkerReport::compute);
  s.adopt(me, outcome, WorkerReport{});
  s.record(span, i, outcome, data, flag);
};

/// Every part a Synchronizer's loop may call; DataParallelTrainer's step provides exactly these.
template <class Step>
concept StepParts = StepQueries<Step> && CollectiveStepParts<Step> && ChunkedStepParts<Step>;

///@}

/// θ's biases for an update of the whole vector (`update_range(g, {0, n}, …)`), as a loop that
/// updates whole replicas needs them.
template <class Step>
[[nodiscard]] std::vector<IndexRange> whole_theta_biases(Step& step) {
  const auto sliced = step.biases(ShardLayout<typename Step::Scalar>{step.theta().size(), 1});  // of(0) points into it
  const auto biases = sliced.of(0);
  return {biases.begin(), biases.end()};
}

namespace detail {

/**
 * @brief A step with the parts of StepParts and nothing else, each doing nothing: the Synchronizer
 * concept checks a policy against it, and the tests compile every synchronizer's loop against it,
 * so a loop that calls anything beyond the list does not build.
 */
struct StepArchetype {
  using Scalar = float;
  struct WorkerState {
    VectorMap<float> gradient() { return {nullptr, 0}; }
  };
  struct Buffer {};
  // A Model with every optional member a loop may ask for (SparseGradient), and the Optimizer
  // whose settings one may read (Hogwild!'s sparse updates): both of a loop's paths build here.
  struct Model {
    using scalar_type = float;
    struct batch_type {
      [[nodiscard]] Index size() const { return 0; }
    };
    struct workspace_type {};
    [[nodiscard]] Index num_parameters() const { return 0; }
    [[nodiscard]] workspace_type make_workspace(Index) const { return {}; }
    float loss_and_gradient(ConstVectorRef<float>, const batch_type&, VectorRef<float>, workspace_type&) const {
      return 0;
    }
    float loss(ConstVectorRef<float>, const batch_type&, workspace_type&) const { return 0; }
    void validate(const batch_type&) const {}
    template <class Visit>
    void gradient_support(const batch_type&, Visit&&) const {}
  };
  using Optimizer = Sgd;
  struct Biases {
    [[nodiscard]] std::span<const IndexRange> of(Index) const { return {}; }
  };
  static constexpr int state_slots = 0;
  static constexpr bool adaptive_partitioner = false;
  static constexpr bool passes_partials = true;

  [[nodiscard]] const TrainerOptions& options() const { return options_; }
  [[nodiscard]] Index processes() const { return 1; }
  [[nodiscard]] Index process() const { return 0; }
  [[nodiscard]] Index workers() const { return 1; }
  [[nodiscard]] Index first_worker() const { return 0; }
  [[nodiscard]] VectorMap<float> theta() { return {nullptr, 0}; }
  [[nodiscard]] std::span<AlignedBuffer<float>> optimizer_state() { return {}; }
  [[nodiscard]] IndexRange shard(const TeamMember&) const { return {}; }
  [[nodiscard]] std::chrono::nanoseconds spin() const { return {}; }
  [[nodiscard]] Index max_minibatch() const { return 1; }
  [[nodiscard]] double lr(Index) const { return 0; }
  [[nodiscard]] const Model& model() const { return model_; }
  [[nodiscard]] const Optimizer& optimizer() const { return optimizer_; }

  StepScalars local_gradient(const TeamMember&, Index, Index) { return {}; }
  StepScalars local_gradient(const TeamMember&, Index, Index, ConstVectorRef<float>) { return {}; }
  VectorMap<float> gradient(const TeamMember&) { return {nullptr, 0}; }
  void wait_for_workers(const TeamMember&) {}
  VectorMap<float> reduce_gradients(const TeamMember&) { return {nullptr, 0}; }
  bool reduce_scalars(const TeamMember&, VectorMap<float>) { return false; }
  void update(const TeamMember&, VectorMap<float>) {}
  void publish(const TeamMember&) {}
  const StepOutcome& finish(const TeamMember&, const StepSpan&, Index, bool = false) { return outcome_; }
  VectorMap<float> sum_vectors(const TeamMember&, VectorMap<float> v) { return v; }
  StepScalars sum_scalars(const TeamMember&, const StepScalars& mine) { return mine; }
  void receive_partial(const TeamMember&, VectorMap<float>, StepScalars*) {}
  void pass_partial(const TeamMember&, VectorMap<float>, const StepScalars*) {}
  void await_total(const TeamMember&, StepScalars&) {}

  [[nodiscard]] WorkerState make_worker(Index, Index) const { return {}; }
  [[nodiscard]] Buffer make_buffer(Index) const { return {}; }
  [[nodiscard]] Biases biases(const ShardLayout<float>&) const { return {}; }
  StepScalars gradient(WorkerState&, Buffer&, ConstVectorMap<float>, Index, Share, std::exception_ptr&) { return {}; }
  template <
      class Read,
      std::enable_if_t<std::is_invocable_r_v<ConstVectorMap<float>, const Read&, const Model::batch_type&>, int> = 0>
  StepScalars gradient(WorkerState&, Buffer&, const Read&, Index, Share, std::exception_ptr&) {
    return {};
  }
  void keep(std::exception_ptr) {}
  [[nodiscard]] StepScalars hook_scalars() const { return {}; }
  StepOutcome judge(const StepScalars&, Index, bool) { return {}; }
  void update_range(VectorMap<float>, IndexRange, float*, std::span<AlignedBuffer<float>>, std::span<const IndexRange>,
                    const StepOutcome&, Index) {}
  static double squared_norm(VectorMap<float>) { return 0; }
  void charge(const TeamMember&, double WorkerReport::*) {}
  void adopt(const TeamMember&, const StepOutcome&, const WorkerReport&) {}
  void record(const StepSpan&, Index, const StepOutcome&, float* = nullptr, bool = true) {}

 private:
  TrainerOptions options_;
  StepOutcome outcome_;
  Model model_;
  Optimizer optimizer_;
};
static_assert(StepParts<StepArchetype>);

}  // namespace detail

}  // namespace dptrain
