// SPDX-License-Identifier: MIT
// Reproducible: the synchronous step cut into a fixed number of shards, summed in shard order, so
// that θ's bits depend on the shard count and never on the ranks × threads that compute them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/synchronizers/step_parts.hpp"

namespace dptrain {

/**
 * @brief The synchronous step with the same bits on any ranks × threads: every minibatch is cut
 * into `shards` logical shards, and θ after any number of steps is the same bytes whether one
 * thread computes them all or 8 ranks × 2 threads share them out, and across a resume on other
 * ranks × threads (docs/reproducibility.md).
 *
 * How a step runs:
 * - The shards: shard c of a minibatch of B samples is its samples B·c/S … B·(c+1)/S − 1, a
 *   boundary that depends on B and S only. Each shard's gradient is computed by one code path,
 *   into a buffer and a workspace of the same shape wherever it runs. A process takes the shards
 *   of its workers' share of the run's workers (shards S·w/W … S·(w+T)/W − 1 for its workers
 *   w … w+T−1 of W), its threads a contiguous part of those.
 * - The sum: Σ G = ((0 + G₀) + G₁) + … + G_{S−1}, element by element, in shard order. The first
 *   process starts it, adds its shards and passes the partial sum on to the next process, which
 *   adds its own (receive_partial, pass_partial, await_total: each process sends one vector of
 *   θ's length, in 4 pieces, so that a process adds one piece while the next is on its way); the
 *   last one's sum reaches every process. The loss, samples and failures travel with it, summed
 *   in the same order.
 * - ‖Σ G‖² (for clipping and the non-finite check) in blocks of θ whose bounds depend on θ's
 *   length only, summed in block order; the update in those blocks, each block's bits the same
 *   whichever thread updates it.
 *
 * What it costs against EveryStepSynchronizer (benchmarks/RESULTS.md): with as many shards as
 * workers, nothing measurable (the MLP epoch on 2 threads or 2 ranks); more shards per worker make
 * the products thinner (a shard is B/S samples, not B/W) and need a gradient buffer and a
 * workspace each: 3–6 % at 2 shards per worker, 25 % or more at 4. The Partitioner and Aggregator policies are not used
 * (the shards are an even split, their sum is in shard order); with data sharded per process (MpiData::sharded), every
 * process computes all S shards of its own minibatch, and the sum runs over the processes' shards
 * in rank order (then the bits depend on the process count, as the data do, not on the threads).
 *
 * The shards play the workers' part in the mean: under Weighting::equal (the default) each
 * shard's mean gradient weighs the same, so with shards of unequal size the step differs from
 * EveryStepSynchronizer's beyond rounding; under Weighting::by_samples it is the same step.
 *
 * Choose `shards` as a multiple of the worker counts you will run on (8 serves 1, 2, 4 and 8
 * workers evenly; 3 workers then hold 3, 3 and 2 shards). Fewer shards than workers leave workers
 * idle.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Momentum{.lr = 0.05}, dptrain::Reproducible{.shards = 8});
 * static_assert(dptrain::Synchronizer<dptrain::Reproducible>);
 * @endcode
 */
struct Reproducible {
  Index shards = 8;  ///< logical shards per minibatch: θ's bits depend on this, not on the workers

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Reproducible";
  [[nodiscard]] std::vector<Setting> settings() const { return {{"shards", static_cast<double>(shards)}}; }
  /// θ's bits do not depend on the worker count, for a given shard count.
  [[nodiscard]] Index fixed_shards() const noexcept { return shards; }

  template <class Step>
  class Loop;

  /// One fit()'s loop: its shards' buffers, sized here.
  template <class Step>
  [[nodiscard]] Loop<Step> start(Step& step) const {
    if (shards < 1)
      throw invalid_argument("dptrain::Reproducible: shards must be at least 1, got " + std::to_string(shards));
    if (step.processes() > 1 && !Step::passes_partials)
      throw invalid_argument("dptrain::Reproducible: this run's Communicator cannot sum in process order across its " +
                             std::to_string(step.processes()) +
                             " processes (a ProcessGroup with receive_partial, pass_partial and await_total: "
                             "OrderedProcessGroup)");
    if constexpr (SumsOverGroups<typename Step::Optimizer>)
      throw invalid_argument(
          "dptrain::Reproducible: Lars and Lamb sum each parameter group over the threads' slices of theta, "
          "in an order that depends on the thread count; use the synchronous step");
    return Loop<Step>(step, *this);
  }
};

template <class Step>
class Reproducible::Loop {
  using Scalar = typename Step::Scalar;
  using Biases = decltype(std::declval<const Step&>().biases(std::declval<ShardLayout<Scalar>>()));

 public:
  Loop(Step& step, const Reproducible& policy)
      : step_(step),
        shards_(policy.shards),
        mine_(process_shards(step, policy.shards)),
        layout_{step.theta().size(), blocks(step.theta().size())},
        pieces_(std::min<Index>(step.processes() > 1 ? pieces_between_processes : 1, layout_.shards)),
        biases_(step.biases(layout_)),
        total_(step.theta().size()),
        block_sumsq_(static_cast<std::size_t>(layout_.shards)),
        shard_scalars_(static_cast<std::size_t>(mine_.size)) {
    const Index rows = (step.max_minibatch() + shards_ - 1) / shards_;
    states_.reserve(static_cast<std::size_t>(mine_.size));
    for (Index c = mine_.begin; c < mine_.end(); ++c) states_.push_back(step.make_worker(c, rows));
    for (Index t = 0; t < step.options().threads; ++t) buffers_.push_back(step.make_buffer(rows));
  }

  /// Every thread of the team: the span's steps, each one collective.
  SpanEnd run(const TeamMember& me, const StepSpan& span) {
    SpanEnd end;
    Index samples = 0;
    for (Index k = 0; k < span.count; ++k) {
      const Index t = span.first + k;
      const Index computed = compute(me, span.epoch_step + k);
      me.barrier();                          // every shard of this process is done
      for (Index j = 0; j < pieces_; ++j) {  // the scalars travel with the first piece
        StepScalars* scalars = j == 0 ? &partial_ : nullptr;
        step_.receive_partial(me, piece(j), scalars);
        add_shards(me, j);
        step_.pass_partial(me, piece(j), scalars);
      }
      step_.await_total(me, partial_);
      for (Index b = blocks_of(me).begin; b < blocks_of(me).end(); ++b) {
        const IndexRange r = layout_.shard(b);
        block_sumsq_[static_cast<std::size_t>(b)] =
            Step::squared_norm(VectorMap<Scalar>(total_.data() + r.begin, r.size));
      }
      me.barrier();  // every block's ‖·‖²
      StepScalars totals = partial_;
      totals.sumsq = 0;
      for (const double sumsq : block_sumsq_) totals.sumsq += sumsq;
      step_.charge(me, &WorkerReport::aggregate);
      end = {k + 1, step_.judge(totals, t, me.rank == 0)};
      if (end.last.leave) break;
      if (end.last.update) update(me, t, end.last);
      step_.charge(me, &WorkerReport::update);
      samples += computed;
      me.barrier();  // every worker sees the new θ
      step_.charge(me, &WorkerReport::wait);
      if (me.rank == 0) step_.record(span, k, end.last, nullptr, false);
    }
    step_.adopt(me, end.last, {.samples = samples});
    return end;
  }

 private:
  // Between processes the sum travels in pieces, so that each adds one while the next is on its way.
  static constexpr Index pieces_between_processes = 4;

  // Blocks of θ for the sum, its norm and the update: at most 256, each of 64 whole cache lines or
  // more (one block for a shorter θ). Their bounds depend on θ's length only.
  static Index blocks(Index n) noexcept {
    const Index lines = (n + ShardLayout<Scalar>::line - 1) / ShardLayout<Scalar>::line;
    return std::clamp<Index>(lines / 64, 1, 256);
  }

  // This process's shards: its workers' share of the run's workers.
  static IndexRange process_shards(const Step& step, Index shards) {
    const Index workers = step.workers(), first = step.first_worker(), threads = step.options().threads;
    const Index begin = shards * first / workers, end = shards * (first + threads) / workers;
    return {begin, end - begin};
  }

  // Thread me's part of this process's shards (as local indices) and of θ's blocks.
  [[nodiscard]] IndexRange shards_of(const TeamMember& me) const noexcept { return part(mine_.size, me); }
  [[nodiscard]] IndexRange blocks_of(const TeamMember& me) const noexcept { return part(layout_.shards, me); }
  // Blocks of piece j of the sum (as it travels along the processes), and its elements.
  [[nodiscard]] IndexRange piece_blocks(Index j) const noexcept {
    const Index begin = layout_.shards * j / pieces_, end = layout_.shards * (j + 1) / pieces_;
    return {begin, end - begin};
  }
  [[nodiscard]] VectorMap<Scalar> piece(Index j) noexcept {
    const IndexRange blocks = piece_blocks(j);
    const Index begin = layout_.shard(blocks.begin).begin, end = layout_.shard(blocks.end() - 1).end();
    return {total_.data() + begin, end - begin};
  }
  // Thread me's part of n items.
  static IndexRange part(Index n, const TeamMember& me) noexcept {
    const Index begin = n * me.rank / me.size, end = n * (me.rank + 1) / me.size;
    return {begin, end - begin};
  }

  // Thread me's shards of the step, each into its own buffer; returns their samples.
  Index compute(const TeamMember& me, Index epoch_step) {
    Index samples = 0;
    const VectorMap<Scalar> theta = step_.theta();
    for (Index c = shards_of(me).begin; c < shards_of(me).end(); ++c) {
      const auto i = static_cast<std::size_t>(c);
      std::exception_ptr failure;
      shard_scalars_[i] = step_.gradient(states_[i], buffers_[static_cast<std::size_t>(me.rank)],
                                         ConstVectorMap<Scalar>(theta.data(), theta.size()), epoch_step,
                                         Share{.index = mine_.begin + c, .chunks = shards_}, failure);
      if (failure) step_.keep(failure);  // counted in the shard's scalars: the step leaves
      samples += static_cast<Index>(shard_scalars_[i].samples);
    }
    step_.charge(me, &WorkerReport::compute);
    return samples;
  }

  // This process's shards added to piece j of the partial sum in shard order, each thread on its
  // part of the piece's blocks (the first process starts it from zero); with the first piece
  // thread 0 adds their scalars, and the hooks'.
  void add_shards(const TeamMember& me, Index j) {
    const bool first = step_.process() == 0;
    const IndexRange blocks = piece_blocks(j), mine = part(blocks.size, me);
    for (Index b = blocks.begin + mine.begin; b < blocks.begin + mine.end(); ++b) {
      const IndexRange r = layout_.shard(b);
      auto sum = VectorMap<Scalar>(total_.data() + r.begin, r.size);
      if (first) sum.setZero();
      for (auto& state : states_) sum += state.gradient().segment(r.begin, r.size);
    }
    if (me.rank == 0 && j == 0) {
      if (first) partial_ = {};
      partial_ += step_.hook_scalars();
      for (const StepScalars& shard : shard_scalars_) partial_ += shard;
    }
    step_.charge(me, &WorkerReport::aggregate);
  }

  // Thread me's blocks of step t's update, from the sum in total_.
  void update(const TeamMember& me, Index t, const StepOutcome& outcome) {
    for (Index b = blocks_of(me).begin; b < blocks_of(me).end(); ++b) {
      const IndexRange r = layout_.shard(b);
      step_.update_range(VectorMap<Scalar>(total_.data() + r.begin, r.size), r, step_.theta().data(),
                         step_.optimizer_state(), biases_.of(b), outcome, t);
    }
  }

  Step& step_;
  Index shards_;
  IndexRange mine_;              // this process's shards
  ShardLayout<Scalar> layout_;   // θ's blocks
  Index pieces_;                 // pieces of the sum, as it passes along the processes
  Biases biases_;                // each block's biases
  AlignedBuffer<Scalar> total_;  // Σ G: the partial sum, then the total
  std::vector<double> block_sumsq_;
  std::vector<typename Step::WorkerState> states_;  // one per shard of this process
  std::vector<StepScalars> shard_scalars_;
  std::vector<typename Step::Buffer> buffers_;  // each thread's gather buffer
  StepScalars partial_;                         // the sum's scalars (thread 0 writes them)
};

}  // namespace dptrain
