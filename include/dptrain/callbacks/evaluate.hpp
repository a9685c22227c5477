// SPDX-License-Identifier: MIT
// Evaluate: a callback that measures accuracy or mean loss on a validation set after every epoch.
#pragma once

#include <concepts>
#include <limits>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/evaluation/accuracy.hpp"
#include "dptrain/evaluation/mean_loss.hpp"

namespace dptrain {

/// What Evaluate measures.
enum class EvaluationMetric {
  automatic,  ///< accuracy for classifiers (integer target_type with predict()), else mean_loss
  accuracy,   ///< fraction of correctly predicted labels; higher is better
  mean_loss,  ///< mean per-sample loss; lower is better
};

/// Options of Evaluate.
struct EvaluateOptions {
  EvaluationMetric metric = EvaluationMetric::automatic;
};

/**
 * @brief A callback that evaluates θ on a validation set at the end of every epoch and keeps
 * the history: accuracy() for classifiers, mean_loss() otherwise (or as chosen).
 *
 * It holds the model and the data set by reference: both must outlive the fit() calls it is
 * passed to. EarlyStopping and MetricsLog can read its latest value: pass Evaluate to fit()
 * **before** them, since hooks run in argument order.
 *
 * on_epoch_end costs one pass of the model over the validation set per epoch, data-parallel on
 * the trainer's own threads (ctx.team), which would otherwise wait for the hook. Not
 * thread-safe; read history() between fit() calls or from other hooks.
 *
 * @tparam M a Model (a Predictor for accuracy)
 * @tparam D a data set (DatasetOf) of the model's batch_type
 *
 * @code
 * dptrain::Evaluate evaluate(model, validation);           // accuracy for a classifier
 * dptrain::EarlyStopping stopping(evaluate, {.patience = 3});
 * trainer.fit(model, theta, train, evaluate, stopping);     // evaluate first
 * double best = stopping.best_value();
 * @endcode
 */
template <class M, class D>
class Evaluate {
  static_assert(Model<M>, "dptrain: Evaluate needs a Model");

 public:
  using scalar_type = typename M::scalar_type;

  /**
   * @param model   the model being trained (held by reference)
   * @param data    the validation set (held by reference)
   * @param options the metric
   * @throws dptrain::invalid_argument for metric accuracy with a model that cannot predict
   *         integer labels
   */
  Evaluate(const M& model, const D& data, EvaluateOptions options = {})
      : model_(model), data_(data), options_(options) {
    if (options_.metric == EvaluationMetric::automatic)
      options_.metric = classifier ? EvaluationMetric::accuracy : EvaluationMetric::mean_loss;
    if (options_.metric == EvaluationMetric::accuracy && !classifier)
      throw invalid_argument("dptrain::Evaluate: accuracy needs a model with predict() and integer labels");
  }

  /// Clears the history: each fit() starts a new one.
  void on_fit_begin(TrainContext<scalar_type>& ctx) {
    history_.clear();
    history_.reserve(static_cast<std::size_t>(ctx.total_epochs));
  }

  /// Evaluates θ on the trainer's threads and appends the value to history().
  void on_epoch_end(TrainContext<scalar_type>& ctx) { history_.push_back(evaluate(ctx.theta, ctx.team)); }

  /// The metric at θ, on `team` (a thread count, default OpenMP's, or a hook's ctx.team).
  [[nodiscard]] double evaluate(ConstVectorRef<scalar_type> theta, const ThreadTeam& team = {}) const {
    if constexpr (classifier) {
      if (options_.metric == EvaluationMetric::accuracy) return accuracy(model_, theta, data_, team);
    }
    return mean_loss(model_, theta, data_, team);
  }

  /// The metric measured (never `automatic`).
  [[nodiscard]] EvaluationMetric metric() const noexcept { return options_.metric; }
  /// True for accuracy, false for mean_loss.
  [[nodiscard]] bool higher_is_better() const noexcept { return options_.metric == EvaluationMetric::accuracy; }
  /// "accuracy" or "loss", for logs.
  [[nodiscard]] const char* metric_name() const noexcept { return higher_is_better() ? "accuracy" : "loss"; }
  /// One value per epoch of the last fit(), in order.
  [[nodiscard]] const std::vector<double>& history() const noexcept { return history_; }
  /// The latest value; NaN before the first epoch end.
  [[nodiscard]] double last() const noexcept {
    return history_.empty() ? std::numeric_limits<double>::quiet_NaN() : history_.back();
  }

 private:
  static constexpr bool classifier = Predictor<M> && std::integral<typename M::target_type>;

  const M& model_;
  const D& data_;
  EvaluateOptions options_;
  std::vector<double> history_;
};

}  // namespace dptrain
