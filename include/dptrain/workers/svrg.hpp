// SPDX-License-Identifier: MIT
// Svrg: stochastic variance-reduced gradient, data-parallel: a Worker decorator that corrects each
// micro-batch's gradient with an anchor, and the hook that recomputes the anchor's full gradient.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/dataset_rows.hpp"
#include "dptrain/workers/gradient_worker.hpp"

namespace dptrain {

/// What SVRG's workers share: the anchor θ̃ and the full gradient there, μ = (1/n) Σᵢ ∇ℓᵢ(θ̃),
/// written by Svrg's hook while no worker computes, read by every worker during the steps.
template <class Scalar>
struct SvrgAnchor {
  AlignedBuffer<Scalar> theta;          ///< θ̃
  AlignedBuffer<Scalar> mean_gradient;  ///< μ
  Index refreshes = 0;                  ///< full gradients computed so far (one pass over the data each)
};

/**
 * @brief The Worker policy of SVRG (made by Svrg::worker()): each micro-batch B's gradient becomes
 * Σ_{i∈B} ∇ℓᵢ(θ) − Σ_{i∈B} ∇ℓᵢ(θ̃) + |B|·μ, so that the step's mean is
 * ∇f_B(θ) − ∇f_B(θ̃) + μ: the same expectation as ∇f_B(θ), with a variance that vanishes as θ and θ̃
 * approach the optimum. Two gradients per sample; the loss reported is the one at θ.
 *
 * Wraps any Worker policy (`Inner`, GradientWorker by default, which computes the gradient at θ;
 * a StragglerWorker inside delays that one). Each state holds the gradient at θ̃ and a model
 * workspace of its own, made with it: a step allocates nothing.
 */
template <class Scalar, class Inner = GradientWorker>
struct SvrgWorker {
  std::shared_ptr<const SvrgAnchor<Scalar>> anchor;  ///< Svrg's: θ̃ and μ
  Inner inner{};                                     ///< the policy that computes the gradient at θ

  /// One state: the inner one, and the step's gradient at θ̃.
  template <Model M>
  class State {
    using InnerState = decltype(std::declval<const Inner&>().make(std::declval<const M&>(), Index{}, Index{}));
    using S = typename M::scalar_type;

   public:
    State(InnerState inner, const SvrgAnchor<S>* anchor, const M& model, Index max_rows)
        : inner_(std::move(inner)),
          anchor_(anchor),
          at_anchor_(model.num_parameters()),
          workspace_(model.make_workspace(max_rows)) {}

    void zero() {
      inner_.zero();
      at_anchor_.map().setZero();
      finished_ = false;
    }

    /// The micro-batch's gradient at θ (the inner state's) and at θ̃.
    void accumulate(const M& model, ConstVectorRef<S> theta, const typename M::batch_type& batch) {
      inner_.accumulate(model, theta, batch);
      if (batch.size() == 0) return;
      (void)model.loss_and_gradient(anchor_->theta.map(), batch, at_anchor_.map(), workspace_);
    }

    /// The corrected sum, finished at the first call after the step's micro-batches.
    [[nodiscard]] VectorMap<S> gradient() {
      VectorMap<S> g = inner_.gradient();
      if (!finished_ && inner_.samples() > 0) {  // no samples: no correction (nor anchor, before the first fit)
        finished_ = true;
        g += static_cast<S>(inner_.samples()) * anchor_->mean_gradient.map() - at_anchor_.map();
      }
      return g;
    }
    [[nodiscard]] double loss() const { return inner_.loss(); }
    [[nodiscard]] Index samples() const { return inner_.samples(); }

   private:
    InnerState inner_;
    const SvrgAnchor<S>* anchor_;
    AlignedBuffer<S> at_anchor_;  // Σ ∇ℓᵢ(θ̃) over the step's micro-batches
    typename M::workspace_type workspace_;
    bool finished_ = false;  // gradient() has applied the correction since zero()
  };

  /// State `id` for micro-batches of up to `max_rows` samples.
  /// @throws dptrain::invalid_argument for a model of another scalar type than the anchor's
  template <Model M>
  [[nodiscard]] State<M> make(const M& model, Index id, Index max_rows) const {
    if constexpr (std::is_same_v<typename M::scalar_type, Scalar>) {
      if (anchor == nullptr) throw invalid_argument("dptrain::SvrgWorker: no anchor (make it with Svrg::worker())");
      return State<M>(inner.make(model, id, max_rows), anchor.get(), model, max_rows);
    } else {
      throw invalid_argument("dptrain::SvrgWorker: the model's scalar type is not the anchor's");
    }
  }
};

/// How often Svrg recomputes its anchor.
struct SvrgOptions {
  Index period_epochs = 1;  ///< at the start of every this many epochs (1: each epoch, m = n/B steps)
};

/**
 * @brief SVRG (Johnson and Zhang, "Accelerating stochastic gradient descent using predictive
 * variance reduction", 2013) on the trainer's threads: a Worker policy (worker()) that corrects
 * each micro-batch's gradient with the anchor, and this callback, which at the start of every
 * `period_epochs`-th epoch sets the anchor θ̃ ← θ and computes the full gradient μ = ∇F(θ̃) over
 * the whole data set, data-parallel on `ctx.team`.
 *
 * It composes with every optimizer (with Sgd it is the classic form: θ ← θ − lr·(∇f_B(θ) −
 * ∇f_B(θ̃) + μ)) and every synchronizer whose steps run between epoch hooks. Cost per epoch: n
 * gradient evaluations for μ plus 2 per sample for the steps, 3n against SGD's n; what it buys is
 * a linear rate at a constant step on strongly convex problems, where SGD with a constant step
 * stalls at a noise floor (tests/workers/svrg_test.cpp; docs/optimizers.md says why it is a
 * Worker decorator and a hook rather than an Optimizer).
 *
 * - Memory: θ̃ and μ, per worker one more gradient and workspace, and per thread of the team a
 *   partial sum of θ's length and a workspace for μ's pass; all made at on_fit_begin (and again
 *   only when a fit's team is larger), so steps and refreshes allocate nothing.
 * - μ is summed over fixed chunks of rows, each thread's chunks into its own partial sum, then
 *   the partial sums in thread order: within rounding (1e-12 in double) of each other for any
 *   thread count.
 * - Processes: each process computes μ over the data set it was given, so under MPI the data
 *   must be replicated (MpiData::replicated, the default); with sharded data the anchors would
 *   differ between processes.
 * - Checkpoints store θ, not the anchor: a resume recomputes the anchor at the θ it starts from,
 *   which is the uninterrupted run's anchor when the resume starts an epoch of a refresh.
 *
 * @code
 * dptrain::Svrg svrg(model, data);  // the anchor, recomputed every epoch
 * dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.5}, svrg.worker());
 * trainer.fit(model, theta, data, svrg);
 * @endcode
 */
template <Model M, class D>
class Svrg {
 public:
  using Scalar = typename M::scalar_type;

  /// The model and data set must outlive the fits it takes part in.
  /// @throws dptrain::invalid_argument if period_epochs < 1
  Svrg(const M& model, const D& data, SvrgOptions options = {})
      : model_(&model), data_(&data), options_(options), anchor_(std::make_shared<SvrgAnchor<Scalar>>()) {
    if (options.period_epochs < 1)
      throw invalid_argument("dptrain::Svrg: period_epochs must be at least 1, got " +
                             std::to_string(options.period_epochs));
  }

  /// The Worker policy to give the trainer: `inner` (GradientWorker by default) corrected by the anchor.
  template <class Inner = GradientWorker>
  [[nodiscard]] SvrgWorker<Scalar, Inner> worker(Inner inner = {}) const {
    return {anchor_, std::move(inner)};
  }

  /// The anchor as the last refresh left it.
  [[nodiscard]] const SvrgAnchor<Scalar>& anchor() const noexcept { return *anchor_; }

  void on_fit_begin(TrainContext<Scalar>& ctx) {
    const Index n = model_->num_parameters(), threads = ctx.team.size();
    if (anchor_->theta.size() != n) {
      anchor_->theta = AlignedBuffer<Scalar>(n);
      anchor_->mean_gradient = AlignedBuffer<Scalar>(n);
    }
    if (std::ssize(threads_) < threads) {
      threads_.clear();
      threads_.reserve(static_cast<std::size_t>(threads));
      for (Index t = 0; t < threads; ++t) threads_.emplace_back(*model_, *data_, n, chunk_rows());
    }
    refreshed_in_fit_ = false;
  }

  void on_epoch_begin(TrainContext<Scalar>& ctx) {
    if (!refreshed_in_fit_ || ctx.epoch % options_.period_epochs == 0) refresh(ctx);
  }

 private:
  // A thread's share of μ's pass: its partial sum, a workspace and a buffer of rows.
  struct alignas(cache_line_bytes) ThreadPart {
    ThreadPart(const M& model, const D& data, Index n, Index rows)
        : sum(n), workspace(model.make_workspace(rows)), rows(detail::rows_buffer(data, rows)) {}
    AlignedBuffer<Scalar> sum;
    typename M::workspace_type workspace;
    decltype(detail::rows_buffer(std::declval<const D&>(), Index{})) rows;
  };

  [[nodiscard]] Index chunk_rows() const { return std::min<Index>(256, std::max<Index>(data_->size(), 1)); }

  // θ̃ ← θ; μ ← (1/n) Σᵢ ∇ℓᵢ(θ̃): chunk k of the rows on thread k mod T, then the threads' sums in
  // order, each thread its slice of θ.
  void refresh(TrainContext<Scalar>& ctx) {
    SvrgAnchor<Scalar>& a = *anchor_;
    std::copy_n(ctx.theta.data(), ctx.theta.size(), a.theta.data());
    const Index rows = chunk_rows(), samples = data_->size(), chunks = (samples + rows - 1) / rows;
    const ConstVectorMap<Scalar> anchor = std::as_const(a.theta).map();
    ctx.team.run([&](const TeamMember& me) {
      ThreadPart& mine = threads_[static_cast<std::size_t>(me.rank)];
      mine.sum.map().setZero();
      for (Index k = me.rank; k < chunks; k += me.size) {
        const Index begin = k * rows, count = std::min(rows, samples - begin);
        (void)model_->loss_and_gradient(anchor, detail::read_rows(*data_, begin, count, mine.rows), mine.sum.map(),
                                        mine.workspace);
      }
      me.barrier();
      const Index n = a.theta.size(), first = n * me.rank / me.size, last = n * (me.rank + 1) / me.size;
      const Scalar scale = Scalar(1) / static_cast<Scalar>(samples);
      for (Index i = first; i < last; ++i) {
        Scalar total = 0;
        for (Index t = 0; t < me.size; ++t) total += threads_[static_cast<std::size_t>(t)].sum.data()[i];
        a.mean_gradient.data()[i] = total * scale;
      }
    });
    ++a.refreshes;
    refreshed_in_fit_ = true;
  }

  const M* model_;
  const D* data_;
  SvrgOptions options_;
  std::shared_ptr<SvrgAnchor<Scalar>> anchor_;
  std::vector<ThreadPart> threads_;
  bool refreshed_in_fit_ = false;
};

}  // namespace dptrain
