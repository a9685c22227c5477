// SPDX-License-Identifier: MIT
// LinearScalingSchedule: the linear scaling rule as a schedule, the batch taken from the run.
#pragma once

#include "dptrain/concepts.hpp"
#include "dptrain/core/run_length.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/optimizer_support.hpp"
#include "dptrain/optimizers/constant_schedule.hpp"

namespace dptrain {

/**
 * @brief The linear scaling rule (see linear_scaling()) as a schedule: the optimizer's lr is the
 * rate tuned for `base_batch` samples, and each step multiplies it by batch / base_batch, with
 * `batch` the minibatch of the run it is used in (batch_size × accumulation_steps; fit() fills
 * it in), times another schedule's factor.
 *
 * @f[ \mathrm{factor}(t) = \frac{\mathrm{batch}}{\mathrm{base\_batch}}\cdot\mathrm{after.factor}(t) @f]
 *
 * Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour" (arXiv:1706.02677,
 * §2.1), meant to be wrapped in a warm-up (§2.2). Until fit() gives it a batch (batch = 0) the
 * factor is the inner schedule's alone.
 *
 * @tparam Inner the schedule multiplied in (ConstantSchedule)
 *
 * @code
 * // 0.1 was tuned at batch 256; whatever batch the run has, scale to it, warm up over 5 epochs
 * // and decay along a cosine over the rest of the run: no step count or batch computed by hand.
 * dptrain::DataParallelTrainer trainer({.batch_size = 1024, .epochs = 90}, dptrain::Sgd{.lr = 0.1},
 *     dptrain::WarmupSchedule<dptrain::LinearScalingSchedule<dptrain::CosineSchedule>>{
 *         .warmup_epochs = 5, .after = {.base_batch = 256}});
 * @endcode
 */
template <class Inner = ConstantSchedule>
struct LinearScalingSchedule {
  static_assert(Schedule<Inner>,
                "dptrain: LinearScalingSchedule's Inner must be a Schedule: a copyable type with "
                "double factor(dptrain::Index step) const");

  Index base_batch = 0;  ///< the minibatch the optimizer's lr was tuned for, > 0
  Index batch = 0;       ///< the minibatch trained with (0: the run's)
  Inner after = {};      ///< the schedule the scaling multiplies

  /// @return batch/base_batch · after.factor(step) (after.factor(step) before fit() sets batch).
  [[nodiscard]] double factor(Index step) const noexcept(noexcept(after.factor(step))) {
    const double inner = after.factor(step);
    if (batch == 0 || base_batch <= 0) return inner;
    return inner * static_cast<double>(batch) / static_cast<double>(base_batch);
  }

  /// The schedule a fit() of `run`'s length uses: batch from the run, the inner one's lengths.
  [[nodiscard]] LinearScalingSchedule for_run(const RunLength& run) const {
    LinearScalingSchedule fitted = *this;
    if (fitted.batch == 0) fitted.batch = run.batch;
    if constexpr (FitsRun<Inner>) fitted.after = after.for_run(run);
    return fitted;
  }

  /// @throws dptrain::invalid_argument if base_batch ≤ 0 or batch < 0, or whatever after.validate() throws.
  void validate() const {
    if (base_batch <= 0)
      detail::throw_bad_hyperparameter("dptrain::LinearScalingSchedule", "base_batch", "be > 0", base_batch);
    if (batch < 0)
      detail::throw_bad_hyperparameter("dptrain::LinearScalingSchedule", "batch", "be >= 0 (0: the run's)", batch);
    if constexpr (requires { after.validate(); }) after.validate();
  }
};

}  // namespace dptrain
