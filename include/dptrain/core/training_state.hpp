// SPDX-License-Identifier: MIT
// TrainingState: everything besides θ that fit() needs to go on exactly where it stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The sampling plan a training position refers to: the same plan visits the same samples
 * in the same order at the same step. A run can resume only under the plan it was saved with.
 */
struct SamplerPlan {
  Index samples = 0;             ///< size of the training set
  Index batch_size = 0;          ///< minibatch size
  Index accumulation_steps = 1;  ///< minibatches per optimizer step
  bool drop_last = false;        ///< whether a partial last minibatch is skipped
  bool shuffle = false;          ///< whether each epoch visits a seeded permutation
  std::uint64_t seed = 0;        ///< the permutation's seed: epoch e's order depends on (seed, e) only

  friend bool operator==(const SamplerPlan&, const SamplerPlan&) = default;
};

/// One named setting of a policy ("lr", 0.01); a flag is 0 or 1.
struct Setting {
  std::string name;
  double value = 0;

  friend bool operator==(const Setting&, const Setting&) = default;
};

/**
 * @brief A policy as a run records it: its name ("Adam") and its settings. A policy names itself
 * with a `name` member and lists its settings with `settings()` (every built-in optimizer and
 * synchronizer does); one without them is recorded by its C++ type's name, with no settings.
 */
struct PolicySetup {
  std::string name;
  std::vector<Setting> settings;

  friend bool operator==(const PolicySetup&, const PolicySetup&) = default;
};

/**
 * @brief How the run that reached a TrainingState was made: the workers, the synchronizer and the
 * optimizer. A checkpoint records it (format version 2), so that resume() can refuse another
 * optimizer type and report every other change (docs/checkpoints.md, "Resuming elsewhere").
 * `threads == 0`: unknown (a version-1 checkpoint, or a state made by hand).
 */
struct RunSetup {
  Index threads = 0;  ///< threads per process
  Index ranks = 0;    ///< processes (MPI ranks)
  /// The synchronizer's fixed shard count, where θ's bits do not depend on the worker count
  /// (BackupWorkers with a fixed `chunks`); 0 where they do.
  Index shards = 0;
  PolicySetup synchronizer;
  PolicySetup optimizer;

  [[nodiscard]] bool known() const noexcept { return threads > 0; }

  friend bool operator==(const RunSetup&, const RunSetup&) = default;
};

/**
 * @brief Where training stands, besides θ: the position in the sampling plan, the schedule's
 * step and the optimizer's state. The trainer keeps one during fit() (hooks read it as
 * `ctx.state`), save_checkpoint() writes it, load_checkpoint() reads it back and
 * DataParallelTrainer::resume() continues from it.
 *
 * There is no other random state to keep: the shuffle of epoch e is a function of (seed, e), so
 * `plan.seed` and `epoch` restore the sampler.
 */
template <class Scalar>
struct TrainingState {
  Index step = 0;        ///< optimizer steps taken: the schedule's position, Adam's t
  Index epoch = 0;       ///< the epoch in progress, 0-based
  Index epoch_step = 0;  ///< steps of that epoch taken: the sampler's position in its order
  SamplerPlan plan;      ///< what epoch and epoch_step refer to
  /// The optimizer's state, Optimizer::state_slots buffers of θ's length (momentum, Adam's moments).
  std::vector<AlignedBuffer<Scalar>> optimizer_state;
  /// The run that reached this state (filled by the trainer at the start of fit() and resume()).
  RunSetup made_by;
};

}  // namespace dptrain
