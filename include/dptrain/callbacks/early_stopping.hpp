// SPDX-License-Identifier: MIT
// EarlyStopping: stops when a metric has not improved for `patience` epochs, restores the best θ.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dptrain/callbacks/evaluate.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/// Options of EarlyStopping.
struct EarlyStoppingOptions {
  Index patience = 5;        ///< epochs without improvement before stopping (≥ 1)
  double min_delta = 0;      ///< an improvement must beat the best value by more than this (≥ 0)
  bool restore_best = true;  ///< write the best θ back when stopping and at the end of fit()
};

/**
 * @brief A callback that stops training when a metric has not improved for `patience` epochs
 * and puts back the θ of the best epoch.
 *
 * The metric is read at every epoch end: by default the training loss of the epoch
 * (`ctx.loss`, lower is better); constructed with an Evaluate callback, its latest value
 * (accuracy: higher is better; mean_loss: lower is better). An epoch improves when its value
 * beats the best so far by more than `min_delta`; a NaN never improves. On improvement θ is
 * copied (into a buffer of doubles, so float θ round-trips exactly; allocated at the first
 * improvement only). After `patience` epochs without improvement on_epoch_end writes the best θ
 * back and returns true; on_fit_end writes it back too, so a run that ends at its last epoch
 * also finishes at its best θ. `FitReport` still describes the training that ran (its losses
 * are not those of the restored θ).
 *
 * Every hook runs on the thread that called fit() while the other workers wait, so writing θ
 * is safe. Pass the Evaluate callback to fit() before this one. The Evaluate object must outlive
 * this one. Not thread-safe; read best_epoch() etc. after fit() or from other hooks.
 *
 * @code
 * dptrain::Evaluate evaluate(model, validation);
 * dptrain::EarlyStopping stopping(evaluate, {.patience = 3, .min_delta = 1e-3});
 * trainer.fit(model, theta, train, evaluate, stopping);   // theta: the best epoch's
 * @endcode
 */
class EarlyStopping {
 public:
  /// Monitors the training loss of each epoch (lower is better).
  /// @throws dptrain::invalid_argument for patience < 1 or a negative or non-finite min_delta.
  explicit EarlyStopping(EarlyStoppingOptions options = {}) : options_(options) { validate(); }

  /// Monitors `evaluate`'s latest value (accuracy: higher is better; mean_loss: lower).
  /// @throws as the other constructor.
  template <class M, class D>
  explicit EarlyStopping(const Evaluate<M, D>& evaluate, EarlyStoppingOptions options = {})
      : options_(options), history_(&evaluate.history()), higher_is_better_(evaluate.higher_is_better()) {
    validate();
  }

  /// Forgets the previous fit().
  template <class Scalar>
  void on_fit_begin(TrainContext<Scalar>&) {
    best_value_ =
        higher_is_better_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    best_epoch_ = -1;
    stopped_epoch_ = -1;
    epochs_without_improvement_ = 0;
    has_best_ = false;
  }

  /// Reads the metric; copies θ on improvement; returns true after `patience` epochs without.
  /// @throws dptrain::error if the Evaluate callback has no value for this epoch (passed after this one).
  template <class Scalar>
  bool on_epoch_end(TrainContext<Scalar>& ctx) {
    const double value = metric(ctx);
    const bool improved =
        higher_is_better_ ? value > best_value_ + options_.min_delta : value < best_value_ - options_.min_delta;
    if (improved) {
      best_value_ = value;
      best_epoch_ = ctx.epoch;
      epochs_without_improvement_ = 0;
      best_theta_ = ctx.theta.template cast<double>();  // allocates only the first time
      has_best_ = true;
      return false;
    }
    if (++epochs_without_improvement_ < options_.patience) return false;
    stopped_epoch_ = ctx.epoch;
    restore(ctx);
    return true;
  }

  /// Writes the best θ back (if restore_best and some epoch improved).
  template <class Scalar>
  void on_fit_end(TrainContext<Scalar>& ctx) {
    restore(ctx);
  }

  /// 0-based epoch of the best value; −1 if no epoch improved (e.g. every value was NaN).
  [[nodiscard]] Index best_epoch() const noexcept { return best_epoch_; }
  /// The best value seen (±infinity before any improvement).
  [[nodiscard]] double best_value() const noexcept { return best_value_; }
  /// 0-based epoch at whose end training was stopped; −1 if it was not stopped by this callback.
  [[nodiscard]] Index stopped_epoch() const noexcept { return stopped_epoch_; }
  /// Whether a larger metric is better.
  [[nodiscard]] bool higher_is_better() const noexcept { return higher_is_better_; }
  [[nodiscard]] const EarlyStoppingOptions& options() const noexcept { return options_; }

 private:
  void validate() const {
    if (options_.patience < 1)
      throw invalid_argument("dptrain::EarlyStopping: patience must be at least 1, got " +
                             std::to_string(options_.patience));
    if (!std::isfinite(options_.min_delta) || options_.min_delta < 0)
      throw invalid_argument("dptrain::EarlyStopping: min_delta must be finite and >= 0, got " +
                             std::to_string(options_.min_delta));
  }

  template <class Scalar>
  double metric(const TrainContext<Scalar>& ctx) const {
    if (history_ == nullptr) return ctx.loss;
    if (static_cast<Index>(history_->size()) != ctx.report.epochs)
      throw error("dptrain::EarlyStopping: the Evaluate callback has " + std::to_string(history_->size()) +
                  " values at the end of epoch " + std::to_string(ctx.epoch) +
                  "; pass it to fit() before EarlyStopping");
    return history_->back();
  }

  template <class Scalar>
  void restore(TrainContext<Scalar>& ctx) const {
    if (options_.restore_best && has_best_ && best_theta_.size() == ctx.theta.size())
      ctx.theta = best_theta_.template cast<Scalar>();
  }

  EarlyStoppingOptions options_;
  const std::vector<double>* history_ = nullptr;  // the Evaluate callback's; null: training loss
  bool higher_is_better_ = false;
  double best_value_ = std::numeric_limits<double>::infinity();
  Index best_epoch_ = -1;
  Index stopped_epoch_ = -1;
  Index epochs_without_improvement_ = 0;
  bool has_best_ = false;
  Vector<double> best_theta_;
};

}  // namespace dptrain
