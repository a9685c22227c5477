// SPDX-License-Identifier: MIT
// TimeLimit: a callback that stops training after a wall-clock duration.
#pragma once

#include <chrono>

#include "dptrain/core/context.hpp"

namespace dptrain {

/**
 * @brief A callback that stops training once `limit` of wall-clock time (std::chrono::steady_clock)
 * has passed since on_fit_begin.
 *
 * The clock is checked after every optimizer step (on_step_end, so training stops within one
 * step of the limit; declaring on_step_end costs the trainer one barrier per step) and at every
 * epoch end. Hooks run on the thread that called fit() while the other workers wait. Not
 * thread-safe.
 *
 * @code
 * using namespace std::chrono_literals;
 * dptrain::TimeLimit limit(90s);
 * dptrain::FitReport report = trainer.fit(model, theta, data, limit);
 * if (limit.reached()) ...
 * @endcode
 */
class TimeLimit {
 public:
  using clock = std::chrono::steady_clock;

  /// @param limit the wall-clock budget of each fit(); zero or negative stops after the first step.
  template <class Rep, class Period>
  explicit TimeLimit(std::chrono::duration<Rep, Period> limit)
      : limit_(std::chrono::duration_cast<clock::duration>(limit)) {}

  /// Starts the clock.
  template <class Scalar>
  void on_fit_begin(TrainContext<Scalar>&) {
    start_ = clock::now();
    reached_ = false;
  }

  /// True (stop) once the limit has passed.
  template <class Scalar>
  bool on_step_end(TrainContext<Scalar>&) {
    return check();
  }

  /// True (stop) once the limit has passed.
  template <class Scalar>
  bool on_epoch_end(TrainContext<Scalar>&) {
    return check();
  }

  /// Whether the last fit() was stopped by this limit.
  [[nodiscard]] bool reached() const noexcept { return reached_; }
  /// The budget.
  [[nodiscard]] clock::duration limit() const noexcept { return limit_; }
  /// Time since the last on_fit_begin.
  [[nodiscard]] clock::duration elapsed() const { return clock::now() - start_; }

 private:
  bool check() {
    reached_ = reached_ || clock::now() - start_ >= limit_;
    return reached_;
  }

  clock::duration limit_;
  clock::time_point start_ = clock::now();
  bool reached_ = false;
};

}  // namespace dptrain
