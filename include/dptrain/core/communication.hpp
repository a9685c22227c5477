// SPDX-License-Identifier: MIT
// What crosses the communication seam besides gradients: the step's scalars and the run's signature.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The scalars of one training step that every worker of every process must agree on, so
 * that all of them take the same decision (update, skip a non-finite step, stop, leave on a
 * failure) at the same step.
 *
 * The trainer fills one per thread, sums them over its team in rank order, and hands the
 * process's sum to the Communicator's `all_reduce(StepScalars&)`, which adds the other processes'
 * fields. Every field is a sum; counts are exact in a double up to 2^53, so a communicator may
 * send the struct as seven doubles (`to_array()`).
 */
struct StepScalars {
  double loss = 0;           ///< Σℓ over the step's samples
  double sumsq = 0;          ///< ‖Σ G‖² of the reduced gradient (each process sums its 1/R of θ)
  double samples = 0;        ///< samples whose gradient was computed
  double busy_workers = 0;   ///< workers with at least one sample (Weighting::equal)
  double failures = 0;       ///< workers or hooks that threw since the last step
  double stop_requests = 0;  ///< hooks that returned true since the last step
  double hook_failures = 0;  ///< of `failures`, the hooks' (so that an error names the step they ran after)

  /// Adds another partial sum, field by field.
  constexpr StepScalars& operator+=(const StepScalars& o) noexcept {
    loss += o.loss;
    sumsq += o.sumsq;
    samples += o.samples;
    busy_workers += o.busy_workers;
    failures += o.failures;
    stop_requests += o.stop_requests;
    hook_failures += o.hook_failures;
    return *this;
  }

  /// The fields in declaration order, for a communicator that sends them in one message.
  [[nodiscard]] constexpr std::array<double, 7> to_array() const noexcept {
    return {loss, sumsq, samples, busy_workers, failures, stop_requests, hook_failures};
  }
  [[nodiscard]] static constexpr StepScalars from_array(const std::array<double, 7>& a) noexcept {
    return {a[0], a[1], a[2], a[3], a[4], a[5], a[6]};
  }
  friend constexpr bool operator==(const StepScalars&, const StepScalars&) = default;
};

/// What every worker decided from a step's reduced scalars: the same on every worker.
struct StepOutcome {
  double loss = 0;              ///< the step's mean loss
  double scale = 1;             ///< turns Σ G into the mean gradient g
  Index samples = 0;            ///< samples of the step, over all workers
  bool update = false;          ///< θ is updated (a finite step)
  bool stop_requested = false;  ///< a hook of some process asked to stop
  bool leave = false;           ///< a worker or hook failed, a hook asked to stop, or a non-finite step stops training
  double norm = 0;              ///< ‖g‖ of the step's mean gradient, before clipping
};

/**
 * @brief What every process of a run must have in common, handed to `Communicator::connect` so
 * that a multi-process communicator can compare it across processes before the first step
 * (instead of hanging in a collective later).
 */
struct RunSignature {
  Index parameters = 0;          ///< θ's length
  Index samples = 0;             ///< training samples
  Index batch_size = 0;          ///< the global minibatch
  Index epochs = 0;              ///< passes over the data
  Index max_steps = 0;           ///< step limit (0: none)
  Index accumulation_steps = 1;  ///< minibatches per optimizer step
  std::uint64_t seed = 0;        ///< the shuffle's seed
  Index start_step = 0;          ///< the step a resumed run starts after (0: a new run)
  bool shuffle = true;           ///< TrainerOptions::shuffle
  bool drop_last = false;        ///< TrainerOptions::drop_last (the steps per epoch)
  int weighting = 0;             ///< TrainerOptions::weighting
  int on_non_finite = 0;         ///< TrainerOptions::on_non_finite (who leaves at a non-finite step)
  double clip_norm = 0;          ///< TrainerOptions::clip_norm
  /// The learning rate (the optimizer's lr × the schedule) at the run's first step, halfway and
  /// at its last step: another lr or schedule on one process is refused before the first step.
  std::array<double, 3> learning_rates{};
  /// The optimizer's other settings (momentum, β…): a hash of its name and settings (PolicySetup).
  std::uint64_t optimizer_settings = 0;
  /// The synchronizer's name and settings (Reproducible's shard count…), hashed (PolicySetup).
  std::uint64_t synchronizer = 0;

  /// A checksum of the training data, computed only when a communicator asks for it (a pass over
  /// the data): where every process holds the same data set, another one on one process with as
  /// many rows is refused. Empty for a data set without `checksum()`.
  struct DataChecksum {
    const void* data = nullptr;
    std::uint64_t (*of)(const void*) noexcept = nullptr;

    /// The data set's `checksum()`, computed now (0 when empty).
    [[nodiscard]] std::uint64_t operator()() const noexcept { return of != nullptr ? of(data) : 0; }
  };
  DataChecksum data_checksum{};
  std::string_view model{};      ///< the model's type (compiler-specific name)
  std::string_view optimizer{};  ///< the optimizer's type (compiler-specific name)
  /// This process's checks of the model, data and options failed: it connects only so that the
  /// others throw too (a communicator makes every process throw), then throws its own reason.
  bool refused = false;

  /// One field to compare across processes: its name in an error message, and its value as 64
  /// bits (a type's name hashed), so that a communicator compares them all in one reduction.
  struct Field {
    const char* name;
    std::uint64_t value;
  };

  /// The fields every process must have equal (all but `refused`), in declaration order, with
  /// `samples` called `samples_name` (a sharded run says more, and empties data_checksum): RunAgreement, below,
  /// compares them across processes.
  [[nodiscard]] std::array<Field, 21> fields(const char* samples_name = "data set size") const noexcept {
    const auto value = [](auto v) { return static_cast<std::uint64_t>(v); };
    return {{{"theta's length", value(parameters)},
             {samples_name, value(samples)},
             {"batch_size", value(batch_size)},
             {"epochs", value(epochs)},
             {"max_steps", value(max_steps)},
             {"accumulation_steps", value(accumulation_steps)},
             {"seed", seed},
             {"resumed step", value(start_step)},
             {"shuffle", value(shuffle)},
             {"drop_last", value(drop_last)},
             {"weighting", value(weighting)},
             {"on_non_finite", value(on_non_finite)},
             {"clip_norm", std::bit_cast<std::uint64_t>(clip_norm)},
             {"learning rate at the first step (the optimizer's lr and the schedule)",
              std::bit_cast<std::uint64_t>(learning_rates[0])},
             {"learning rate halfway", std::bit_cast<std::uint64_t>(learning_rates[1])},
             {"learning rate at the last step", std::bit_cast<std::uint64_t>(learning_rates[2])},
             {"optimizer settings", optimizer_settings},
             {"synchronizer or its settings", synchronizer},
             {"training data (a checksum of its values: see docs/distributed.md)", data_checksum()},
             {"model type", hash(model)},
             {"optimizer type", hash(optimizer)}}};
  }

  /// A text's 64-bit FNV-1a hash: how a name or a description becomes a Field's value.
  static constexpr std::uint64_t hash(std::string_view text) noexcept {
    std::uint64_t h = 1469598103934665603ULL;
    for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    return h;
  }
};

/**
 * @brief How a multi-process communicator agrees on a run in connect(), whatever carries its
 * messages: RunSignature's fields, the transport's own (its options), and whether this process
 * refused its run, as 64-bit values. The transport reduces `low()` to their minimum and `high()`
 * to their maximum over the processes, in place (MpiCommunicator: two MPI_Allreduce), and then
 * `check()` throws the same sentence on every process if they differ.
 *
 * @code
 * dptrain::RunAgreement agreement(run, "data set size", {{"MyTransport::compression", level}});
 * // … all-reduce agreement.low() (minimum) and agreement.high() (maximum) …
 * agreement.check("dptrain::MyTransport");
 * @endcode
 */
class RunAgreement {
 public:
  /// @param samples_name what RunSignature::fields calls the data set's size
  RunAgreement(const RunSignature& run, const char* samples_name, std::initializer_list<RunSignature::Field> own) {
    for (const RunSignature::Field& field : run.fields(samples_name)) add(field);
    for (const RunSignature::Field& field : own) add(field);
    add({"refused", run.refused ? 1U : 0U});  // last: check() reads it first
    high_ = low_;
  }

  /// Every process's values, to reduce in place: to their minimum, and to their maximum.
  [[nodiscard]] std::vector<std::uint64_t>& low() noexcept { return low_; }
  [[nodiscard]] std::vector<std::uint64_t>& high() noexcept { return high_; }

  /// Once reduced: throws dptrain::invalid_argument if a process refused its run, or naming the
  /// fields that differ ("`who`: the ranks run different configurations: batch_size differ").
  void check(const std::string& who) const {
    if (high_.back() != 0)  // that process's fit() throws its own reason
      throw invalid_argument(who + ": another rank refused its model, data or options (its fit() throws why)");
    std::string differ;
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (low_[i] != high_[i]) differ += std::string(differ.empty() ? "" : ", ") + names_[i];
    if (!differ.empty())
      throw invalid_argument(who + ": the ranks run different configurations: " + differ + " differ");
  }

 private:
  void add(const RunSignature::Field& field) {
    names_.push_back(field.name);
    low_.push_back(field.value);
  }

  std::vector<const char*> names_;
  std::vector<std::uint64_t> low_, high_;
};

}  // namespace dptrain
