// SPDX-License-Identifier: MIT
// The policy concepts: Model, Worker, Partitioner, Aggregator, Optimizer, Schedule, Communicator
// and Synchronizer.
//
// Each concept is a conjunction of named requirements, one per obligation, so that a failed check
// names what is missing. DataParallelTrainer checks each with a static_assert whose message is
// the first line of the compiler's error. Each concept has a short conforming example; the same
// code is compiled, and trained, by tests/core/concepts_test.cpp.
#pragma once

#include <concepts>
#include <span>
#include <utility>
#include <type_traits>
#include <vector>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/run_length.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/synchronizers/step_parts.hpp"

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
 * Optional: `std::vector<IndexRange> bias_ranges() const`, the parts of θ that are biases
 * (DeclaresBiases), which an optimizer with `decay_biases = false` does not decay;
 * `loss_and_gradient_overwrite(…)`, which writes the gradient instead of adding it
 * (OverwritesGradient), saving the worker a pass that zeroes it; `gradient_support(batch, visit)`,
 * the coordinates of θ a batch's gradient can touch (SparseGradient), with which Hogwild! writes
 * only those.
 *
 * Calls are made concurrently from several threads, each with its own workspace and gradient.
 *
 * @code
 * // Model: least squares through the origin on one feature, ℓ = ½(w·x − y)².
 * struct Line {
 *   using scalar_type = double;
 *   using batch_type = dptrain::DenseBatch<double, double>;
 *   struct workspace_type {};
 *   dptrain::Index num_parameters() const { return 1; }
 *   workspace_type make_workspace(dptrain::Index) const { return {}; }
 *   double loss_and_gradient(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::VectorRef<double> g,
 *                            workspace_type& ws) const {
 *     for (dptrain::Index i = 0; i < b.size(); ++i) {
 *       g[0] += (w[0] * b.features(i, 0) - b.targets[i]) * b.features(i, 0);
 *     }
 *     return loss(w, b, ws);
 *   }
 *   double loss(dptrain::ConstVectorRef<double> w, const batch_type& b, workspace_type&) const {
 *     return 0.5 * (b.features.col(0) * w[0] - b.targets).squaredNorm();
 *   }
 *   void validate(const batch_type& b) const {
 *     if (b.features.cols() != 1) throw dptrain::invalid_argument("Line: one feature per sample");
 *   }
 * };
 * static_assert(dptrain::Model<Line>);
 * @endcode
 */
template <class M>
concept Model =
    ModelTypes<M> && HasParameterCount<M> && MakesWorkspace<M> && ComputesLossAndGradient<M> && ValidatesData<M>;

/**
 * @brief A model that says which parts of θ are biases (intercepts): `m.bias_ranges()` returns
 * them as IndexRanges of θ, in increasing order, disjoint, within [0, num_parameters()).
 *
 * Optional for a Model. An optimizer with `decay_biases = false` (Sgd, Momentum, Adam, AdamW,
 * AdaGrad, RMSProp) applies its weight decay to every other element of θ and none to these, as
 * scikit-learn leaves the intercept unpenalised; DataParallelTrainer calls bias_ranges() once
 * per fit(), and throws dptrain::invalid_argument when such an optimizer meets a model without it.
 *
 * @code
 * // DeclaresBiases: a line with an intercept, ℓ = ½(w·x + b − y)², θ = [w, b]; θ[1] is the bias.
 * struct LineWithIntercept : Line {
 *   dptrain::Index num_parameters() const { return 2; }
 *   double loss_and_gradient(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::VectorRef<double> g,
 *                            workspace_type& ws) const {
 *     for (dptrain::Index i = 0; i < b.size(); ++i) {
 *       const double r = w[0] * b.features(i, 0) + w[1] - b.targets[i];
 *       g[0] += r * b.features(i, 0);
 *       g[1] += r;
 *     }
 *     return loss(w, b, ws);
 *   }
 *   double loss(dptrain::ConstVectorRef<double> w, const batch_type& b, workspace_type&) const {
 *     return 0.5 * (b.features.col(0).array() * w[0] + w[1] - b.targets.array()).matrix().squaredNorm();
 *   }
 *   std::vector<dptrain::IndexRange> bias_ranges() const { return {{.begin = 1, .size = 1}}; }
 * };
 * static_assert(dptrain::DeclaresBiases<LineWithIntercept>);
 * @endcode
 */
template <class M>
concept DeclaresBiases = Model<M> && requires(const M& m) {
  { m.bias_ranges() } -> std::convertible_to<std::vector<IndexRange>>;
};

/**
 * @brief A model that names its parameter groups: `m.parameter_groups()` returns ranges of θ,
 * increasing, that together cover every parameter once (an Mlp's W_l and b_l, say).
 *
 * Optional for a Model. An optimizer whose rule needs sums over a group (Lars and Lamb: the trust
 * ratio of each layer, see SumsOverGroups) reads them; a model without it is one group, all of θ.
 *
 * @code
 * // DeclaresParameterGroups: the line's slope and intercept as two groups.
 * struct GroupedLine : LineWithIntercept {
 *   std::vector<dptrain::IndexRange> parameter_groups() const { return {{0, 1}, {1, 1}}; }
 * };
 * static_assert(dptrain::DeclaresParameterGroups<GroupedLine>);
 * @endcode
 */
template <class M>
concept DeclaresParameterGroups = Model<M> && requires(const M& m) {
  { m.parameter_groups() } -> std::convertible_to<std::vector<IndexRange>>;
};

/**
 * @brief A model that can write a batch's gradient instead of adding it:
 * `m.loss_and_gradient_overwrite(θ, batch, grad, ws)` stores Σ∇ℓ in grad, whatever grad held
 * (0 for an empty batch), and returns Σℓ.
 *
 * Optional for a Model. GradientWorker calls it for the first micro-batch of each step instead
 * of zeroing its gradient first: a model whose gradient is large (the Mlp) zeroes each block
 * just before its product adds into it, while it is in cache, which saves a pass over memory.
 *
 * @code
 * // OverwritesGradient: the Line, writing its one gradient element.
 * struct OverwritingLine : Line {
 *   double loss_and_gradient_overwrite(dptrain::ConstVectorRef<double> w, const batch_type& b,
 *                                      dptrain::VectorRef<double> g, workspace_type& ws) const {
 *     g.setZero();
 *     return loss_and_gradient(w, b, g, ws);
 *   }
 * };
 * static_assert(dptrain::OverwritesGradient<OverwritingLine>);
 * @endcode
 */
template <class M>
concept OverwritesGradient = Model<M> &&
    requires(const M& m, ConstVectorRef<typename M::scalar_type> theta, const typename M::batch_type& batch,
             VectorRef<typename M::scalar_type> grad, typename M::workspace_type& ws) {
  { m.loss_and_gradient_overwrite(theta, batch, grad, ws) } -> std::same_as<typename M::scalar_type>;
};

namespace detail {
// A visitor of θ's coordinates, to check SparseGradient with.
struct CoordinateProbe {
  void operator()(Index) const {}
};
}  // namespace detail

/**
 * @brief A model whose gradient on a batch is zero outside a set of θ's coordinates it can name,
 * and whose loss on that batch reads θ only there: `m.gradient_support(batch, visit)` calls
 * `visit(i)` for each such coordinate i (in any order, repeats allowed), before the gradient is
 * computed. Allocates nothing.
 *
 * Optional for a Model: the sparse linear models have it (the columns a batch's rows store, and
 * the biases). Hogwild! uses it to read and write only those coordinates of θ for each
 * micro-batch, in O(stored entries) instead of O(θ's length), so threads whose micro-batches
 * touch different features do not overwrite each other's updates. A coordinate missing from the
 * support would be read stale and its gradient lost: the model's test checks the support against
 * the gradient.
 *
 * @code
 * // SparseGradient: the Line, whose batch touches w only if some row's feature is nonzero.
 * struct SparseLine : Line {
 *   template <class Visit>
 *   void gradient_support(const batch_type& b, Visit&& visit) const {
 *     if ((b.features.col(0).array() != 0.0).any()) visit(dptrain::Index{0});
 *   }
 * };
 * static_assert(dptrain::SparseGradient<SparseLine>);
 * @endcode
 */
template <class M>
concept SparseGradient = Model<M> &&
    requires(const M& m, const typename M::batch_type& batch, detail::CoordinateProbe visit) {
  m.gradient_support(batch, visit);
};

/**
 * @brief A model whose gradient on a sample is x̃ᵢ ⊗ rᵢ: its input (and a 1 for the biases)
 * times rᵢ, the derivative of its loss by its k linear outputs (its residuals).
 *
 * - `m.residual_width()`: k;
 * - `m.loss_and_residuals(θ, batch, out, ws)`: returns the batch's summed loss and writes row i
 *   of `out` (a RowMatrixMap of batch.size() × k) with sample i's residuals at θ;
 * - `m.add_residual_gradient(batch, residuals, grad, ws)`: adds Σᵢ x̃ᵢ ⊗ rᵢ for the residuals
 *   given (a ConstRowMatrixMap), the gradient at any θ where they are the batch's.
 *
 * Optional for a Model: the linear models have it (LinearRegression, LogisticRegression,
 * SoftmaxRegression and their sparse twins). Sag and Saga need it: their GradientTable stores a
 * sample's gradient as its k residuals, n·k numbers for the data set instead of n·d. Both
 * members allocate nothing; loss_and_residuals followed by add_residual_gradient must give
 * loss_and_gradient's gradient (tests/workers/gradient_table_test.cpp checks each model).
 *
 * @code
 * // ResidualGradient: the Line's gradient is Σ rᵢ·xᵢ with rᵢ = w·xᵢ − yᵢ.
 * struct ResidualLine : Line {
 *   dptrain::Index residual_width() const { return 1; }
 *   double loss_and_residuals(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::RowMatrixMap<double> r,
 *                             workspace_type& ws) const {
 *     r.col(0) = b.features.col(0) * w[0] - b.targets;
 *     return loss(w, b, ws);
 *   }
 *   void add_residual_gradient(const batch_type& b, dptrain::ConstRowMatrixMap<double> r,
 *                              dptrain::VectorRef<double> g, workspace_type&) const {
 *     g[0] += b.features.col(0).dot(r.col(0));
 *   }
 * };
 * static_assert(dptrain::ResidualGradient<ResidualLine>);
 * @endcode
 */
template <class M>
concept ResidualGradient = Model<M> &&
    requires(const M& m, ConstVectorRef<typename M::scalar_type> theta, const typename M::batch_type& batch,
             RowMatrixMap<typename M::scalar_type> out, ConstRowMatrixMap<typename M::scalar_type> residuals,
             VectorRef<typename M::scalar_type> grad, typename M::workspace_type& ws) {
  { m.residual_width() } -> std::convertible_to<Index>;
  { m.loss_and_residuals(theta, batch, out, ws) } -> std::convertible_to<typename M::scalar_type>;
  m.add_residual_gradient(batch, residuals, grad, ws);
};

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
 * struct PredictingLine : Line {
 *   using target_type = double;
 *   void predict(dptrain::ConstVectorRef<double> w, const batch_type& b, Eigen::Ref<dptrain::Vector<double>> out,
 *                workspace_type&) const {
 *     out = b.features.col(0) * w[0];
 *   }
 * };
 * static_assert(dptrain::Predictor<PredictingLine>);
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

/// A data set whose contiguous rows are a view of its own storage: `rows(begin, count)`.
template <class D, class Batch>
concept ViewsRows = requires(const D& d, Index i) {
  { d.rows(i, i) } -> std::same_as<Batch>;
};

/// A data set whose contiguous rows are copied into a buffer of its make_buffer():
/// `rows(begin, count, buffer)`.
template <class D, class Batch>
concept CopiesRows = requires(const D& d, Index i, typename D::Buffer& buffer) {
  { d.rows(i, i, buffer) } -> std::same_as<Batch>;
};

/// Contiguous rows either way.
template <class D, class Batch>
concept ContiguousRows = ViewsRows<D, Batch> || CopiesRows<D, Batch>;

/**
 * @brief A data set the trainer can draw batches of type `Batch` from.
 *
 * @par Requirements
 * `size()`, `validate()`, `make_buffer(max_rows)`, `gather(std::span<const Index>, Buffer&)`
 * (copy shuffled rows into a per-worker buffer), and contiguous rows either as a view,
 * `rows(begin, count)`, or copied into a buffer, `rows(begin, count, buffer)` (a data set whose
 * storage is not the batch's, as ByteDataset's bytes). Optionally `std::uint64_t checksum() const`,
 * a hash of its values, which MPI ranks of replicated data compare (docs/distributed.md).
 *
 * @code
 * static_assert(dptrain::DatasetOf<dptrain::DenseDataset<double>, dptrain::DenseBatch<double, double>>);
 * static_assert(dptrain::DatasetOf<dptrain::ByteDataset<float>, dptrain::DenseBatch<float, float>>);
 * @endcode
 */
template <class D, class Batch>
concept DatasetOf = ContiguousRows<D, Batch> &&
    requires(const D& d, Index i, std::span<const Index> rows, typename D::Buffer& buffer) {
  { d.size() } -> std::convertible_to<Index>;
  d.validate();
  { d.make_buffer(i) } -> std::same_as<typename D::Buffer>;
  { d.gather(rows, buffer) } -> std::same_as<Batch>;
};

// ---------------------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------------------

/**
 * @brief A Worker state that takes the data set rows of each micro-batch: `s.accumulate(model, θ,
 * batch, ids)`, ids[i] the row batch row i was read from (SampleIds). For a worker that keeps
 * something per sample (GradientTable's, for Sag and Saga). Each sample is in one micro-batch of
 * a step, at any thread count: the states of one step see disjoint rows.
 *
 * @code
 * // IndexedWorkerState: a worker that counts each sample's visits.
 * struct VisitCountingWorker {
 *   std::vector<int>* visits;
 *   template <class M>
 *   struct State {
 *     decltype(dptrain::GradientWorker{}.make(std::declval<const M&>(), 0, 0)) inner;
 *     std::vector<int>* visits;
 *     void zero() { inner.zero(); }
 *     void accumulate(const M& m, dptrain::ConstVectorRef<typename M::scalar_type> theta,
 *                     const typename M::batch_type& batch, dptrain::SampleIds ids) {
 *       for (dptrain::Index i = 0; i < ids.size(); ++i) ++(*visits)[static_cast<std::size_t>(ids[i])];
 *       inner.accumulate(m, theta, batch);
 *     }
 *     dptrain::VectorMap<typename M::scalar_type> gradient() { return inner.gradient(); }
 *     double loss() const { return inner.loss(); }
 *     dptrain::Index samples() const { return inner.samples(); }
 *   };
 *   template <class M>
 *   State<M> make(const M& model, dptrain::Index rank, dptrain::Index max_rows) const {
 *     return {dptrain::GradientWorker{}.make(model, rank, max_rows), visits};
 *   }
 * };
 * static_assert(dptrain::Worker<VisitCountingWorker, Line>);
 * @endcode
 */
template <class S, class M>
concept IndexedWorkerState = Model<M> && requires(S& s, const M& m, ConstVectorRef<typename M::scalar_type> theta,
                                                  const typename M::batch_type& batch, SampleIds ids) {
  s.accumulate(m, theta, batch, ids);
};

/**
 * @brief A Worker policy makes, for model type M, the states that compute local gradients: each
 * owns a gradient buffer and the model's workspace.
 *
 * @par Requirements
 * `w.make(model, id, max_rows)` returns state number `id` (0, 1, … in one fit(); one per worker,
 * numbered as the workers, except under BackupWorkers, whose pool of states any of its threads
 * takes: a Worker that acts per worker asks dptrain::current_worker() when it runs), a state `s` with
 * - `s.zero()`: clear the gradient, loss and sample count (start of a step);
 * - `s.accumulate(model, θ, batch)`: add one micro-batch's gradient and loss; or
 *   `s.accumulate(model, θ, batch, ids)` with the data set rows of the batch's samples
 *   (IndexedWorkerState), which the trainer then calls instead;
 * - `s.gradient()`: the summed gradient, a cache-line aligned `VectorMap` of length n, always
 *   the same memory; the trainer calls it after a step's last accumulate() and before the
 *   aggregator reads that memory, so a state may finish its sum there (GradientWorker zeroes a
 *   gradient no micro-batch wrote);
 * - `s.loss()` (double, summed) and `s.samples()` (Index) since the last zero().
 *
 * @code
 * // Worker and WorkerPolicy: a decorator that counts the micro-batches its inner worker computes.
 * struct CountingWorker {
 *   template <class M>
 *   struct State {
 *     decltype(dptrain::GradientWorker{}.make(std::declval<const M&>(), 0, 0)) inner;
 *     dptrain::Index batches = 0;
 *     void zero() { inner.zero(); }
 *     void accumulate(const M& m, dptrain::ConstVectorRef<typename M::scalar_type> theta,
 *                     const typename M::batch_type& batch) {
 *       ++batches;
 *       inner.accumulate(m, theta, batch);
 *     }
 *     dptrain::VectorMap<typename M::scalar_type> gradient() { return inner.gradient(); }
 *     double loss() const { return inner.loss(); }
 *     dptrain::Index samples() const { return inner.samples(); }
 *   };
 *   template <class M>
 *   State<M> make(const M& model, dptrain::Index rank, dptrain::Index max_rows) const {
 *     return {dptrain::GradientWorker{}.make(model, rank, max_rows)};
 *   }
 * };
 * static_assert(dptrain::Worker<CountingWorker, Line>);
 * @endcode
 */
template <class W, class M>
concept Worker = Model<M> && requires(const W& w, const M& m, Index i) {
  w.make(m, i, i);
} && requires(decltype(std::declval<const W&>().make(std::declval<const M&>(), Index{}, Index{}))& s, const M& m,
              ConstVectorRef<typename M::scalar_type> theta, const typename M::batch_type& batch) {
  s.zero();
  requires IndexedWorkerState<std::remove_reference_t<decltype(s)>, M> || requires {
    s.accumulate(m, theta, batch);
  };
  { s.gradient() } -> std::same_as<VectorMap<typename M::scalar_type>>;
  { s.loss() } -> std::convertible_to<double>;
  { s.samples() } -> std::convertible_to<Index>;
};

namespace detail {
/// The least Model, declared only: a Worker policy is checked against it before a model is known.
struct ProbeModel {
  using scalar_type = float;
  struct batch_type {
    Index size() const;
  };
  struct workspace_type {};
  Index num_parameters() const;
  workspace_type make_workspace(Index max_rows) const;
  float loss_and_gradient(ConstVectorRef<float>, const batch_type&, VectorRef<float>, workspace_type&) const;
  float loss(ConstVectorRef<float>, const batch_type&, workspace_type&) const;
  void validate(const batch_type&) const;
};
}  // namespace detail

/**
 * @brief A Worker policy for any model: what DataParallelTrainer's constructor recognises as the
 * worker argument (Worker<W, M> for the model fit() is given is checked there).
 *
 * @code
 * // CountingWorker: see the Worker concept.
 * static_assert(dptrain::WorkerPolicy<CountingWorker>);
 * @endcode
 */
template <class W>
concept WorkerPolicy = std::copy_constructible<W> && Worker<W, detail::ProbeModel>;

// ---------------------------------------------------------------------------------------------
// Partitioner
// ---------------------------------------------------------------------------------------------

/**
 * @brief Splits a minibatch of `batch` samples among `workers` threads.
 *
 * @par Requirements
 * `p.range(batch, workers, rank)` returns worker rank's contiguous IndexRange; the ranges of
 * ranks 0 … workers−1 are disjoint, in order, and cover [0, batch). Optional:
 * - `p.validate(workers)` throws dptrain::invalid_argument for a worker count it cannot serve
 *   (the trainer calls it with every worker of every process: threads × processes, once the
 *   processes are connected, before any range());
 * - `p.max_size(batch, workers)`: the most samples range() will ever give one worker (the
 *   trainer sizes the workers' buffers for it; without it, for the sizes range() gives at the
 *   start of fit());
 * - `p.observe(std::span<const WorkerLoad>)`: after each step, every worker's samples and
 *   gradient time (AdaptivePartitioner); the trainer calls it on one thread while no worker
 *   calls range(), on its own copy of the policy, made at the start of each fit().
 *
 * @code
 * // Partitioner: everything to the first worker.
 * struct FirstTakesAll {
 *   dptrain::IndexRange range(dptrain::Index batch, dptrain::Index, dptrain::Index rank) const {
 *     return rank == 0 ? dptrain::IndexRange{0, batch} : dptrain::IndexRange{batch, 0};
 *   }
 * };
 * static_assert(dptrain::Partitioner<FirstTakesAll>);
 * @endcode
 */
template <class P>
concept Partitioner = std::copy_constructible<P> && requires(const P& p, Index n) {
  { p.range(n, n, n) } -> std::same_as<IndexRange>;
};

/**
 * @brief A Partitioner that learns from each step's timings; it must also bound its sizes (max_size).
 *
 * @code
 * // AdaptivePartitioner: learns from each step's loads, bounds its sizes.
 * struct LearningFirstTakesAll : FirstTakesAll {
 *   dptrain::Index steps = 0;
 *   void observe(std::span<const dptrain::WorkerLoad>) { ++steps; }
 *   dptrain::Index max_size(dptrain::Index batch, dptrain::Index) const { return batch; }
 * };
 * static_assert(dptrain::AdaptivePartitioner<LearningFirstTakesAll>);
 * @endcode
 */
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
 * // Aggregator: thread 0 sums every buffer into its own, then each thread returns its shard.
 * struct SumIntoFirst {
 *   template <class Scalar>
 *   dptrain::VectorMap<Scalar> all_reduce(const dptrain::TeamMember& team,
 *                                         const dptrain::GradientBuffers<Scalar>& buffers) const {
 *     if (team.rank == 0)
 *       for (dptrain::Index t = 1; t < buffers.count(); ++t) buffers.buffer(0) += buffers.buffer(t);
 *     team.barrier();
 *     return buffers.shard(0, team.rank);
 *   }
 * };
 * static_assert(dptrain::Aggregator<SumIntoFirst>);
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
 *   Elements are independent, so any split of θ into slices gives the same result; the trainer
 *   hands each thread's slice over in parts of 32 KiB (detail::scale_and_update).
 * - optionally `static constexpr std::string_view name` and `std::vector<Setting> settings() const`,
 *   recorded in checkpoints (RunSetup) and compared across MPI ranks; a Synchronizer may have
 *   them too (docs/checkpoints.md, "Resuming elsewhere").
 *
 * @code
 * // Optimizer: plain gradient descent, no state.
 * struct Descent {
 *   double lr = 0.1;
 *   static constexpr int state_slots = 0;
 *   template <class Scalar>
 *   void update(const dptrain::UpdateSlice<Scalar, state_slots>& s, const dptrain::StepInfo& info) const {
 *     dptrain::VectorMap<Scalar> theta = s.theta;  // a writable copy of the view (s is const)
 *     theta -= static_cast<Scalar>(info.lr) * s.grad;
 *   }
 * };
 * static_assert(dptrain::Optimizer<Descent>);
 * @endcode
 */
template <class O>
concept Optimizer = std::copy_constructible<O> && OptimizerHyperparameters<O> && UpdatesSlices<O>;

/**
 * @brief An Optimizer whose rule needs sums over each of the model's parameter groups
 * (DeclaresParameterGroups), such as the norms of a layer's weights and update for a trust ratio
 * (Lars, Lamb).
 *
 * @par Requirements
 * - `static constexpr int group_sums`: how many sums per group;
 * - `void add_group_sums(const UpdateSlice<Scalar, state_slots>&, const StepInfo&, std::span<double> sums) const`
 *   for float and double: adds the slice's terms (every element of one group) to `sums`; it may
 *   update the slice's state (not θ).
 *
 * The trainer calls add_group_sums on every part of θ, sums the groups' terms over the threads and
 * the processes, then calls `update(slice, info)` on every part with `info.group` the totals of the
 * part's group. The sums are in double, and their order depends on how θ is sliced: different
 * thread counts agree within rounding (1e-12 in double), not bit for bit.
 */
template <class O>
concept SumsOverGroups = Optimizer<O> &&
    requires(const O& o, const UpdateSlice<float, O::state_slots>& f, const UpdateSlice<double, O::state_slots>& d,
             const StepInfo& info, std::span<double> sums) {
  { O::group_sums } -> std::convertible_to<int>;
  o.add_group_sums(f, info, sums);
  o.add_group_sums(d, info, sums);
};

/// An Optimizer whose gradient must be a GradientTable's (Sag, Saga: `static constexpr bool
/// reads_gradient_table = true`), and a Worker policy whose gradients only such an optimizer can
/// use (GradientTableWorker: `fills_gradient_table`); fit() refuses one without the other.
template <class O>
concept ReadsGradientTable = requires {
  requires O::reads_gradient_table;
};
template <class W>
concept FillsGradientTable = requires {
  requires W::fills_gradient_table;
};

/**
 * @brief A learning-rate schedule: `s.factor(step)` multiplies the optimizer's lr at the
 * 1-based optimizer step `step`.
 *
 * @code
 * // Schedule and FitsRun: halve the rate for the second half of the run.
 * struct HalfwayHalving {
 *   dptrain::Index total_steps = 0;  // 0: the run's
 *   double factor(dptrain::Index step) const { return 2 * step > total_steps ? 0.5 : 1.0; }
 *   HalfwayHalving for_run(const dptrain::RunLength& run) const {
 *     return {total_steps == 0 ? run.total_steps : total_steps};
 *   }
 * };
 * static_assert(dptrain::Schedule<HalfwayHalving> && dptrain::FitsRun<HalfwayHalving>);
 * @endcode
 */
template <class S>
concept Schedule = std::copy_constructible<S> && requires(const S& s, Index step) {
  { s.factor(step) } -> std::convertible_to<double>;
};

/// A schedule that takes its unset lengths from the run: `s.for_run(length)` returns the
/// schedule fit() uses (CosineSchedule, StepSchedule, WarmupSchedule).
template <class S>
concept FitsRun = Schedule<S> && requires(const S& s, const RunLength& length) {
  { s.for_run(length) } -> std::same_as<S>;
};

// ---------------------------------------------------------------------------------------------
// Communicator: the processes beyond the thread team
// ---------------------------------------------------------------------------------------------

/**
 * @brief One fit()'s connection to the other processes of a run (what Communicator::connect
 * returns). Workers are numbered globally: this process's threads are workers
 * first_worker() … first_worker() + threads − 1 of workers().
 *
 * @par Requirements
 * - `rank()`, `size()`: this process and the number of processes;
 * - `first_worker()`, `workers()`: this process's first global worker and the global count;
 * - `broadcast(VectorMap<Scalar> theta)`: θ from process 0 to all, on the thread that called fit();
 * - `all_reduce(const TeamMember&, VectorMap<Scalar> shard)`: called by every thread of every
 *   process with its shard of the team's reduced gradient; sums the shard over processes in place;
 * - `all_reduce(StepScalars&)`: called by thread 0 of each process; sums the fields over processes.
 *   Its result must be the same on every process: every decision is taken from it.
 *
 * Optionally, `std::string first_failure(std::string_view mine)`: called by thread 0 of every
 * process once the scalars count a failure, with what this process threw (empty if nothing);
 * returns the same sentence everywhere, e.g. "rank 2 failed: <what()>", which the processes that
 * did not fail throw. Without it they throw "another process failed".
 */
template <class G>
concept ProcessGroup = requires(const G& g, const TeamMember& me, VectorMap<float> f, VectorMap<double> d,
                                StepScalars& scalars) {
  { g.rank() } -> std::convertible_to<Index>;
  { g.size() } -> std::convertible_to<Index>;
  { g.first_worker() } -> std::convertible_to<Index>;
  { g.workers() } -> std::convertible_to<Index>;
  g.broadcast(f);
  g.broadcast(d);
  g.all_reduce(me, f);
  g.all_reduce(me, d);
  g.all_reduce(scalars);
};

/// A ProcessGroup that can sum a few doubles over the processes (optional: an optimizer that
/// SumsOverGroups needs it with several processes): `g.all_reduce_values(values)`, called by thread
/// 0 of every process with as many values, leaves the same sums in place on every process.
template <class G>
concept SumsValues = ProcessGroup<G> && requires(const G& g, std::span<double> values) {
  g.all_reduce_values(values);
};

/**
 * @brief A ProcessGroup that can also sum in process order (optional: Reproducible needs it with
 * several processes): a partial sum travels from process 0 to the last, each adding its terms,
 * so the sum's rounding depends on the order of the terms only, never on the process count.
 * Each process sends one vector of θ's length onward and receives the total back, the volumes
 * of a reduce-scatter and an all-gather; no process gathers every term.
 *
 * The sum travels in pieces of v, so that process r adds piece j while piece j + 1 is on its way
 * to it and piece j − 1 on its way onwards.
 *
 * @par Requirements (thread 0 of every process, with the same pieces in the same order)
 * - `receive_partial(VectorMap<Scalar> piece, StepScalars* scalars)`, on every process but the
 *   first: the piece (and `*scalars`, unless null) become what the process before passed on;
 * - `pass_partial(VectorMap<Scalar> piece, const StepScalars* scalars)`, on every process: starts
 *   passing them on to the next process (the last has none) and returns; the piece is written
 *   again only once await_total() returns;
 * - `await_total(StepScalars& scalars)`: once every piece passed since the last call holds the last
 *   process's sum, and `scalars` the last process's scalars.
 */
template <class G>
concept OrderedProcessGroup = ProcessGroup<G> &&
    requires(const G& g, VectorMap<float> f, VectorMap<double> d, StepScalars& scalars) {
  g.receive_partial(f, &scalars);
  g.receive_partial(d, &scalars);
  g.pass_partial(f, &scalars);
  g.pass_partial(d, &scalars);
  g.await_total(scalars);
};

/**
 * @brief The seam beyond the thread team: how a run's processes (MPI ranks, say) exchange
 * gradients, the step's scalars and θ. Inside a process the team reduces with its Aggregator;
 * the communicator then sums each thread's shard across processes.
 *
 * @par Requirements
 * `c.connect(threads, signature)` returns a ProcessGroup for one fit() of `threads` threads; it
 * is called on the thread that calls fit(), before the team starts, and may compare the
 * RunSignature across processes (and throw dptrain::invalid_argument on every process if they
 * differ). A process whose own checks failed connects with `RunSignature::refused` set and then
 * throws its reason: a multi-process communicator must make the others throw too.
 *
 * @code
 * // The default: one process, every operation free (SingleProcessCommunicator).
 * struct OneProcess {
 *   struct Group {
 *     dptrain::Index threads;
 *     dptrain::Index rank() const { return 0; }
 *     dptrain::Index size() const { return 1; }
 *     dptrain::Index first_worker() const { return 0; }
 *     dptrain::Index workers() const { return threads; }
 *     template <class S> void broadcast(dptrain::VectorMap<S>) const {}
 *     template <class S> void all_reduce(const dptrain::TeamMember&, dptrain::VectorMap<S>) const {}
 *     void all_reduce(dptrain::StepScalars&) const {}
 *   };
 *   Group connect(dptrain::Index threads, const dptrain::RunSignature&) const { return {threads}; }
 * };
 * static_assert(dptrain::Communicator<OneProcess>);
 * @endcode
 */
template <class C>
concept Communicator = std::copy_constructible<C> && requires(const C& c, Index threads, const RunSignature& run) {
  { c.connect(threads, run) } -> ProcessGroup;
};

// ---------------------------------------------------------------------------------------------
// Synchronizer: how the steps between two hook points run
// ---------------------------------------------------------------------------------------------

/**
 * @brief How the steps between two hook points run: when the workers' gradients are combined,
 * and when θ changes. Synchronous SGD reduces every step (EveryStepSynchronizer); BackupWorkers
 * shares each step out in chunks and computes a stalled one again; periodic averaging and
 * bounded staleness are other Synchronizers.
 *
 * @par Requirements
 * `template <class Step> Loop start(Step& step) const`, called once per fit() before the team
 * starts, returns the fit's loop (any state it needs, sized there; a combination it cannot run is
 * refused there with dptrain::invalid_argument). Every thread of the team then calls
 * `loop.run(me, span)` for each StepSpan; it returns a SpanEnd when the span's steps are done or
 * the team leaves training (SpanEnd::last.leave, the same on every worker).
 *
 * The loop composes the step's parts, and only those: StepParts (synchronizers/step_parts.hpp)
 * lists them, in three groups — what a loop may ask before it starts (StepQueries), the
 * collective parts every worker calls in the same order (CollectiveStepParts), and the parts one
 * thread calls at its own pace (ChunkedStepParts). Synchronous SGD is the collective parts in
 * order: local_gradient, wait_for_workers, reduce_gradients, reduce_scalars, update, publish,
 * finish.
 *
 * Step hooks: if the loop declares `static constexpr bool runs_step_hooks = true`, it calls
 * on_step_end itself (`step.record(…, hook_point = true)`, on the thread that ended the step), and
 * a span is a whole epoch even with step hooks; otherwise a span is one step when a callback has
 * on_step_end, and the hooks run between spans.
 *
 * @code
 * struct EveryStep {
 *   template <class Step>
 *   struct Loop {
 *     Step* step;
 *     dptrain::SpanEnd run(const dptrain::TeamMember& me, const dptrain::StepSpan& span) const {
 *       dptrain::SpanEnd end;
 *       for (dptrain::Index k = 0; k < span.count; ++k) {
 *         step->local_gradient(me, span.first + k, span.epoch_step + k);
 *         step->wait_for_workers(me);
 *         auto shard = step->reduce_gradients(me);
 *         if (step->reduce_scalars(me, shard)) step->update(me, shard);
 *         step->publish(me);
 *         end = {k + 1, step->finish(me, span, k)};
 *         if (end.last.leave) break;
 *       }
 *       return end;
 *     }
 *   };
 *   template <class Step>
 *   Loop<Step> start(Step& step) const { return {&step}; }
 * };
 * static_assert(dptrain::Synchronizer<EveryStep>);
 * @endcode
 */
template <class S>
concept Synchronizer = std::copy_constructible<S> &&
    requires(const S& s, detail::StepArchetype& step, const TeamMember& me, const StepSpan& span) {
  { s.start(step).run(me, span) } -> std::same_as<SpanEnd>;
};

}  // namespace dptrain
