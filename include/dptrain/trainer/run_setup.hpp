// SPDX-License-Identifier: MIT
// How a run describes itself: what every process must share (RunSignature), how it was made
// (RunSetup), and what resume() says when that changed.
#pragma once

#include <cxxabi.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/trainer/trainer_options.hpp"

namespace dptrain::detail {

/// T's name as the source spells it ("dptrain::Adam"), where the compiler can demangle it.
template <class T>
[[nodiscard]] std::string type_name() {
  const char* mangled = typeid(T).name();
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                        std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(mangled);
}

/// A policy's name and settings: its `name` and `settings()` members, where it has them.
template <class Policy>
[[nodiscard]] PolicySetup policy_setup(const Policy& policy) {
  PolicySetup setup;
  if constexpr (requires { std::string(Policy::name); })
    setup.name = std::string(Policy::name);
  else
    setup.name = type_name<Policy>();
  if constexpr (requires { policy.settings(); }) setup.settings = policy.settings();
  return setup;
}

/// The shortest text that reads back as `value`.
[[nodiscard]] inline std::string shortest(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text), value).ptr;
  return {text, end};
}

/// "Momentum{lr 0.05, momentum 0.9}".
[[nodiscard]] inline std::string describe(const PolicySetup& policy) {
  std::string text = policy.name + "{";
  for (std::size_t i = 0; i < policy.settings.size(); ++i)
    text += (i > 0 ? ", " : "") + policy.settings[i].name + " " + shortest(policy.settings[i].value);
  return text + "}";
}

/// "lr 0.05 -> 0.1, nesterov 0 -> 1": the settings that differ, by name.
[[nodiscard]] inline std::string changed_settings(const PolicySetup& saved, const PolicySetup& now) {
  const auto find = [](const PolicySetup& p, const std::string& name) -> const Setting* {
    for (const Setting& s : p.settings)
      if (s.name == name) return &s;
    return nullptr;
  };
  const auto value = [](const Setting* s) { return s != nullptr ? shortest(s->value) : std::string("(none)"); };
  std::string text;
  const auto note = [&](const std::string& name, const Setting* before, const Setting* after) {
    if (before != nullptr && after != nullptr && *before == *after) return;
    text += (text.empty() ? "" : ", ") + name + " " + value(before) + " -> " + value(after);
  };
  for (const Setting& s : saved.settings) note(s.name, &s, find(now, s.name));
  for (const Setting& s : now.settings)
    if (find(saved, s.name) == nullptr) note(s.name, nullptr, &s);
  return text;
}

/// "2 x 3 (ranks x threads)".
[[nodiscard]] inline std::string workers_text(const RunSetup& run) {
  return std::to_string(run.ranks) + " x " + std::to_string(run.threads) + " (ranks x threads)";
}

/**
 * @brief What resume() says about a state saved by the run `saved` and resumed by the run `now`:
 * one sentence per change, for FitReport::notes.
 *
 * @param same_workers TrainerOptions::same_workers_on_resume
 * @throws dptrain::invalid_argument for another optimizer type (its state buffers mean other
 *         things), and under `same_workers` for another worker count whose bits differ, or a
 *         state that does not say how it was made
 */
[[nodiscard]] inline std::vector<std::string> resume_notes(const RunSetup& saved, const RunSetup& now,
                                                           bool same_workers) {
  const std::string who = "dptrain::DataParallelTrainer::resume: ";
  if (!saved.known()) {
    if (same_workers)
      throw invalid_argument(who +
                             "the state does not record the workers that made it (a version-1 checkpoint, or a state "
                             "made by hand), and TrainerOptions::same_workers_on_resume asks for the same ones");
    return {
        "resumed from a state that does not record how it was made (a version-1 checkpoint, or made by hand): "
        "the workers, synchronizer and optimizer settings were not compared"};
  }
  if (saved.optimizer.name != now.optimizer.name)
    throw invalid_argument(who + "the state was saved by a run with the optimizer " + saved.optimizer.name +
                           ", but this trainer's optimizer is " + now.optimizer.name +
                           ": their state buffers mean different things (resume with " + saved.optimizer.name +
                           ", or start a new run)");
  std::vector<std::string> notes;
  if (const std::string changes = changed_settings(saved.optimizer, now.optimizer); !changes.empty())
    notes.push_back("resumed with other optimizer settings: " + changes);
  if (saved.synchronizer != now.synchronizer)
    notes.push_back("resumed with another synchronizer: saved by " + describe(saved.synchronizer) + ", resumed by " +
                    describe(now.synchronizer));
  if (saved.threads != now.threads || saved.ranks != now.ranks) {
    const std::string moved = "saved on " + workers_text(saved) + ", resumed on " + workers_text(now);
    if (saved.shards > 0 && saved.shards == now.shards && saved.synchronizer.name == now.synchronizer.name) {
      notes.push_back(moved + ": the same bits as an uninterrupted run (" + std::to_string(now.shards) +
                      " fixed shards)");
    } else if (same_workers) {
      throw invalid_argument(
          who + moved +
          ": another worker count rounds differently, and TrainerOptions::same_workers_on_resume "
          "asks for the same one (or a synchronizer with fixed shards: Reproducible, BackupWorkers{.chunks})");
    } else {
      notes.push_back(moved + ": theta is rounded differently from an uninterrupted run");
    }
  }
  return notes;
}

/**
 * @brief What every process of a run must share, for Communicator::connect: the options, the
 * optimizer's learning rate (with the schedule, at three steps) and settings, the synchronizer and its settings, the
 * data's size and checksum (computed only if a communicator asks), the model's and optimizer's types.
 *
 * @param parameters θ's length
 * @param start_step the step a resumed run starts after (0: a new run)
 */
template <class M, class O, class S, class Y, class D>
[[nodiscard]] RunSignature run_signature(const TrainerOptions& options, const O& optimizer, const S& schedule,
                                         const Y& synchronizer, Index parameters, const D& data, Index start_step,
                                         Index total_steps) {
  // The rate at three steps stands for the optimizer's lr and the schedule (a schedule that
  // throws here is refused later, after connect: NaN compares unequal to nothing here).
  const auto lr = [&](Index step) {
    try {
      return optimizer.lr * static_cast<double>(schedule.factor(std::max<Index>(step, 1)));
    } catch (...) {
      return std::numeric_limits<double>::quiet_NaN();
    }
  };
  RunSignature::DataChecksum data_checksum;
  if constexpr (requires { data.checksum(); })
    data_checksum = {&data, [](const void* d) noexcept { return static_cast<const D*>(d)->checksum(); }};
  return {.parameters = parameters,
          .samples = data.size(),
          .batch_size = options.batch_size,
          .epochs = options.epochs,
          .max_steps = options.max_steps,
          .accumulation_steps = options.accumulation_steps,
          .seed = options.seed,
          .start_step = start_step,
          .shuffle = options.shuffle,
          .drop_last = options.drop_last,
          .weighting = static_cast<int>(options.weighting),
          .on_non_finite = static_cast<int>(options.on_non_finite),
          .clip_norm = options.clip_norm,
          .learning_rates = {lr(1), lr((total_steps + 1) / 2), lr(total_steps)},
          .optimizer_settings = RunSignature::hash(describe(policy_setup(optimizer))),
          .synchronizer = RunSignature::hash(describe(policy_setup(synchronizer))),
          .data_checksum = data_checksum,
          .model = typeid(M).name(),
          .optimizer = typeid(O).name()};
}

}  // namespace dptrain::detail
