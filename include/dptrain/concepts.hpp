// SPDX-License-Identifier: MIT
// The five policy concepts (Model, Worker, Partitioner, Aggregator, Optimizer) and Schedule.
//
// Each concept is a conjunction of named requirements, one per obligation, so that a
// failed check names what is missing. DataParallelTrainer checks each with a static_assert
// whose message is the first line of the compiler's error.
#pragma once

#include <concepts>
#include <span>
#include <utility>
#include <type_traits>

#include "dptrain/core/team.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"

namespace dptrain {

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

/// A model names its scalar, the batch it reads and its per-worker workspace.
template <class M>
concept ModelTypes = requires {
  typename M::scalar_type;
  typename M::batch_type;
  typename M::workspace_type;
}
&&std::floating_point<typename M::scalar_type>;

/// `m.num_parameters()`: the length of θ.
template <class M>
concept HasParameterCount = requires(const M& m) {
  { m.num_parameters() } -> std::convertible_to<Index>;
};

/// `m.make_workspace(max_rows)`: scratch memory for batches of up to max_rows samples.
template <class M>
concept MakesWorkspace = requires(const M& m, Index max_rows) {
  { m.make_workspace(max_rows) } -> std::same_as<typename M::workspace_type>;
};

/// `m.loss_and_gradient(θ, batch, grad, ws)`: adds Σ∇ℓ over the batch to grad, returns Σℓ.
template <class M>
concept ComputesLossAndGradient = requires(const M& m, ConstVectorRef<typename M::scalar_type> theta,
                                           const typename M::batch_type& batch, VectorRef<typename M::scalar_type> grad,
                                           typename M::workspace_type& ws) {
  { m.loss_and_gradient(theta, batch, grad, ws) } -> std::same_as<typename M::scalar_type>;
  { m.loss(theta, batch, ws) } -> std::same_as<typename M::scalar_type>;
};

/// `m.validate(batch)`: throws dptrain::invalid_argument if the data do not fit the model.
template <class M>
concept ValidatesData = requires(const M& m, const typename M::batch_type& batch) {
  m.validate(batch);
};

/**
 * @brief A differentiable model with a per-sample loss ℓ(x; θ) over a flat parameter vector θ.
 *
 * @par Requirements
 * - `scalar_type` (float or double), `batch_type` (what a data set's rows()/gather() return),
 *   `workspace_type` (per-worker scratch, so a step allocates nothing);
 * - `Index num_parameters() const`;
 * - `workspace_type make_workspace(Index max_rows) const`;
 * - `scalar_type loss_and_gradient(ConstVectorRef θ, const batch_type&, VectorRef grad, workspace_type&) const`
 *   **adds** the summed gradient Σ∇ℓ to grad and returns the summed loss Σℓ;
 * - `scalar_type loss(ConstVectorRef θ, const batch_type&, workspace_type&) const` returns Σℓ;
 * - `void validate(const batch_type&) const` throws dptrain::invalid_argument on data that do not
 *   fit (feature count, labels out of range).
 *
 * Calls are made concurrently from several threads, each with its own workspace and gradient.
 *
 * @code
 * static_assert(dptrain::Model<dptrain::SoftmaxRegression<float>>);
 * @endcode
 */
template <class M>
concept Model =
    ModelTypes<M> && HasParameterCount<M> && MakesWorkspace<M> && ComputesLossAndGradient<M> && ValidatesData<M>;

/**
 * @brief A model that can predict: `m.predict(θ, batch, out, ws)` writes one prediction per row
 * of the batch into `out` (the predicted class, or the predicted value for regression).
 *
 * @par Requirements
 * - `target_type`: the type of a prediction (`Label` for classifiers, `scalar_type` for regression);
 * - `void predict(ConstVectorRef θ, const batch_type&, Eigen::Ref<Vector<target_type>> out,
 *   workspace_type&) const`, allocation-free, for batches of up to the workspace's max_rows rows.
 *
 * @code
 * static_assert(dptrain::Predictor<dptrain::SoftmaxRegression<float>>);
 * @endcode
 */
template <class M>
concept Predictor = Model<M> &&
    requires(const M& m, ConstVectorRef<typename M::scalar_type> theta, const typename M::batch_type& batch,
             Eigen::Ref<Vector<typename M::target_type>> out, typename M::workspace_type& ws) {
  m.predict(theta, batch, out, ws);
};

// ---------------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------------

/**
 * @brief A data set the trainer can draw batches of type `Batch` from.
 *
 * @par Requirements
 * `size()`, `validate()`, `rows(begin, count)` (zero-copy), `make_buffer(max_rows)` and
 * `gather(std::span<const Index>, Buffer&)` (copy shuffled rows into a per-worker buffer).
 */
template <class D, class Batch>
concept DatasetOf = requires(const D& d, Index i, std::span<const Index> rows, typename D::Buffer& buffer) {
  { d.size() } -> std::convertible_to<Index>;
  d.validate();
  { d.rows(i, i) } -> std::same_as<Batch>;
  { d.make_buffer(i) } -> std::same_as<typename D::Buffer>;
  { d.gather(rows, buffer) } -> std::same_as<Batch>;
};

// ---------------------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------------------

/**
 * @brief A Worker policy makes, for model type M, the per-thread state that computes local
 * gradients: it owns the gradient buffer and the model's workspace.
 *
 * @par Requirements
 * `w.make(model, rank, max_rows)` returns a state `s` with
 * - `s.zero()`: clear the gradient, loss and sample count (start of a step);
 * - `s.accumulate(model, θ, batch)`: add one micro-batch's gradient and loss;
 * - `s.gradient()`: the summed gradient, a cache-line aligned `VectorMap` of length n;
 * - `s.loss()` (double, summed) and `s.samples()` (Index) since the last zero().
 */
template <class W, class M>
concept Worker = Model<M> && requires(const W& w, const M& m, Index i) {
  w.make(m, i, i);
} && requires(decltype(std::declval<const W&>().make(std::declval<const M&>(), Index{}, Index{}))& s, const M& m,
              ConstVectorRef<typename M::scalar_type> theta, const typename M::batch_type& batch) {
  s.zero();
  s.accumulate(m, theta, batch);
  { s.gradient() } -> std::same_as<VectorMap<typename M::scalar_type>>;
  { s.loss() } -> std::convertible_to<double>;
  { s.samples() } -> std::convertible_to<Index>;
};

// ---------------------------------------------------------------------------------------------
// Partitioner
// ---------------------------------------------------------------------------------------------

/**
 * @brief Splits a minibatch of `batch` samples among `workers` threads.
 *
 * @par Requirements
 * `p.range(batch, workers, rank)` returns worker rank's contiguous IndexRange; the ranges of
 * ranks 0 … workers−1 are disjoint, in order, and cover [0, batch). Optional:
 * - `p.validate(workers)` throws dptrain::invalid_argument for a thread count it cannot serve;
 * - `p.max_size(batch, workers)`: the most samples range() will ever give one worker (the
 *   trainer sizes the workers' buffers for it; without it, for the sizes range() gives at the
 *   start of fit());
 * - `p.observe(std::span<const WorkerLoad>)`: after each step, every worker's samples and
 *   gradient time (AdaptivePartitioner); the trainer calls it on one thread while no worker
 *   calls range(), on its own copy of the policy, made at the start of each fit().
 */
template <class P>
concept Partitioner = std::copy_constructible<P> && requires(const P& p, Index n) {
  { p.range(n, n, n) } -> std::same_as<IndexRange>;
};

/// A Partitioner that learns from each step's timings; it must also bound its sizes (max_size).
template <class P>
concept AdaptivePartitioner = Partitioner<P> && requires(P& p, const P& c, std::span<const WorkerLoad> loads, Index n) {
  p.observe(loads);
  { c.max_size(n, n) } -> std::convertible_to<Index>;
};

// ---------------------------------------------------------------------------------------------
// Aggregator
// ---------------------------------------------------------------------------------------------

/// `a.all_reduce(team, buffers)` for both float and double buffers.
template <class A>
concept AllReducesBothScalars = requires(const A& a, const TeamMember& team, const GradientBuffers<float>& f,
                                         const GradientBuffers<double>& d) {
  { a.all_reduce(team, f) } -> std::same_as<VectorMap<float>>;
  { a.all_reduce(team, d) } -> std::same_as<VectorMap<double>>;
};

/**
 * @brief A collective that sums the N workers' gradient buffers.
 *
 * @par Requirements
 * `a.all_reduce(team, buffers)` is called by every thread of the team, after a barrier that
 * follows the last write to any buffer. It returns, on thread t, a view of shard t
 * (buffers.layout.shard(t)) of the element-wise sum Σ_u buffer(u). On return no thread reads
 * another thread's returned shard any more, so its owner may scale it in place.
 * It allocates nothing.
 *
 * @code
 * static_assert(dptrain::Aggregator<dptrain::RingAllReduceAggregator>);
 * @endcode
 */
template <class A>
concept Aggregator = std::copy_constructible<A> && AllReducesBothScalars<A>;

// ---------------------------------------------------------------------------------------------
// Optimizer and Schedule
// ---------------------------------------------------------------------------------------------

/// `o.lr`: the base learning rate, and `O::state_slots`: how many state vectors it keeps.
template <class O>
concept OptimizerHyperparameters = requires(const O& o) {
  { o.lr } -> std::convertible_to<double>;
  { O::state_slots } -> std::convertible_to<int>;
};

/// `o.update(slice, info)` for both float and double slices.
template <class O>
concept UpdatesSlices = requires(const O& o, const UpdateSlice<float, O::state_slots>& f,
                                 const UpdateSlice<double, O::state_slots>& d, const StepInfo& info) {
  o.update(f, info);
  o.update(d, info);
};

/**
 * @brief An elementwise update rule θ ← step(θ, g), applied by each thread to its own slice.
 *
 * @par Requirements
 * - `double lr` (the base learning rate) and `static constexpr int state_slots`;
 * - `void update(const UpdateSlice<Scalar, state_slots>&, const StepInfo&) const` for float and
 *   double: updates slice.theta (and slice.state) from slice.grad, using info.lr and info.step.
 *   Elements are independent, so any split of θ into slices gives the same result.
 */
template <class O>
concept Optimizer = std::copy_constructible<O> && OptimizerHyperparameters<O> && UpdatesSlices<O>;

/**
 * @brief A learning-rate schedule: `s.factor(step)` multiplies the optimizer's lr at the
 * 1-based optimizer step `step`.
 */
template <class S>
concept Schedule = std::copy_constructible<S> && requires(const S& s, Index step) {
  { s.factor(step) } -> std::convertible_to<double>;
};

}  // namespace dptrain
