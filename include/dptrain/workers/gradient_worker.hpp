// SPDX-License-Identifier: MIT
// GradientWorker: a thread's gradient buffer and model workspace; runs the model on micro-batches.
#pragma once

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"

namespace dptrain {

/**
 * @brief The standard Worker policy: each thread gets a cache-line aligned gradient buffer and
 * its own model workspace, both sized before the first step.
 *
 * Decorators (e.g. a straggler that delays chosen ranks) wrap it and forward to its State.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.1});  // GradientWorker: the default
 * @endcode
 */
struct GradientWorker {
  /// One thread's state: used only by the thread that owns it.
  template <Model M>
  class State {
   public:
    using Scalar = typename M::scalar_type;

    State(const M& model, Index max_rows)
        : gradient_(model.num_parameters()), workspace_(model.make_workspace(max_rows)) {}

    /// Starts a step: clears the gradient, the loss and the sample count. The gradient is cleared
    /// lazily: a model that OverwritesGradient writes the first micro-batch's instead.
    void zero() noexcept {
      stale_ = true;
      loss_ = 0;
      samples_ = 0;
    }

    /// Adds one micro-batch's summed gradient and loss.
    void accumulate(const M& model, ConstVectorRef<Scalar> theta, const typename M::batch_type& batch) {
      if (batch.size() == 0) return;
      const Scalar loss = [&] {
        if constexpr (OverwritesGradient<M>) {
          if (stale_) return model.loss_and_gradient_overwrite(theta, batch, gradient_.map(), workspace_);
        } else {
          if (stale_) gradient_.map().setZero();
        }
        return model.loss_and_gradient(theta, batch, gradient_.map(), workspace_);
      }();
      stale_ = false;
      loss_ += static_cast<double>(loss);
      samples_ += batch.size();
    }

    /// The gradient summed since zero() (0 if no micro-batch had rows).
    [[nodiscard]] VectorMap<Scalar> gradient() noexcept {
      if (stale_) {
        gradient_.map().setZero();
        stale_ = false;
      }
      return gradient_.map();
    }
    [[nodiscard]] double loss() const noexcept { return loss_; }
    [[nodiscard]] Index samples() const noexcept { return samples_; }

   private:
    AlignedBuffer<Scalar> gradient_;
    typename M::workspace_type workspace_;
    bool stale_ = true;  // the gradient holds an earlier step's sum
    double loss_ = 0;
    Index samples_ = 0;
  };

  /// Makes the state of worker `rank`, for micro-batches of up to `max_rows` samples.
  template <Model M>
  [[nodiscard]] State<M> make(const M& model, Index /*rank*/, Index max_rows) const {
    return State<M>(model, max_rows);
  }
};

}  // namespace dptrain
