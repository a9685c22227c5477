// SPDX-License-Identifier: MIT
// RunPlan: the epochs, steps and minibatches of one fit(), its starting position and sampling order.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/run_length.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/seed.hpp"
#include "dptrain/trainer/trainer_options.hpp"

namespace dptrain {

/// A position in a run: optimizer steps taken since training began, the epoch, its steps taken.
struct RunPosition {
  Index step = 0;
  Index epoch = 0;
  Index epoch_step = 0;
};

/**
 * @brief What one fit() will visit, fixed before its first step: epochs of minibatches of the data
 * set's samples, in a seeded order, accumulation_steps minibatches to an optimizer step, from a
 * starting position (the beginning, or where an earlier run stopped).
 *
 * The order of epoch e depends on (seed, e) only, never on the thread or process count, nor on
 * earlier epochs, so a resumed run and every process of a run draw the same order.
 * Not thread-safe: shuffle() runs on one thread while no worker reads the order.
 */
class RunPlan {
 public:
  /// @throws dptrain::invalid_argument when drop_last leaves no minibatch
  RunPlan(const TrainerOptions& options, Index samples)
      : sampler_{samples,           options.batch_size, options.accumulation_steps,
                 options.drop_last, options.shuffle,    options.seed} {
    check(options, samples);
    const Index n = samples, b = options.batch_size;
    batches_per_epoch_ = options.drop_last ? n / b : (n + b - 1) / b;
    steps_per_epoch_ = (batches_per_epoch_ + options.accumulation_steps - 1) / options.accumulation_steps;
    total_steps_ = options.epochs * steps_per_epoch_;
    if (options.max_steps > 0) total_steps_ = std::min(total_steps_, options.max_steps);
    total_epochs_ = (total_steps_ + steps_per_epoch_ - 1) / steps_per_epoch_;
    order_.resize(static_cast<std::size_t>(sampler_.shuffle ? n : 0));
  }

  /// @throws dptrain::invalid_argument when drop_last leaves no minibatch of `samples`
  static void check(const TrainerOptions& options, Index samples) {
    if (options.drop_last && samples < options.batch_size)
      throw invalid_argument("dptrain::DataParallelTrainer: drop_last with batch_size " +
                             std::to_string(options.batch_size) + " leaves no minibatch of a data set of " +
                             std::to_string(samples) + " samples");
  }

  /// The sampling plan a saved position refers to (TrainingState::plan).
  [[nodiscard]] const SamplerPlan& sampler() const noexcept { return sampler_; }
  [[nodiscard]] RunLength length() const noexcept {
    return {total_steps_, steps_per_epoch_, sampler_.batch_size * sampler_.accumulation_steps};
  }
  [[nodiscard]] Index steps_per_epoch() const noexcept { return steps_per_epoch_; }
  [[nodiscard]] Index total_steps() const noexcept { return total_steps_; }
  [[nodiscard]] Index total_epochs() const noexcept { return total_epochs_; }
  [[nodiscard]] const RunPosition& start() const noexcept { return start_; }
  /// The first step of `epoch` this run takes: 0, or the resumed position's.
  [[nodiscard]] Index first_step(Index epoch) const noexcept { return epoch == start_.epoch ? start_.epoch_step : 0; }

  /**
   * @brief Starts where an earlier run stopped; a position at the end of an epoch is the start of
   * the next.
   * @throws dptrain::invalid_argument if it was saved under another sampling plan or is inconsistent
   */
  void resume_at(const SamplerPlan& saved, const RunPosition& at) {
    const auto text = [](const SamplerPlan& p) {
      return std::to_string(p.samples) + " samples, batch_size " + std::to_string(p.batch_size) +
             ", accumulation_steps " + std::to_string(p.accumulation_steps) + ", drop_last " +
             (p.drop_last ? "on" : "off") + ", shuffle " + (p.shuffle ? "on" : "off") + ", seed " +
             std::to_string(p.seed);
    };
    if (saved != sampler_)
      throw invalid_argument("dptrain::DataParallelTrainer::resume: the state was saved under another sampling plan (" +
                             text(saved) + ") than this run's (" + text(sampler_) + ")");
    if (at.epoch < 0 || at.epoch_step < 0 || at.epoch_step > steps_per_epoch_ ||
        at.step != at.epoch * steps_per_epoch_ + at.epoch_step)
      throw invalid_argument("dptrain::DataParallelTrainer::resume: inconsistent position (step " +
                             std::to_string(at.step) + ", epoch " + std::to_string(at.epoch) + ", epoch_step " +
                             std::to_string(at.epoch_step) + ") for " + std::to_string(steps_per_epoch_) +
                             " steps per epoch");
    const bool epoch_done = at.epoch_step == steps_per_epoch_;
    start_ = {at.step, at.epoch + (epoch_done ? 1 : 0), epoch_done ? 0 : at.epoch_step};
  }

  /// The position after step s of `epoch` (after its last step: the start of the next epoch).
  [[nodiscard]] RunPosition after(Index step, Index epoch, Index s) const noexcept {
    const bool last = s + 1 == steps_per_epoch_;
    return {step, last ? epoch + 1 : epoch, last ? 0 : s + 1};
  }

  /// The minibatches of step s of an epoch: [begin, end) in minibatch numbers.
  [[nodiscard]] IndexRange minibatches(Index s) const noexcept {
    const Index first = s * sampler_.accumulation_steps;
    return {first, std::min(first + sampler_.accumulation_steps, batches_per_epoch_) - first};
  }

  /// Minibatch b's samples, as positions in the epoch's order.
  [[nodiscard]] IndexRange minibatch(Index b) const noexcept {
    const Index begin = b * sampler_.batch_size;
    return {begin, std::min(sampler_.batch_size, sampler_.samples - begin)};
  }

  /// The minibatch sizes that occur: a full one and the last, partial one (0 if there is none).
  [[nodiscard]] std::array<Index, 2> minibatch_sizes() const noexcept {
    return {std::min(sampler_.batch_size, sampler_.samples), sampler_.samples % sampler_.batch_size};
  }

  [[nodiscard]] bool shuffles() const noexcept { return sampler_.shuffle; }

  /// Draws epoch e's order (with shuffling on); call it on one thread before the epoch's steps.
  void shuffle(Index epoch) {
    if (!sampler_.shuffle) return;
    std::iota(order_.begin(), order_.end(), Index{0});
    std::mt19937_64 rng(detail::mix_seed(sampler_.seed, static_cast<std::uint64_t>(epoch)));
    std::shuffle(order_.begin(), order_.end(), rng);
  }

  /// The samples at `positions` of this epoch's order (with shuffling on).
  [[nodiscard]] std::span<const Index> samples(IndexRange positions) const noexcept {
    return {order_.data() + positions.begin, static_cast<std::size_t>(positions.size)};
  }

 private:
  SamplerPlan sampler_;
  Index batches_per_epoch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, total_epochs_ = 0;
  RunPosition start_;
  std::vector<Index> order_;
};

}  // namespace dptrain
