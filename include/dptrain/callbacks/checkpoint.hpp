// SPDX-License-Identifier: MIT
// Checkpoint: a callback that saves θ and the training state every N steps or epochs and at the end.
#pragma once

#include <string>
#include <utility>

#include "dptrain/concepts.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/io/checkpoint.hpp"

namespace dptrain {

/// When Checkpoint saves.
struct CheckpointOptions {
  Index every_steps = 0;    ///< after every this many optimizer steps (0: not by steps)
  Index every_epochs = 1;   ///< after every this many epochs (0: not by epochs)
  bool at_end = true;       ///< when fit() returns normally
  bool every_rank = false;  ///< several processes (MPI): every rank writes `path`, not only rank 0
};

/**
 * @brief A callback that writes a checkpoint (save_checkpoint) to one file, overwriting it
 * atomically each time: after a crash the file holds the last complete save.
 *
 * Resume with load_checkpoint and DataParallelTrainer::resume. A position is saved once even
 * when a step save and an epoch save fall on the same step. Saving runs on the hook's thread while
 * the workers wait: one pass over θ and the optimizer state, plus an fsync. Having an on_step_end
 * hook costs the trainer one barrier per step even with every_steps = 0.
 *
 * In a run of several processes (MPI) rank 0 writes, unless `every_rank` (for ranks without a
 * shared file system; give each its own path). Every rank then resumes from that file: θ comes
 * from rank 0's broadcast, each rank's optimizer state from the file it loaded, and the ranks
 * check that they resume at the same step (docs/distributed.md).
 *
 * @tparam M the Model being trained (held by reference: it must outlive the fit() calls)
 *
 * @code
 * dptrain::Checkpoint checkpoint(model, "run.ckpt", {.every_steps = 500});
 * trainer.fit(model, theta, data, checkpoint);
 * // later, in a new process:
 * auto state = dptrain::load_checkpoint("run.ckpt", model, theta);
 * trainer.resume(model, theta, data, state);
 * @endcode
 */
template <class M>
class Checkpoint {
  static_assert(Model<M>, "dptrain: Checkpoint needs a Model");

 public:
  using scalar_type = typename M::scalar_type;

  /// @throws dptrain::invalid_argument for an empty path or negative intervals
  Checkpoint(const M& model, std::string path, CheckpointOptions options = {})
      : model_(model), path_(std::move(path)), options_(options) {
    if (path_.empty()) throw invalid_argument("dptrain::Checkpoint: the path is empty");
    if (options_.every_steps < 0)
      throw invalid_argument("dptrain::Checkpoint: every_steps must be >= 0 (0: off), got " +
                             std::to_string(options_.every_steps));
    if (options_.every_epochs < 0)
      throw invalid_argument("dptrain::Checkpoint: every_epochs must be >= 0 (0: off), got " +
                             std::to_string(options_.every_epochs));
  }

  void on_fit_begin(TrainContext<scalar_type>&) { last_step_ = -1; }
  void on_step_end(TrainContext<scalar_type>& ctx) {
    if (options_.every_steps > 0 && ctx.step % options_.every_steps == 0) save(ctx);
  }
  void on_epoch_end(TrainContext<scalar_type>& ctx) {
    if (options_.every_epochs > 0 && (ctx.epoch + 1) % options_.every_epochs == 0) save(ctx);
  }
  void on_fit_end(TrainContext<scalar_type>& ctx) {
    if (options_.at_end) save(ctx);
  }

  /// The file written.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Checkpoints written since this object was made.
  [[nodiscard]] Index saves() const noexcept { return saves_; }

 private:
  void save(const TrainContext<scalar_type>& ctx) {
    if (ctx.step == last_step_) return;  // the same position: a step save and an epoch save
    if (ctx.rank != 0 && !options_.every_rank) return;
    save_checkpoint(path_, model_, ctx.theta, ctx.state);
    last_step_ = ctx.step;
    ++saves_;
  }

  const M& model_;
  std::string path_;
  CheckpointOptions options_;
  Index last_step_ = -1, saves_ = 0;
};

}  // namespace dptrain
