// SPDX-License-Identifier: MIT
// RunRecord: what thread 0 records of a fit() (report, position, epoch loss) and shows the callbacks.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "dptrain/core/context.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/thread_team.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/detail/callback_hooks.hpp"
#include "dptrain/trainer/run_plan.hpp"

namespace dptrain {

/**
 * @brief The record of one fit() — its FitReport, where training stands (ctx.state), the running
 * epoch loss — and the callbacks it is shown to, through a TrainContext.
 *
 * Written only by the thread that runs hooks (the caller of fit(), team thread 0), between the
 * barriers that keep the other workers away, or, where a Synchronizer's loop records each step
 * on the thread that ends it, by that thread before the next step starts; it holds no lock.
 */
template <class Scalar, class... Callbacks>
class RunRecord {
 public:
  using Context = TrainContext<Scalar>;
  static constexpr bool has_step_hooks = detail::has_hook<decltype(detail::on_step_end), Context, Callbacks...>;
  static constexpr bool has_epoch_end_hooks = detail::has_hook<decltype(detail::on_epoch_end), Context, Callbacks...>;

  /// `rank` and `ranks`: this process's rank and the run's processes (ctx.rank, ctx.ranks).
  RunRecord(const RunPlan& plan, VectorRef<Scalar> theta, TrainingState<Scalar>& state, Index threads, Index rank,
            Index ranks, Callbacks&... callbacks)
      : plan_(plan), theta_(theta), state_(state), rank_(rank), ranks_(ranks), callbacks_(callbacks...) {
    report_.threads = threads;
    report_.epoch_loss.reserve(static_cast<std::size_t>(plan_.total_epochs()));
    report_.workers.resize(static_cast<std::size_t>(threads));
  }

  [[nodiscard]] FitReport& report() noexcept { return report_; }

  /// Calls `hook` on every callback that has it, with a context of `team` and θ (`theta`, or the
  /// trainer's θ if null); true if one asks to stop.
  template <class Hook>
  bool call(const Hook& hook, Index epoch, Index step, double loss, ThreadTeam team, Scalar* theta = nullptr) {
    Context ctx{VectorMap<Scalar>(theta != nullptr ? theta : theta_.data(), theta_.size()),
                report_,
                epoch,
                step,
                loss,
                last_lr_,
                plan_.steps_per_epoch(),
                plan_.total_steps(),
                plan_.total_epochs(),
                team,
                state_,
                rank_,
                ranks_};
    const bool stop = std::apply([&](auto&... cb) { return detail::call_hook(hook, ctx, cb...); }, callbacks_);
    report_.stopped_by_callback = report_.stopped_by_callback || stop;
    return stop;
  }

  /// The start of an epoch (after its shuffle): the running loss starts again.
  bool begin_epoch(Index epoch, ThreadTeam team) {
    epoch_loss_ = 0;
    epoch_samples_ = 0;
    return call(detail::on_epoch_begin, epoch, state_.step, 0, team);
  }

  /// After step s of `epoch` (the run's `step`-th) with its mean loss over `samples` samples.
  void end_step(Index epoch, Index s, Index step, double loss, Index samples, bool updated, double lr) {
    const RunPosition at = plan_.after(step, epoch, s);
    state_.step = at.step;
    state_.epoch = at.epoch;
    state_.epoch_step = at.epoch_step;
    ++report_.steps;
    report_.samples += samples;
    last_lr_ = lr;
    if (updated) {
      report_.final_loss = loss;
      epoch_loss_ += loss * static_cast<double>(samples);
      epoch_samples_ += samples;
    } else {
      ++report_.skipped_steps;
    }
  }

  /// At the end of an epoch (complete, or cut short by max_steps), with every worker's report so far.
  template <class WorkerReports>
  bool end_epoch(Index epoch, ThreadTeam team, const WorkerReports& workers) {
    const double loss = epoch_loss_ / static_cast<double>(std::max<Index>(epoch_samples_, 1));
    report_.epoch_loss.push_back(loss);
    ++report_.epochs;
    if constexpr (has_epoch_end_hooks)
      for (std::size_t rank = 0; rank < report_.workers.size(); ++rank)
        report_.workers[rank] = workers(static_cast<Index>(rank));
    return call(detail::on_epoch_end, epoch, state_.step, loss, team);
  }

  /// The last epoch's mean loss (0 before the first epoch ends).
  [[nodiscard]] double last_epoch_loss() const noexcept {
    return report_.epoch_loss.empty() ? 0 : report_.epoch_loss.back();
  }

 private:
  const RunPlan& plan_;
  VectorRef<Scalar> theta_;
  TrainingState<Scalar>& state_;
  Index rank_ = 0, ranks_ = 1;
  std::tuple<Callbacks&...> callbacks_;
  FitReport report_;
  double last_lr_ = 0, epoch_loss_ = 0;
  Index epoch_samples_ = 0;
};

}  // namespace dptrain
