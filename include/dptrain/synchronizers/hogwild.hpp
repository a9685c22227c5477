// SPDX-License-Identifier: MIT
// Hogwild!: lock-free asynchronous SGD. Each thread reads θ and adds its own update to it with no
// barrier between steps.
#pragma once

#include <algorithm>
#include <atomic>
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
#include "dptrain/core/report.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/optimizers/sgd.hpp"
#include "dptrain/synchronizers/step_parts.hpp"

namespace dptrain {

/**
 * @brief Hogwild! (Niu, Recht, Ré and Wright, "Hogwild!: a lock-free approach to parallelizing
 * stochastic gradient descent", 2011): the threads take the epoch's micro-batches (each step's
 * minibatch as the Partitioner cuts it) in order from a shared counter, each whichever is next when
 * it is free, compute its gradient at θ as they read it, and add their own update to θ, with no
 * barrier and no lock. A fast thread takes more micro-batches than a slow one; no thread waits for
 * another until the epoch's end.
 *
 * No undefined behaviour: during a span, θ is read and written only through `std::atomic_ref`
 * (relaxed loads into the thread's own copy, which the model reads; relaxed writes of each
 * coordinate), and the threads meet at a barrier at every span's end, where θ is plain again for
 * the hooks. How a coordinate's change is written is `atomic_adds`:
 * - `false` (the default, the paper's scheme: "with the possibility of overwriting each other's
 *   work"): the coordinate is loaded, the change added, and the sum stored; a change another thread
 *   stores to that coordinate in between is overwritten, i.e. lost. Plain moves, about as cheap as
 *   copying θ.
 * - `true`: an atomic fetch_add per coordinate, so no change is lost. x86 has no atomic float add:
 *   each is a compare-and-swap loop, and the update costs several times more (on the MLP of
 *   examples/sync_vs_async, a third of each thread's time at batch 1024 on an AMD EPYC Zen 5;
 *   RESULTS.md).
 *
 * Each update is one micro-batch's: the Optimizer applied to its mean gradient (clipping and the
 * non-finite check use its own norm) at the θ it was taken at, and the change added to θ. Only a
 * stateless Optimizer is accepted (Sgd, with or without weight decay): a state per coordinate
 * (momentum, Adam's moments) raced the same way would mix every thread's history into one.
 *
 * Sparse updates, the case the paper was written for: with a model that names each micro-batch's
 * support (SparseGradient: SparseLogisticRegression, SparseSoftmaxRegression) and an update that
 * leaves a coordinate with a zero gradient where it is (Sgd with weight_decay = 0), a thread reads
 * only the coordinates its micro-batch touches, updates those and writes those back: O(stored
 * entries) per micro-batch instead of O(θ's length), and threads whose micro-batches touch
 * different features never overwrite each other's changes. With weight decay every coordinate
 * moves at every update (that is L2 decay), so the update is dense as for any other model; the
 * paper's sparse form instead spreads the penalty over each sample's features, a different
 * objective, which dptrain does not substitute for the one asked for. (The Worker still clears
 * its gradient buffer whole at each micro-batch: one memset of θ's length.)
 *
 * Not reproducible: which updates a thread's read of θ has seen, and which thread takes which
 * micro-batch, depend on timing, and so do the bits of θ. With one thread it is SGD on the
 * micro-batches in order (θ + (θ′ − θ) for θ′, equal to the synchronous step up to rounding).
 *
 * What a user sees:
 * - Callbacks: on_step_end runs at the end of each span (every epoch's end, max_steps), on thread 0
 *   once every thread has stopped writing θ; no hook can read θ while threads write it.
 * - The record: each step's loss is the mean over its micro-batches, each at the θ its thread
 *   read; the steps are recorded at the span's end. WorkerReport::samples counts the samples each
 *   thread took.
 * - The Worker policy makes one state per thread (`make(model, thread, rows)`), so a
 *   StragglerWorker slows a thread, whichever micro-batches it takes.
 * - Checkpoints at epoch ends save θ (there is no optimizer state).
 * - A worker that throws, or a non-finite update under NonFinitePolicy::stop: every thread stops
 *   before its next micro-batch; θ keeps every update made until then; fit() throws the first
 *   error. A stop asked by a callback is acted on before the next span's first step.
 * - One process (across processes LocalSgd is the mode to use); an adaptive partitioner is refused.
 * - Memory: two copies of θ per thread, and per thread a Worker state and a gather buffer for a
 *   whole minibatch (a thread may take any worker's micro-batch); with sparse updates one more
 *   vector of θ's length and a byte per coordinate.
 * - Cost: a dense update reads and writes all of θ, one coordinate at a time (atomics do not
 *   vectorise), so it pays where a micro-batch's gradient costs well more than a few passes over
 *   θ (large micro-batches, or a slow worker the others need not wait for); a sparse one touches
 *   only its support. See examples/sync_vs_async and benchmarks/RESULTS.md.
 *
 * @code
 * dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.1}, dptrain::Hogwild{});
 * static_assert(dptrain::Synchronizer<dptrain::Hogwild>);
 * @endcode
 */
struct Hogwild {
  bool atomic_adds = false;  ///< add each coordinate's change atomically (none lost) instead of load + store

  /// Its name and settings, recorded in checkpoints (RunSetup).
  static constexpr std::string_view name = "Hogwild";
  [[nodiscard]] std::vector<Setting> settings() const { return {{"atomic_adds", atomic_adds ? 1.0 : 0.0}}; }

  template <class Step>
  class Loop;

  /// One fit()'s loop: each thread's copies of θ, sized here.
  template <class Step>
  [[nodiscard]] Loop<Step> start(Step& step) const {
    if (Step::state_slots > 0)
      throw invalid_argument("dptrain::Hogwild: the optimizer keeps " + std::to_string(Step::state_slots) +
                             " state vector(s); Hogwild!'s threads write θ with no lock, and a state raced the same "
                             "way would mix every thread's history into one: use Sgd");
    if (step.processes() > 1)
      throw invalid_argument("dptrain::Hogwild runs in one process; this run has " + std::to_string(step.processes()) +
                             " (between processes, LocalSgd is the mode that communicates less)");
    if (Step::adaptive_partitioner)
      throw invalid_argument(
          "dptrain::Hogwild: an adaptive partitioner learns at the barrier after each step's gradients, which this "
          "mode does not have; use EvenPartitioner or WeightedPartitioner");
    return Loop<Step>(step, atomic_adds);
  }
};

template <class Step>
class Hogwild::Loop {
  using Scalar = typename Step::Scalar;

 public:
  /// on_step_end runs at span ends, from the loop (see the class).
  static constexpr bool runs_step_hooks = true;

  Loop(Step& step, bool atomic_adds)
      : step_(step),
        biases_(whole_theta_biases(step)),
        parts_per_step_(step.workers()),
        atomic_adds_(atomic_adds),
        sparse_(sparse_updates(step)) {
    const Index threads = step.options().threads, n = step.theta().size();
    workers_.reserve(static_cast<std::size_t>(threads));
    for (Index t = 0; t < threads; ++t) {
      workers_.emplace_back(step.make_worker(t, step.max_minibatch()), step.make_buffer(step.max_minibatch()), n);
      if (sparse_) workers_.back().make_sparse(n);
    }
  }

  /// Whether the updates are sparse (see the class): the model names each micro-batch's support,
  /// and the update leaves a coordinate with a zero gradient unchanged.
  [[nodiscard]] bool sparse() const noexcept { return sparse_; }

  /// Every thread of the team: the span's micro-batches, whichever is next, at its own pace.
  SpanEnd run(const TeamMember& me, const StepSpan& span) {
    Worker& my = workers_[static_cast<std::size_t>(me.rank)];
    my.steps.assign(static_cast<std::size_t>(span.count), {});
    // A callback's stop or failure at the last span's end: every thread sees it here, after the
    // trainer's barrier, and leaves before writing θ.
    if (const StepScalars hooks = step_.hook_scalars(); hooks.failures > 0 || hooks.stop_requests > 0)
      return {0, step_.judge(hooks, span.first, false)};
    const Index parts = span.count * parts_per_step_;
    while (!left_.load(std::memory_order_relaxed)) {
      const Index claim = next_.fetch_add(1, std::memory_order_relaxed);
      if (claim >= parts) break;
      if (!take_part(me, my, span, claim / parts_per_step_, claim % parts_per_step_)) {
        left_.store(true, std::memory_order_relaxed);
        break;
      }
    }
    me.barrier();  // every thread has stopped writing θ
    if (me.rank == 0) next_.store(0, std::memory_order_relaxed);
    const SpanEnd end = close(me, span);
    step_.adopt(me, end.last, {.samples = my.samples});
    my.samples = 0;
    me.barrier();  // the hooks at the span's end have run
    step_.charge(me, &WorkerReport::wait);
    return end;
  }

 private:
  // What one thread did in one step of the span: the sum of the scalars of the micro-batches it
  // took there, and how many it took.
  struct StepShare {
    StepScalars scalars;
    Index parts = 0;
  };
  // One thread's Worker state and gather buffer, θ as it read it, the same after its update, and
  // its shares of the span's steps.
  struct alignas(cache_line_bytes) Worker {
    Worker(typename Step::WorkerState state, typename Step::Buffer buffer, Index n)
        : state(std::move(state)), buffer(std::move(buffer)), read(n), updated(n) {}
    void make_sparse(Index n) {
      gradient = AlignedBuffer<Scalar>(n);
      touched.assign(static_cast<std::size_t>(n), 0);
      support.reserve(static_cast<std::size_t>(n));
    }
    typename Step::WorkerState state;
    typename Step::Buffer buffer;
    AlignedBuffer<Scalar> read, updated;  // with sparse updates: θ read at the support; the support's θ, then updated
    AlignedBuffer<Scalar> gradient;       // with sparse updates: the support's gradient
    std::vector<unsigned char> touched;   // with sparse updates: whether a coordinate is in `support`
    std::vector<Index> support;           // with sparse updates: the micro-batch's coordinates, each once
    std::vector<StepShare> steps;         // of the span
    Index samples = 0;
    StepOutcome failed;  // its decision to leave, if it made one
  };

  // Micro-batch `part` of step k of the span on this thread: read θ, the gradient there, its
  // update added to θ. False if the team must leave (a failure, a stop, a non-finite update under
  // NonFinitePolicy::stop).
  bool take_part(const TeamMember& me, Worker& my, const StepSpan& span, Index k, Index part) {
    const Index t = span.first + k;
    std::exception_ptr failure;
    StepScalars scalars = read_and_gradient(my, span.epoch_step + k, part, failure);
    if (failure) step_.keep(failure);
    step_.charge(me, &WorkerReport::compute);
    const VectorMap<Scalar> g =
        sparse_ ? VectorMap<Scalar>(my.gradient.data(), std::ssize(my.support)) : my.state.gradient();
    scalars.sumsq = Step::squared_norm(g);
    const StepOutcome outcome = step_.judge(scalars, t, true);
    StepShare& share = my.steps[static_cast<std::size_t>(k)];
    share.scalars += scalars;
    ++share.parts;
    if (outcome.leave) {
      my.failed = outcome;
      return false;
    }
    my.samples += static_cast<Index>(scalars.samples);
    if (outcome.update) {
      if (sparse_)
        sparse_update(my, g, outcome, t);
      else
        dense_update(my, g, outcome, t);
    }
    step_.charge(me, &WorkerReport::update);
    return true;
  }

  StepScalars read_and_gradient(Worker& my, Index epoch_step, Index part, std::exception_ptr& failure) {
    if constexpr (may_be_sparse)
      if (sparse_) return sparse_gradient(my, epoch_step, part, failure);
    return dense_gradient(my, epoch_step, part, failure);
  }

  // The micro-batch's gradient at θ as this thread reads all of it.
  StepScalars dense_gradient(Worker& my, Index epoch_step, Index part, std::exception_ptr& failure) {
    const Index n = my.read.size();
    Scalar *theta = step_.theta().data(), *read = my.read.data();
    for (Index i = 0; i < n; ++i) read[i] = load(theta[i]);
    return step_.gradient(my.state, my.buffer, ConstVectorMap<Scalar>(read, n), epoch_step, Share{.index = part},
                          failure);
  }

  // The same, reading θ only at the micro-batch's support, which it records (each coordinate
  // once, however many of the step's minibatches touch it); then the support's gradient, packed.
  StepScalars sparse_gradient(Worker& my, Index epoch_step, Index part, std::exception_ptr& failure) {
    my.support.clear();
    const Index n = my.read.size();
    Scalar *theta = step_.theta().data(), *read = my.read.data();
    const auto read_support = [&](const auto& batch) {
      step_.model().gradient_support(batch, [&](Index i) {
        unsigned char& touched = my.touched[static_cast<std::size_t>(i)];
        if (touched != 0) return;
        touched = 1;
        my.support.push_back(i);
        read[i] = load(theta[i]);
      });
      return ConstVectorMap<Scalar>(read, n);
    };
    const StepScalars scalars =
        step_.gradient(my.state, my.buffer, read_support, epoch_step, Share{.index = part}, failure);
    const Scalar* g = my.state.gradient().data();
    Scalar* packed = my.gradient.data();
    for (std::size_t j = 0; j < my.support.size(); ++j) {
      packed[j] = g[my.support[j]];
      my.touched[static_cast<std::size_t>(my.support[j])] = 0;
    }
    return scalars;
  }

  // θ += update − read over all of θ.
  void dense_update(Worker& my, VectorMap<Scalar> g, const StepOutcome& outcome, Index t) {
    const Index n = my.read.size();
    const Scalar* read = my.read.data();
    Scalar* updated = my.updated.data();
    std::copy_n(read, n, updated);
    step_.update_range(g, {0, n}, updated, {}, biases_, outcome, t);
    Scalar* theta = step_.theta().data();
    for (Index i = 0; i < n; ++i) add(theta[i], updated[i] - read[i]);
  }

  // The same over the support only, packed: its θ as read, updated, and the changes added. No
  // biases: without weight decay the update treats them as any other coordinate.
  void sparse_update(Worker& my, VectorMap<Scalar> g, const StepOutcome& outcome, Index t) {
    const Index m = std::ssize(my.support);
    const Scalar* read = my.read.data();
    Scalar* packed = my.updated.data();
    for (Index j = 0; j < m; ++j) packed[j] = read[my.support[static_cast<std::size_t>(j)]];
    step_.update_range(g, {0, m}, packed, {}, {}, outcome, t);
    Scalar* theta = step_.theta().data();
    for (Index j = 0; j < m; ++j) {
      const Index i = my.support[static_cast<std::size_t>(j)];
      add(theta[i], packed[j] - read[i]);
    }
  }

  static Scalar load(Scalar& coordinate) { return std::atomic_ref<Scalar>(coordinate).load(std::memory_order_relaxed); }

  // coordinate += change (see Hogwild::atomic_adds).
  void add(Scalar& coordinate, Scalar change) const {
    const std::atomic_ref<Scalar> shared(coordinate);
    if (atomic_adds_)
      shared.fetch_add(change, std::memory_order_relaxed);
    else
      shared.store(shared.load(std::memory_order_relaxed) + change, std::memory_order_relaxed);
  }

  // Sparse updates need the model's support and an update that leaves a coordinate with a zero
  // gradient where it is: Sgd's is, without weight decay. Any other stateless optimizer might not.
  static constexpr bool may_be_sparse =
      SparseGradient<typename Step::Model> && std::same_as<typename Step::Optimizer, Sgd>;
  static bool sparse_updates(const Step& step) {
    if constexpr (may_be_sparse)
      return step.optimizer().weight_decay == 0.0;
    else
      return false;
  }

  // After the span's barrier: thread 0 records the steps whose every micro-batch was taken (the
  // last one a hook point), each with the mean loss of its micro-batches; every thread returns the
  // same end.
  SpanEnd close(const TeamMember& me, const StepSpan& span) {
    for (const Worker& w : workers_)
      if (w.failed.leave) return {completed(span), w.failed};
    const Index steps = completed(span);
    StepOutcome outcome;
    for (Index k = 0; k < steps; ++k) {
      StepScalars totals;
      for (const Worker& w : workers_) totals += w.steps[static_cast<std::size_t>(k)].scalars;
      outcome = {.loss = totals.loss / std::max(totals.samples, 1.0),
                 .samples = static_cast<Index>(totals.samples),
                 .update = true};
      if (me.rank == 0) step_.record(span, k, outcome, nullptr, /*hook_point=*/k + 1 == steps);
    }
    return {steps, outcome};
  }

  // The span's leading steps whose every micro-batch was taken.
  [[nodiscard]] Index completed(const StepSpan& span) const {
    for (Index k = 0; k < span.count; ++k) {
      Index parts = 0;
      for (const Worker& w : workers_) parts += w.steps[static_cast<std::size_t>(k)].parts;
      if (parts < parts_per_step_) return k;
    }
    return span.count;
  }

  Step& step_;
  std::vector<IndexRange> biases_;  // θ's biases, for a whole vector's update
  Index parts_per_step_;            // micro-batches per step: one per worker, as the Partitioner cuts them
  bool atomic_adds_;
  bool sparse_;  // see sparse()
  std::vector<Worker> workers_;
  alignas(cache_line_bytes) std::atomic<Index> next_{0};  // the span's next micro-batch to take
  std::atomic<bool> left_{false};                         // a worker made the decision to leave
};

}  // namespace dptrain
