// SPDX-License-Identifier: MIT
// MetricsLog: a callback that writes one row of metrics per epoch, as CSV or JSON lines.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "dptrain/callbacks/evaluate.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/// How MetricsLog writes its rows.
enum class LogFormat {
  csv,         ///< a header line, then one comma-separated row per epoch
  json_lines,  ///< one JSON object per line per epoch (non-finite numbers as null)
};

/// Options of MetricsLog.
struct MetricsLogOptions {
  LogFormat format = LogFormat::csv;
  bool every_rank = false;  ///< several processes (MPI): write on every rank, not only on rank 0
};

/**
 * @brief A callback that writes one row per epoch to a stream: the epoch (1-based), the steps so
 * far, the epoch's mean training loss, the validation metric of an attached Evaluate callback
 * (column `val_accuracy` or `val_loss`), the epoch's samples/s and wall seconds, and the epoch's
 * seconds in each phase of the steps: `compute`, `wait`, `aggregate`, `update`.
 *
 * The phase columns are the **maximum over workers** of each worker's time in that phase during
 * the epoch (FitReport::workers holds cumulative totals; the trainer refreshes them at every
 * epoch end and this callback differences them). The maximum is in wall-clock units, at most
 * the epoch's seconds, and shows the worst worker: with a straggler, `wait` is the time the
 * fastest worker spent waiting for it. CSV writes a header line in on_fit_begin (so one per
 * fit()); JSON lines write one object per epoch with the same keys.
 *
 * In a run of several processes (MPI) only rank 0 writes, unless `every_rank` (then each rank
 * needs a stream of its own); the phase columns are that rank's workers'.
 *
 * Hooks run on the thread that called fit() while the other workers wait; a row costs one
 * formatted write (and a flush). Pass the Evaluate callback to fit() before this one; both it
 * and the stream must outlive the fit() calls. Not thread-safe.
 *
 * @code
 * std::ofstream csv("metrics.csv");
 * dptrain::Evaluate evaluate(model, validation);
 * dptrain::MetricsLog log(csv, evaluate);
 * trainer.fit(model, theta, train, evaluate, log);
 * // epoch,steps,loss,val_accuracy,samples_per_second,seconds,compute,wait,aggregate,update
 * @endcode
 */
class MetricsLog {
 public:
  using clock = std::chrono::steady_clock;

  /// Logs training metrics only.
  explicit MetricsLog(std::ostream& out, MetricsLogOptions options = {}) : out_(&out), options_(options) {}

  /// Logs training metrics and `evaluate`'s value of each epoch.
  template <class M, class D>
  MetricsLog(std::ostream& out, const Evaluate<M, D>& evaluate, MetricsLogOptions options = {})
      : out_(&out),
        options_(options),
        validation_(&evaluate.history()),
        validation_key_(evaluate.higher_is_better() ? "val_accuracy" : "val_loss") {}

  /// The column names, in order.
  [[nodiscard]] std::vector<std::string> columns() const {
    std::vector<std::string> names{"epoch", "steps", "loss"};
    if (validation_ != nullptr) names.emplace_back(validation_key_);
    for (const char* name : {"samples_per_second", "seconds", "compute", "wait", "aggregate", "update"})
      names.emplace_back(name);
    return names;
  }

  /// Writes the CSV header; resets the per-epoch differences.
  template <class Scalar>
  void on_fit_begin(TrainContext<Scalar>& ctx) {
    silent_ = ctx.rank != 0 && !options_.every_rank;
    if (silent_) return;
    previous_.assign(ctx.report.workers.size(), WorkerReport{});
    if (options_.format == LogFormat::csv) {
      const std::vector<std::string> names = columns();
      for (std::size_t i = 0; i < names.size(); ++i) *out_ << (i > 0 ? "," : "") << names[i];
      *out_ << '\n';
    }
  }

  template <class Scalar>
  void on_epoch_begin(TrainContext<Scalar>& ctx) {
    if (silent_) return;
    epoch_start_ = clock::now();
    epoch_samples_ = ctx.report.samples;
  }

  /// Writes the epoch's row.
  /// @throws dptrain::error if the Evaluate callback has no value for this epoch (passed after this one).
  template <class Scalar>
  void on_epoch_end(TrainContext<Scalar>& ctx) {
    if (silent_) return;
    const double seconds = std::chrono::duration<double>(clock::now() - epoch_start_).count();
    const double throughput = seconds > 0 ? static_cast<double>(ctx.report.samples - epoch_samples_) / seconds : 0.0;
    WorkerReport worst;
    const std::size_t workers = std::min(previous_.size(), ctx.report.workers.size());
    for (std::size_t r = 0; r < workers; ++r) {
      const WorkerReport& now = ctx.report.workers[r];
      WorkerReport& before = previous_[r];
      worst.compute = std::max(worst.compute, now.compute - before.compute);
      worst.wait = std::max(worst.wait, now.wait - before.wait);
      worst.aggregate = std::max(worst.aggregate, now.aggregate - before.aggregate);
      worst.update = std::max(worst.update, now.update - before.update);
      before = now;
    }
    if (validation_ != nullptr && static_cast<Index>(validation_->size()) != ctx.report.epochs)
      throw error("dptrain::MetricsLog: the Evaluate callback has " + std::to_string(validation_->size()) +
                  " values at the end of epoch " + std::to_string(ctx.epoch) + "; pass it to fit() before MetricsLog");

    const bool json = options_.format == LogFormat::json_lines;
    char text[1024];
    std::size_t used = 0;
    const auto field = [&](const char* key, double value, bool integer) {
      char number[64];
      if (integer)
        std::snprintf(number, sizeof number, "%.0f", value);
      else if (!std::isfinite(value) && json)
        std::snprintf(number, sizeof number, "null");
      else
        std::snprintf(number, sizeof number, "%.9g", value);
      const char* separator = used == (json ? 1 : 0) ? "" : ",";
      const int n = json ? std::snprintf(text + used, sizeof text - used, "%s\"%s\":%s", separator, key, number)
                         : std::snprintf(text + used, sizeof text - used, "%s%s", separator, number);
      if (n > 0) used = std::min(sizeof text - 1, used + static_cast<std::size_t>(n));
    };
    if (json) text[used++] = '{';
    text[used] = '\0';
    field("epoch", static_cast<double>(ctx.epoch + 1), true);
    field("steps", static_cast<double>(ctx.step), true);
    field("loss", ctx.loss, false);
    if (validation_ != nullptr) field(validation_key_, validation_->back(), false);
    field("samples_per_second", throughput, false);
    field("seconds", seconds, false);
    field("compute", worst.compute, false);
    field("wait", worst.wait, false);
    field("aggregate", worst.aggregate, false);
    field("update", worst.update, false);
    out_->write(text, static_cast<std::streamsize>(used));
    if (json) out_->put('}');
    out_->put('\n');
    out_->flush();
  }

 private:
  std::ostream* out_;
  MetricsLogOptions options_;
  const std::vector<double>* validation_ = nullptr;  // the Evaluate callback's history
  const char* validation_key_ = "";
  std::vector<WorkerReport> previous_;
  clock::time_point epoch_start_ = clock::now();
  Index epoch_samples_ = 0;
  bool silent_ = false;  // another rank than 0 writes nothing unless every_rank
};

}  // namespace dptrain
