// SPDX-License-Identifier: MIT
// What an optimizer sees of one step: its thread's slice of θ, gradient and state.
#pragma once

#include <array>
#include <span>

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The part of θ, of the averaged gradient and of the optimizer state that one thread
 * updates. All members have the same length; slots are the optimizer's state vectors
 * (e.g. Adam's first and second moments), zero at the first step.
 *
 * `biases` are the parts of the slice that the model declares as biases (DeclaresBiases), as
 * offsets from the slice's start, in increasing order and disjoint; an optimizer whose
 * `decay_biases` is false applies no weight decay to them. Empty when the model declares none
 * or none falls in this slice. The trainer prepares them once per fit(), so a step allocates nothing.
 */
template <class Scalar, int Slots>
struct UpdateSlice {
  VectorMap<Scalar> theta;
  ConstVectorMap<Scalar> grad;
  std::array<VectorMap<Scalar>, static_cast<std::size_t>(Slots)> state;
  std::span<const IndexRange> biases = {};  ///< the slice's bias ranges, relative to its start
};

/// Per-step values that every thread's update uses.
struct StepInfo {
  Index step = 1;           ///< 1-based count of optimizer steps, including this one (Adam's bias correction)
  double lr = 0.0;          ///< learning rate for this step: the optimizer's lr times the schedule's factor
  Index samples = 0;        ///< the samples whose gradients the step's g averages, over every process (|B|)
  Index epoch_samples = 0;  ///< the samples of an epoch, over every process (n: Sag's and Saga's |B|/n)
  /// For an optimizer that SumsOverGroups, in update(): the totals of the slice's parameter
  /// group, group_sums values (empty otherwise).
  std::span<const double> group = {};
};

}  // namespace dptrain
