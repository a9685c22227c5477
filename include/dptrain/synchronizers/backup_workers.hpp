// SPDX-License-Identifier: MIT
// BackupWorkers: synchronous SGD whose steps do not wait for a descheduled thread: each step is
// shared out in chunks, and a chunk held too long is computed again by an idle thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/report.hpp"
#include "dptrain/core/step_events.hpp"
#include "dptrain/core/team_barrier.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/bias_ranges.hpp"

namespace dptrain {

/**
 * @brief Synchronous SGD that does not wait for a descheduled thread (backup workers): each step
 * is shared out in `chunks` chunks, taken by whichever thread is free, and a chunk held for longer
 * than `stall` chunk times is computed again by an idle thread; the first result wins. No step
 * has a barrier: a step ends when its work is done, and a thread that lost its core finds the
 * step gone on without it.
 *
 * Use it where other processes share the cores (CI runners, laptops, shared servers): beside a
 * busy process, threads that wait for each other at every step wait out the scheduler's time
 * slices (benchmarks/RESULTS.md, issue 16). On a quiet machine EveryStepSynchronizer is faster.
 *
 * Each step is still exactly one synchronous step: the mean gradient of the whole minibatch, one
 * update. The chunks' gradients are summed in chunk order, so θ does not depend on which thread
 * computed what: with a fixed `chunks`, the same seed gives the same θ, bit for bit, for any
 * number of threads and any stalls. (EveryStepSynchronizer sums per worker, so its θ matches
 * this one's up to rounding.)
 *
 * How a step runs: the chunks (each into its own gradient buffer); Σ G and ‖Σ G‖² in 32 blocks
 * of θ, claimed like the chunks; the step's decision, by the thread that finished the last
 * block; the update in blocks. θ is kept in 8 copies, each step reading one and writing the next,
 * so that a thread descheduled in the middle of a chunk still reads its step's θ; the trainer's
 * θ holds the result at every hook point.
 *
 * What it does not do: the Partitioner and Aggregator policies are not used (the chunks are an
 * even split, their sum is in chunk order), the Worker policy makes one state per chunk and
 * thread, and it runs in one process (a Communicator with several processes is refused).
 *
 * Callbacks: on_step_end runs on the thread that ends each step, before the next one starts,
 * with ctx.theta the step's result and ctx.team that thread alone (the others are not waiting at
 * a barrier to serve it); the other hooks run at the epochs' ends as usual, with the whole team.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Momentum{.lr = 0.05}, dptrain::BackupWorkers{});
 * static_assert(dptrain::Synchronizer<dptrain::BackupWorkers>);
 * @endcode
 */
struct BackupWorkers {
  Index chunks = 0;  ///< chunks per minibatch; 0: one per thread. Fix it to get the same θ for any thread count
  double stall = 1;  ///< a chunk held longer than this many chunk times (plus 20 µs) is computed again

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "BackupWorkers";
  [[nodiscard]] std::vector<Setting> settings() const {
    return {{"chunks", static_cast<double>(chunks)}, {"stall", stall}};
  }
  /// A fixed `chunks`: θ's bits do not depend on the thread count (0: they do).
  [[nodiscard]] Index fixed_shards() const noexcept { return chunks; }

  template <class Step>
  class Loop;

  /// One fit()'s loop: its buffers and θ's copies, sized here.
  template <class Step>
  [[nodiscard]] Loop<Step> start(Step& step) const {
    return Loop<Step>(step, *this);
  }
};

template <class Step>
class BackupWorkers::Loop {
  using Scalar = typename Step::Scalar;
  using WorkerState = typename Step::WorkerState;
  using Buffer = typename Step::Buffer;
  using Biases = decltype(std::declval<const Step&>().biases(std::declval<ShardLayout<Scalar>>()));
  using Clock = std::chrono::steady_clock;

 public:
  /// on_step_end runs on the thread that ends each step, before the next starts (see the class).
  static constexpr bool runs_step_hooks = true;

  Loop(Step& step, const BackupWorkers& policy)
      : step_(step),
        chunks_(checked_chunks(step, policy)),
        stall_(policy.stall),
        layout_{step.theta().size(), blocks(step.theta().size())},
        biases_(step.biases(layout_)),
        pool_used_(static_cast<std::size_t>(chunks_ + step.options().threads)),
        pool_scalars_(pool_used_.size()),
        block_sumsq_(static_cast<std::size_t>(layout_.shards)),
        chunk_claims_(chunks_),
        reduce_claims_(layout_.shards),
        update_claims_(layout_.shards),
        state_(static_cast<std::size_t>(chunks_)),
        held_since_(static_cast<std::size_t>(chunks_)),
        readers_(versions),
        tag_(versions),
        events_(step.spin()) {
    const auto& opt = step.options();
    const Index rows = (step.max_minibatch() + chunks_ - 1) / chunks_;
    pool_.reserve(pool_used_.size());
    for (std::size_t i = 0; i < pool_used_.size(); ++i) pool_.push_back(step.make_worker(static_cast<Index>(i), rows));
    for (Index t = 0; t < opt.threads; ++t) buffers_.push_back(step.make_buffer(rows));
    for (int v = 1; v < versions; ++v) copies_.emplace_back(step.theta().size());
    for (auto& tag : tag_) tag = -1;
    for (auto& state : state_) state = -1;
  }

  /// Every thread of the team: the span's steps, with whichever of their work it finds free.
  SpanEnd run(const TeamMember& me, const StepSpan& span) {
    begin(span);
    const Index end = span.first + span.count;
    int scratch = take();
    Index samples = 0, recomputed = 0;
    for (;;) {
      const Index t = current_.load();
      if (t >= end || left_.load()) break;
      // (A thread descheduled between a claim and its mark delays the step: a few instructions.)
      for (Index c; (c = chunk_claims_.next(t)) >= 0;) {
        held_since_[static_cast<std::size_t>(c)] = now();
        state_[static_cast<std::size_t>(c)] = holding(t);
        samples += compute(me, span, t, c, scratch);
      }
      if (!await_chunks(me, span, t, scratch, samples, recomputed)) continue;
      for (Index b; (b = reduce_claims_.next(t)) >= 0;) {
        reduce_block(b);
        if (reduced_.fetch_add(1) + 1 == (t << 16) + layout_.shards) decide(span, t);
      }
      step_.charge(me, &WorkerReport::aggregate);
      wait_until(me, [&] { return current_.load() != t || left_.load() || update_open_.load() == t; });
      if (current_.load() == t && !left_.load()) {
        for (Index b; (b = update_claims_.next(t)) >= 0;) {
          update_block(span, t, b);
          if (updated_.fetch_add(1) + 1 == (t << 16) + layout_.shards) complete(span, t);
        }
        step_.charge(me, &WorkerReport::update);
      }
      wait_until(me, [&] { return current_.load() != t || left_.load(); });
    }
    pool_used_[static_cast<std::size_t>(scratch)] = 0;
    step_.adopt(me, outcome_, {.samples = samples, .recomputed = recomputed});
    step_.charge(me, &WorkerReport::wait);
    return {current_.load() - span.first, outcome_};
  }

 private:
  static constexpr int versions = 8;            // θ's copies: a stalled reader holds one for up to 7 steps
  static constexpr Index max_blocks = 32;       // blocks of θ for the reduction and the update
  static constexpr Index max_chunks = 0x7ffe;   // a pool index fits a chunk state's low 16 bits
  static constexpr std::int64_t held = 0xffff;  // a chunk state's low bits while it is being computed

  // A chunk's state: the step in the high bits, and in the low 16 `held` or, once done, the pool
  // entry that holds its result.
  static std::int64_t holding(Index t) noexcept { return (t << 16) | held; }
  [[nodiscard]] std::size_t entry(Index c) const noexcept {
    return static_cast<std::size_t>(state_[static_cast<std::size_t>(c)].load() & held);
  }

  // The number of chunks, once the policy and the run are known to fit it (before any buffer).
  static Index checked_chunks(const Step& step, const BackupWorkers& policy) {
    if (step.processes() > 1)
      throw invalid_argument("dptrain::BackupWorkers runs in one process; this run has " +
                             std::to_string(step.processes()));
    if (policy.chunks < 0 || policy.chunks > max_chunks)
      throw invalid_argument("dptrain::BackupWorkers: chunks must be in [0, " + std::to_string(max_chunks) + "], got " +
                             std::to_string(policy.chunks));
    if (!(policy.stall > 0)) throw invalid_argument("dptrain::BackupWorkers: stall must be positive");
    if constexpr (ReadsGradientTable<typename Step::Optimizer>)
      throw invalid_argument(
          "dptrain::BackupWorkers may compute a chunk twice, which would store its samples' gradients twice; Sag "
          "and Saga need the synchronous step");
    if constexpr (SumsOverGroups<typename Step::Optimizer>)
      throw invalid_argument(
          "dptrain::BackupWorkers updates theta block by block as the blocks' sums arrive, but Lars and Lamb "
          "need sums over each whole parameter group first; use the synchronous step");
    return policy.chunks > 0 ? policy.chunks : step.options().threads;
  }

  // θ's blocks: up to max_blocks, of whole cache lines.
  static Index blocks(Index n) noexcept {
    const Index lines = (n + ShardLayout<Scalar>::line - 1) / ShardLayout<Scalar>::line;
    return std::clamp<Index>(lines, 1, max_blocks);
  }

  // The first thread of the fit's first span sets where the steps start; the others wait for it
  // (once per fit). Later spans start where the last one ended.
  void begin(const StepSpan& span) {
    int expected = 0;
    if (started_.compare_exchange_strong(expected, 1)) {
      reduced_ = updated_ = span.first << 16;
      tag_[0] = span.first;
      current_ = span.first;
      started_ = 2;
      return;
    }
    while (started_.load() != 2) std::this_thread::yield();
  }

  // Step t's copy of θ: the trainer's θ (copy 0) for a span's first step, then the next copy for
  // each step of the span.
  [[nodiscard]] static std::size_t version(const StepSpan& span, Index t) noexcept {
    return static_cast<std::size_t>((t - span.first) % versions);
  }
  [[nodiscard]] Scalar* theta(std::size_t v) noexcept { return v == 0 ? step_.theta().data() : copies_[v - 1].data(); }

  // Chunk c of step t into the pool entry `scratch`; if this is the first result, the entry
  // becomes the chunk's and this thread takes another. Returns the samples it contributed.
  Index compute(const TeamMember& me, const StepSpan& span, Index t, Index c, int& scratch) {
    const std::size_t v = version(span, t);
    readers_[v].fetch_add(1);
    if (tag_[v].load() != t) {  // the step is long gone: its θ copy is being rewritten
      readers_[v].fetch_sub(1);
      return 0;
    }
    const auto e = static_cast<std::size_t>(scratch);
    const std::int64_t started = now();
    const Index n = step_.theta().size();
    std::exception_ptr failure;  // kept only if this result is the chunk's: a lost copy's is not the step's
    pool_scalars_[e] =
        step_.gradient(pool_[e], buffers_[static_cast<std::size_t>(me.rank)], ConstVectorMap<Scalar>(theta(v), n),
                       span.epoch_step + (t - span.first), Share{.index = c, .chunks = chunks_}, failure);
    readers_[v].fetch_sub(1);
    chunk_ns_.store(now() - started, std::memory_order_relaxed);
    step_.charge(me, &WorkerReport::compute);
    // Read before the result is published: once it is, the step may end and free the entry.
    const auto samples = static_cast<Index>(pool_scalars_[e].samples);
    std::int64_t expected = holding(t);
    if (!state_[static_cast<std::size_t>(c)].compare_exchange_strong(expected, (t << 16) | scratch)) return 0;
    if (failure) step_.keep(failure);  // fit() throws it once the team has left
    scratch = take();
    events_.signal();
    return samples;
  }

  // Until every chunk of step t is done, computing again any that stalls; false if the step went
  // on without this thread.
  bool await_chunks(const TeamMember& me, const StepSpan& span, Index t, int& scratch, Index& samples,
                    Index& recomputed) {
    for (;;) {
      const std::uint32_t seen = events_.seen();
      if (current_.load() != t) return false;
      const std::int64_t at = now();
      // Until a chunk is done its time is unknown: nothing counts as stalled for the first 1 ms.
      const std::int64_t chunk_ns = chunk_ns_.load(std::memory_order_relaxed);
      const std::int64_t limit =
          chunk_ns == 0 ? 1'000'000 : static_cast<std::int64_t>(stall_ * static_cast<double>(chunk_ns)) + 20'000;
      Index done = 0, stalled = -1;
      std::int64_t next_stall = limit;  // until the first held chunk would count as stalled
      for (Index c = 0; c < chunks_; ++c) {
        const std::int64_t state = state_[static_cast<std::size_t>(c)].load();
        if (state >> 16 != t) continue;  // claimed, not yet marked
        if ((state & held) != held) {
          ++done;
          continue;
        }
        const std::int64_t held_for = at - held_since_[static_cast<std::size_t>(c)].load();
        if (held_for > limit) stalled = c;
        next_stall = std::min(next_stall, limit - held_for);
      }
      if (done == chunks_) return true;
      std::int64_t since = stalled >= 0 ? held_since_[static_cast<std::size_t>(stalled)].load() : 0;
      if (stalled >= 0 && held_since_[static_cast<std::size_t>(stalled)].compare_exchange_strong(since, at)) {
        ++recomputed;    // one copy at a time: the next may start a stall time later
        events_.hold();  // a stall: a thread is being descheduled
        samples += compute(me, span, t, stalled, scratch);
      } else {
        events_.wait(seen, std::chrono::nanoseconds(std::max<std::int64_t>(next_stall, 1000)));
        step_.charge(me, &WorkerReport::wait);
      }
    }
  }

  // Σ G, kept in chunk 0's result (held until the step completes).
  [[nodiscard]] VectorMap<Scalar> sum(IndexRange r) { return {pool_[entry(0)].gradient().data() + r.begin, r.size}; }

  // Block b of Σ G (the chunks' results added in chunk order) and its ‖·‖².
  void reduce_block(Index b) {
    const IndexRange r = layout_.shard(b);
    VectorMap<Scalar> total = sum(r);
    for (Index c = 1; c < chunks_; ++c) total += pool_[entry(c)].gradient().segment(r.begin, r.size);
    block_sumsq_[static_cast<std::size_t>(b)] = Step::squared_norm(total);
  }

  // The thread that reduced step t's last block: the step's decision, then its update or the end.
  void decide(const StepSpan& span, Index t) {
    StepScalars totals = step_.hook_scalars();
    for (Index c = 0; c < chunks_; ++c) totals += pool_scalars_[entry(c)];
    for (const double sumsq : block_sumsq_) totals.sumsq += sumsq;
    outcome_ = step_.judge(totals, t, true);
    if (outcome_.leave) {
      keep_theta(span, t);
      left_ = true;
    } else {
      update_open_ = t;
    }
    events_.signal();
  }

  // Block b of step t's update: θ's next copy from this one, then (a finite step) the optimizer.
  void update_block(const StepSpan& span, Index t, Index b) {
    const IndexRange r = layout_.shard(b);
    Scalar* out = theta(version(span, t + 1));
    const Scalar* in = theta(version(span, t));
    std::copy(in + r.begin, in + r.end(), out + r.begin);
    if (outcome_.update) step_.update_range(sum(r), r, out, step_.optimizer_state(), biases_.of(b), outcome_, t);
  }

  // The thread that updated step t's last block: records the step, frees its results, and starts
  // the next step once no stalled reader holds the copy that step will write.
  void complete(const StepSpan& span, Index t) {
    step_.record(span, t - span.first, outcome_, theta(version(span, t + 1)));
    for (Index c = 0; c < chunks_; ++c) pool_used_[entry(c)] = 0;
    const Index next = t + 1;
    reduced_ = updated_ = next << 16;
    if (next == span.first + span.count) {
      keep_theta(span, next);
    } else {
      const std::size_t written = version(span, next + 1);
      release(written);
      tag_[version(span, next)] = next;
    }
    current_ = next;
    events_.signal();
  }

  // Step t's θ into the trainer's θ, where the hooks and the next span read it.
  void keep_theta(const StepSpan& span, Index t) {
    const std::size_t v = version(span, t);
    if (v != 0) {
      release(0);
      const Scalar* from = theta(v);
      std::copy(from, from + step_.theta().size(), theta(0));
    }
    for (auto& tag : tag_) tag = -1;
    tag_[0] = t;
  }

  // No step reads copy v from now on; returns once its last reader is done.
  void release(std::size_t v) {
    tag_[v] = -1;
    while (readers_[v].load() != 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

  // A free pool entry, taken.
  int take() {
    for (;;)
      for (std::size_t i = 0; i < pool_used_.size(); ++i) {
        int free = 0;
        if (pool_used_[i].compare_exchange_strong(free, 1)) return static_cast<int>(i);
      }
  }

  template <class Done>
  void wait_until(const TeamMember& me, Done&& done) {
    events_.wait_until(done);
    step_.charge(me, &WorkerReport::wait);
  }

  static std::int64_t now() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

  Step& step_;
  Index chunks_;
  double stall_;
  ShardLayout<Scalar> layout_;  // θ's blocks
  Biases biases_;               // each block's biases
  std::vector<WorkerState> pool_;
  std::vector<std::atomic<int>> pool_used_;
  std::vector<StepScalars> pool_scalars_;  // each entry's chunk scalars
  std::vector<Buffer> buffers_;            // each thread's gather buffer
  std::vector<AlignedBuffer<Scalar>> copies_;
  std::vector<double> block_sumsq_;
  detail::StepClaims chunk_claims_, reduce_claims_, update_claims_;
  std::vector<std::atomic<std::int64_t>> state_, held_since_;
  std::vector<std::atomic<int>> readers_;
  std::vector<std::atomic<Index>> tag_;  // the step that reads each copy of θ (−1: none)
  StepOutcome outcome_;                  // the current step's, written by the thread that decides it
  std::atomic<int> started_{0};
  std::atomic<Index> current_{0}, update_open_{-1};
  std::atomic<std::int64_t> reduced_{0}, updated_{0};  // blocks done, tagged with the step
  std::atomic<bool> left_{false};
  std::atomic<std::int64_t> chunk_ns_{0};
  detail::StepEvents events_;
};

}  // namespace dptrain
