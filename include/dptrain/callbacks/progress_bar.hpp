// SPDX-License-Identifier: MIT
// ProgressBar: a callback that shows training progress on a stream, live on a terminal.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>

#include "dptrain/core/context.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/terminal.hpp"

namespace dptrain {

/// Options of ProgressBar.
struct ProgressBarOptions {
  /// Live bar redrawn with '\r' (true) or plain lines (false); unset: live when the stream is
  /// std::cout / std::cerr / std::clog and that file descriptor is a terminal.
  std::optional<bool> interactive;
  Index every_steps = 0;         ///< plain lines: also one every this many steps; 0: one line per epoch
  Index width = 30;              ///< characters of the bar
  double refresh_seconds = 0.1;  ///< live bar: redraw at most this often (and at every epoch end)
  Index steps_per_epoch = 0;     ///< 0: the trainer's plan (TrainContext::steps_per_epoch)
  Index epochs = 0;              ///< 0: the trainer's plan (TrainContext::total_epochs)
  bool every_rank = false;       ///< several processes (MPI): print on every rank, not only on rank 0
};

/**
 * @brief A callback that prints training progress: epoch e/E, a bar, the step within the epoch,
 * the running mean loss of the epoch, samples/s and the estimated time left.
 *
 * On a terminal the line is redrawn in place with '\r' (at most every refresh_seconds, and at
 * each epoch end, which ends the line). Otherwise (a file, a pipe, a std::ostringstream) it
 * writes one compact line per epoch ("epoch 2/10 done: loss 0.39, 217208 samples/s, 0.253 s"),
 * and with `every_steps` also one every that many steps. The library
 * writes nothing anywhere unless you construct this callback; it writes only to the stream it
 * was given, and does not change the stream's formatting flags. In a run of several processes
 * (MPI) it prints on rank 0 only, unless `every_rank`: the loss and samples it shows are the
 * global step's.
 *
 * Hooks run on the thread that called fit() while the other workers wait. It declares
 * on_step_end, which costs the trainer one barrier per step, plus the formatting of a line on
 * the steps it prints. Not thread-safe: use one ProgressBar per concurrent fit().
 *
 * @code
 * dptrain::ProgressBar progress;                                  // std::cout
 * trainer.fit(model, theta, data, progress);
 * std::ofstream log("train.log");
 * dptrain::ProgressBar to_file(log);                             // a line per epoch
 * dptrain::ProgressBar detailed(log, {.every_steps = 100});       // and one every 100 steps
 * @endcode
 */
class ProgressBar {
 public:
  using clock = std::chrono::steady_clock;

  /// Writes to `out`, which must outlive the fit() calls.
  explicit ProgressBar(std::ostream& out = std::cout, ProgressBarOptions options = {})
      : out_(&out), options_(options), interactive_(options.interactive.value_or(detail::is_terminal(out))) {}

  /// Writes to std::cout.
  explicit ProgressBar(ProgressBarOptions options) : ProgressBar(std::cout, options) {}

  /// Whether the bar is redrawn in place.
  [[nodiscard]] bool interactive() const noexcept { return interactive_; }

  template <class Scalar>
  void on_fit_begin(TrainContext<Scalar>& ctx) {
    silent_ = ctx.rank != 0 && !options_.every_rank;
    fit_start_ = clock::now();
    first_step_ = ctx.step;
    steps_per_epoch_ = options_.steps_per_epoch > 0 ? options_.steps_per_epoch : ctx.steps_per_epoch;
    epochs_ = options_.epochs > 0 ? options_.epochs : ctx.total_epochs;
    total_steps_ = options_.steps_per_epoch > 0 || options_.epochs > 0 || ctx.total_steps == 0
                       ? steps_per_epoch_ * epochs_
                       : ctx.total_steps;
    every_ = std::max<Index>(options_.every_steps, 0);
    line_open_ = false;
  }

  template <class Scalar>
  void on_epoch_begin(TrainContext<Scalar>& ctx) {
    if (silent_) return;
    epoch_start_ = clock::now();
    last_draw_ = epoch_start_;
    epoch_ = ctx.epoch;
    epoch_first_step_ = ctx.step;
    epoch_first_samples_ = ctx.report.samples;
    last_samples_ = ctx.report.samples;
    loss_sum_ = 0;
    loss_samples_ = 0;
  }

  template <class Scalar>
  void on_step_end(TrainContext<Scalar>& ctx) {
    if (silent_) return;
    const Index samples = ctx.report.samples - last_samples_;
    last_samples_ = ctx.report.samples;
    if (std::isfinite(ctx.loss)) {
      loss_sum_ += ctx.loss * static_cast<double>(samples);
      loss_samples_ += samples;
    }
    const Index in_epoch = ctx.step - epoch_first_step_;
    const clock::time_point now = clock::now();
    if (interactive_) {
      if (seconds(last_draw_, now) < options_.refresh_seconds) return;
      last_draw_ = now;
      draw(ctx, in_epoch, running_loss(), now);
    } else if (every_ > 0 && in_epoch % every_ == 0) {
      line(ctx, in_epoch, running_loss(), now, false);
    }
  }

  template <class Scalar>
  void on_epoch_end(TrainContext<Scalar>& ctx) {
    if (silent_) return;
    const clock::time_point now = clock::now();
    const Index in_epoch = ctx.step - epoch_first_step_;
    if (interactive_) {
      draw(ctx, in_epoch, ctx.loss, now);
      out_->put('\n');
      line_open_ = false;
    } else {
      line(ctx, in_epoch, ctx.loss, now, true);
    }
    out_->flush();
  }

  template <class Scalar>
  void on_fit_end(TrainContext<Scalar>&) {
    if (silent_) return;
    if (line_open_) out_->put('\n');  // a hook stopped training mid-epoch
    line_open_ = false;
    out_->flush();
  }

 private:
  static double seconds(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }

  [[nodiscard]] double running_loss() const {
    return loss_samples_ > 0 ? loss_sum_ / static_cast<double>(loss_samples_) : 0.0;
  }

  // "epoch 2/10" (E is "?" when unknown).
  void epoch_text(char (&buffer)[64]) const {
    if (epochs_ > 0)
      std::snprintf(buffer, sizeof buffer, "epoch %lld/%lld", static_cast<long long>(epoch_ + 1),
                    static_cast<long long>(epochs_));
    else
      std::snprintf(buffer, sizeof buffer, "epoch %lld/?", static_cast<long long>(epoch_ + 1));
  }

  template <class Scalar>
  double samples_per_second(const TrainContext<Scalar>& ctx, clock::time_point now) const {
    const double s = seconds(epoch_start_, now);
    return s > 0 ? static_cast<double>(ctx.report.samples - epoch_first_samples_) / s : 0.0;
  }

  template <class Scalar>
  double eta(const TrainContext<Scalar>& ctx, clock::time_point now) const {
    const Index done = ctx.step - first_step_;
    if (done <= 0 || total_steps_ <= 0) return -1;
    return seconds(fit_start_, now) / static_cast<double>(done) *
           static_cast<double>(std::max<Index>(0, total_steps_ - ctx.step));
  }

  template <class Scalar>
  void draw(const TrainContext<Scalar>& ctx, Index in_epoch, double loss, clock::time_point now) {
    char epoch[64], left[32], bar[256];
    epoch_text(epoch);
    detail::format_duration(left, eta(ctx, now));
    const Index width = std::clamp<Index>(options_.width, 1, 200);
    const double fraction =
        steps_per_epoch_ > 0
            ? std::clamp(static_cast<double>(in_epoch) / static_cast<double>(steps_per_epoch_), 0.0, 1.0)
            : 0.0;
    const auto filled = static_cast<Index>(fraction * static_cast<double>(width));
    for (Index i = 0; i < width; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
    bar[width] = '\0';
    char text[512];
    const int n = std::snprintf(text, sizeof text, "\r%s [%s] %lld/%lld loss %.6g %.0f samples/s ETA %s   ", epoch, bar,
                                static_cast<long long>(in_epoch), static_cast<long long>(steps_per_epoch_), loss,
                                samples_per_second(ctx, now), left);
    write(text, n);
    out_->flush();
    line_open_ = true;
  }

  template <class Scalar>
  void line(const TrainContext<Scalar>& ctx, Index in_epoch, double loss, clock::time_point now, bool end) {
    char epoch[64], text[256];
    epoch_text(epoch);
    int n = 0;
    if (end) {
      n = std::snprintf(text, sizeof text, "%s done: loss %.6g, %.0f samples/s, %.3g s\n", epoch, loss,
                        samples_per_second(ctx, now), seconds(epoch_start_, now));
    } else {
      char left[32];
      detail::format_duration(left, eta(ctx, now));
      n = std::snprintf(text, sizeof text, "%s step %lld/%lld loss %.6g %.0f samples/s ETA %s\n", epoch,
                        static_cast<long long>(in_epoch), static_cast<long long>(steps_per_epoch_), loss,
                        samples_per_second(ctx, now), left);
    }
    write(text, n);
  }

  // snprintf returns the untruncated length: write at most what the buffer holds.
  template <std::size_t N>
  void write(const char (&text)[N], int n) {
    if (n > 0) out_->write(text, std::min<std::streamsize>(n, static_cast<std::streamsize>(N - 1)));
  }

  std::ostream* out_;
  ProgressBarOptions options_;
  bool interactive_;
  bool line_open_ = false;
  bool silent_ = false;  // another rank than 0 prints nothing unless every_rank
  clock::time_point fit_start_ = clock::now(), epoch_start_ = fit_start_, last_draw_ = fit_start_;
  Index first_step_ = 0, steps_per_epoch_ = 0, epochs_ = 0, total_steps_ = 0, every_ = 0;
  Index epoch_ = 0, epoch_first_step_ = 0, epoch_first_samples_ = 0, last_samples_ = 0, loss_samples_ = 0;
  double loss_sum_ = 0;
};

}  // namespace dptrain
