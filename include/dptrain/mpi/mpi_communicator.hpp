// SPDX-License-Identifier: MIT
// MpiCommunicator: MPI ranks × OpenMP threads, one global step (the communication seam over MPI).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/communication.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/gradient_buffers.hpp"
#include "dptrain/core/team_member.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/// How the threads of a rank call MPI.
enum class MpiThreading {
  /// Thread 0 calls MPI for the whole team (MPI_THREAD_FUNNELED or more): after a barrier it
  /// all-reduces every thread's shard in turn, and a second barrier hands the sums back.
  funneled,
  /// Every thread all-reduces its own shard on a communicator of its own (duplicated once per
  /// fit(); needs MPI_THREAD_MULTIPLE), so the shards cross the network concurrently.
  multiple,
};

/// What each rank holds of the data set.
enum class MpiData {
  /// The whole data set on every rank, the same seeded order everywhere: global worker r·T + t
  /// takes its part of every global minibatch, so R ranks × T threads train exactly as one worker.
  replicated,
  /// A shard of its own on every rank, all of the same size (shard_of, or one file per rank):
  /// each rank's threads split a minibatch of batch_size rows of its shard, so the global step
  /// averages R × batch_size samples. Deterministic for a given rank count, but not the
  /// single-process run: which samples meet in a step depends on R.
  sharded,
};

/**
 * @brief The Communicator of a run over MPI ranks: each rank runs the same program with its own
 * thread team, and every step is one global step of all ranks × threads workers.
 *
 * Inside a rank the team reduces its gradients with its Aggregator (shared memory). The ranks of
 * one machine then sum their teams' sums in an MPI shared-memory window (MPI_Win_allocate_shared):
 * each copies its sum into its own slot and sums its slice of every slot, split over its threads,
 * in 0.55–0.80 of the time of an MPI_Allreduce between the same processes for the MLP's 203 530
 * floats, on 2 and 16 cores (benchmarks/RESULTS.md).
 * Between machines only these sums cross: each rank all-reduces its slice with the ranks of the
 * same local index on the other machines (MPI_Allreduce, MPI_SUM), so every machine sends the
 * bandwidth-optimal all-reduce of one gradient, split over its ranks. Without a window (`node` =
 * MPI_COMM_SELF, or machines with different numbers of ranks) each thread's shard of its team's
 * sum is all-reduced across all ranks. The step's scalars (loss, ‖g‖², samples, failures, stop
 * requests) cross in one more MPI_Allreduce of seven doubles, on thread 0, so every worker of every
 * rank takes the same decision at the same step. θ is broadcast from rank 0 before the first step.
 * Under Reproducible the gradients are summed in shard order instead (OrderedProcessGroup): a
 * partial sum passes from rank 0 to the last in pieces, and the total back, piece by piece; with
 * every rank on one machine through the window (each rank writes its slot, and a small message
 * says a piece is there), otherwise in messages (MPI_Isend, MPI_Recv).
 *
 * Global worker r·T + t (with T the threads of the ranks before, which may differ per rank)
 * takes its part of every global minibatch; every rank holds the whole data set and draws the
 * same seeded order, so R ranks × T threads train exactly as one worker on the whole minibatch.
 * For a data set too large for that, MpiData::sharded trains on a shard per rank.
 *
 * connect() compares the runs of all ranks (RunSignature: θ length, data size, batch, epochs,
 * max_steps, accumulation, seed, resumed step, shuffle, drop_last, weighting, on_non_finite,
 * clip_norm, the learning rate at three steps, the optimizer's and synchronizer's settings, a checksum of replicated
 * data, model and optimizer types; and this communicator's options and MPI thread level)
 * with all-reduces of their minima and maxima, and throws dptrain::invalid_argument on every rank,
 * naming what differs, instead of hanging in a collective later. A rank whose own checks failed
 * before (RunSignature::refused) makes every rank throw.
 *
 * The program initialises MPI itself, with MPI_Init_thread and at least MPI_THREAD_FUNNELED
 * (MPI_THREAD_MULTIPLE for MpiThreading::multiple), and finalises it after the last fit().
 *
 * @code
 * int provided = 0;
 * MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
 * dptrain::DataParallelTrainer trainer({.threads = 4, .batch_size = 256, .epochs = 10},
 *                                      dptrain::Momentum{.lr = 0.05}, dptrain::MpiCommunicator{});
 * trainer.fit(model, theta, data);  // every rank: the same θ afterwards
 * MPI_Finalize();
 * @endcode
 */
struct MpiCommunicator {
  MPI_Comm comm = MPI_COMM_WORLD;                   ///< the ranks that train together
  MpiThreading threading = MpiThreading::funneled;  ///< who calls MPI
  /// Compare a checksum of θ across the ranks every this many steps (and before the first), and
  /// fail the step on every rank if the replicas differ (0: never). A check costs one pass over θ
  /// on thread 0 and an all-reduce of two integers.
  Index check_replicas_every = 0;
  MpiData data = MpiData::replicated;  ///< what each rank holds of the data set
  /// The ranks of comm that share memory with this one and sum their gradients in a shared-memory
  /// window. MPI_COMM_NULL: this machine's (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED);
  /// MPI_COMM_SELF: none, every rank's shards cross through MPI_Allreduce; or a split of those
  /// (every machine's ranks in groups of the same size, say). The same kind on every rank.
  MPI_Comm node = MPI_COMM_NULL;

  /// One fit()'s view of the ranks. Its collectives are called as ProcessGroup says.
  class Group {
   public:
    [[nodiscard]] Index rank() const noexcept { return state_->rank; }
    [[nodiscard]] Index size() const noexcept { return state_->size; }
    [[nodiscard]] Index first_worker() const noexcept { return state_->first_worker; }
    [[nodiscard]] Index workers() const noexcept { return state_->workers; }

    /// θ from rank 0 to every rank (the thread that called fit()); θ is kept for the replica check.
    template <class Scalar>
    void broadcast(VectorMap<Scalar> theta) const {
      check(MPI_Bcast(theta.data(), count(theta.size()), type<Scalar>(), 0, state_->comm), "MPI_Bcast");
      state_->theta = {theta.data(), theta.size() * static_cast<Index>(sizeof(Scalar))};
      state_->reductions = 0;
    }

    /// Collective over the team: sums every thread's shard over the ranks, in place.
    template <class Scalar>
    void all_reduce(const TeamMember& me, VectorMap<Scalar> shard) const {
      State& s = *state_;
      if (s.locals > 1) {
        sum_on_machine(me, shard);
        return;
      }
      if (s.threading == MpiThreading::multiple) {
        all_reduce_on(s.thread_comms[static_cast<std::size_t>(me.rank)], shard.data(), shard.size());
        return;
      }
      s.shards[static_cast<std::size_t>(me.rank)] = {shard.data(), shard.size()};
      me.barrier();  // every shard is published
      if (me.rank == 0) {
        if (s.segments.empty()) plan_segments<Scalar>(s);
        for (const Segment& piece : s.segments)
          all_reduce_on(s.comm, static_cast<Scalar*>(s.shards[piece.shard].data) + piece.offset, piece.size);
      }
      me.barrier();  // every sum is back
    }

    /// Thread 0 of each rank: `values` summed over the ranks in place (Lars' and Lamb's group sums).
    void all_reduce_values(std::span<double> values) const {
      all_reduce_on(state_->comm, values.data(), static_cast<Index>(values.size()));
    }

    /// Thread 0 of each rank: the step's scalars summed over the ranks; every check_replicas_every
    /// reductions (one per step) also θ's checksum, a failure on every rank if they differ.
    void all_reduce(StepScalars& scalars) const {
      State& s = *state_;
      auto fields = scalars.to_array();
      check(MPI_Allreduce(MPI_IN_PLACE, fields.data(), static_cast<int>(fields.size()), MPI_DOUBLE, MPI_SUM, s.comm),
            "MPI_Allreduce");
      scalars = StepScalars::from_array(fields);
      if (s.check_every > 0 && s.reductions++ % s.check_every == 0 && !replicas_agree(s)) {
        scalars.failures += 1;  // the same on every rank: all leave at this step
        s.reason = "the replicas of theta differ across ranks (checksums compared every " +
                   std::to_string(s.check_every) +
                   " steps): a rank changed theta outside the trainer, or computes differently";
      }
    }

    /// Thread 0 of every rank but the first (OrderedProcessGroup): a piece of the sum (and the
    /// scalars, unless null) as the rank before passed them on.
    template <class Scalar>
    void receive_partial(VectorMap<Scalar> piece, StepScalars* scalars) const {
      State& s = *state_;
      const Piece mine{piece.data(), count(piece.size()), type<Scalar>()};
      if (!s.passes_in_window) {
        receive(mine, scalars, static_cast<int>(s.rank - 1), onward_tag, s.comm);
        return;
      }
      if (s.window == MPI_WIN_NULL) allocate_window(s, sizeof(Scalar));  // the first step: all ranks together
      copy_from_window(s, mine, s.passing.offset, scalars, s.rank - 1, onward_tag);
    }

    /// Thread 0 of every rank (OrderedProcessGroup): starts sending the piece (and the scalars)
    /// on to the next rank; on the last rank, where the sum is complete, back to the rank before.
    template <class Scalar>
    void pass_partial(VectorMap<Scalar> piece, const StepScalars* scalars) const {
      State& s = *state_;
      Passing& p = s.passing;
      const bool last = s.rank == s.size - 1;
      Passing::Sent& sent = p.sent.emplace_back();
      sent.piece = {piece.data(), count(piece.size()), type<Scalar>()};
      sent.offset = p.offset;
      p.offset += piece.size();
      if (scalars != nullptr) p.scalars = scalars->to_array();
      if (s.passes_in_window) {  // into this rank's slot; a message of the scalars (or none) says it is there
        if (s.window == MPI_WIN_NULL) allocate_window(s, sizeof(Scalar));
        std::copy_n(piece.data(), piece.size(),
                    static_cast<Scalar*>(s.slots[static_cast<std::size_t>(s.rank)]) + sent.offset);
        check(MPI_Win_sync(s.window), "MPI_Win_sync");
        const int fields = scalars != nullptr ? 7 : 0;
        for (Index to = last ? 0 : s.rank + 1; to < (last ? s.rank : s.rank + 2); ++to)
          check(MPI_Send(p.scalars.data(), fields, MPI_DOUBLE, static_cast<int>(to), last ? back_tag : onward_tag,
                         s.comm),
                "MPI_Send");
        return;
      }
      send(sent, scalars != nullptr ? p.scalars.data() : nullptr, static_cast<int>(last ? s.rank - 1 : s.rank + 1),
           last ? back_tag : onward_tag, s.comm);
    }

    /// Thread 0 of every rank (OrderedProcessGroup): once every piece passed since the last call,
    /// and `scalars`, hold the last rank's sums: read from its slot of the window, or, in
    /// messages, back along the ranks piece by piece (each rank receives a piece from the rank
    /// after it, once its own send of the piece is done, and sends it on to the rank before).
    void await_total(StepScalars& scalars) const {
      State& s = *state_;
      Passing& p = s.passing;
      p.offset = 0;
      if (s.passes_in_window) {  // each piece from the last rank's slot, once it says it is there
        if (s.rank < s.size - 1)
          for (std::size_t j = 0; j < p.sent.size(); ++j)
            copy_from_window(s, p.sent[j].piece, p.sent[j].offset, j == 0 ? &scalars : nullptr, s.size - 1, back_tag);
        p.sent.clear();
        return;
      }
      if (s.rank < s.size - 1) {
        for (std::size_t j = 0; j < p.sent.size(); ++j) {
          Passing::Sent& sent = p.sent[j];
          check(MPI_Wait(&sent.request, MPI_STATUS_IGNORE), "MPI_Wait");
          check(MPI_Wait(&sent.scalars_request, MPI_STATUS_IGNORE), "MPI_Wait");
          StepScalars* with = j == 0 ? &scalars : nullptr;  // the scalars come back with the first piece
          receive(sent.piece, with, static_cast<int>(s.rank + 1), back_tag, s.comm);
          if (with != nullptr) p.scalars = with->to_array();
          if (s.rank > 0)
            send(sent, with != nullptr ? p.scalars.data() : nullptr, static_cast<int>(s.rank - 1), back_tag, s.comm);
        }
      }
      for (Passing::Sent& sent : p.sent) {
        check(MPI_Wait(&sent.request, MPI_STATUS_IGNORE), "MPI_Wait");
        check(MPI_Wait(&sent.scalars_request, MPI_STATUS_IGNORE), "MPI_Wait");
      }
      p.sent.clear();
    }

    /// Thread 0 of every rank after a failure: "rank r failed: what()" for the lowest rank that
    /// threw (`mine`: what this rank threw, empty if nothing), or the replica check's finding.
    [[nodiscard]] std::string first_failure(std::string_view mine) const {
      const State& s = *state_;
      int first = mine.empty() ? std::numeric_limits<int>::max() : static_cast<int>(s.rank);
      check(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, s.comm), "MPI_Allreduce");
      if (first == std::numeric_limits<int>::max()) return s.reason;
      std::string text(first == s.rank ? mine : std::string_view{});
      int length = static_cast<int>(std::min<std::size_t>(text.size(), 4096));
      check(MPI_Bcast(&length, 1, MPI_INT, first, s.comm), "MPI_Bcast");
      text.resize(static_cast<std::size_t>(length));
      check(MPI_Bcast(text.data(), length, MPI_CHAR, first, s.comm), "MPI_Bcast");
      return "rank " + std::to_string(first) + " failed: " + text;
    }

   private:
    friend struct MpiCommunicator;
    struct Shard {
      void* data = nullptr;
      Index size = 0;
    };
    // A run of θ inside one shard of every rank's team: the unit of the funneled all-reduce.
    struct Segment {
      std::size_t shard = 0;  // this rank's shard holding it
      Index offset = 0, size = 0;
    };
    // A piece of a sum passed along the ranks (pass_partial), as MPI sees it.
    struct Piece {
      void* data = nullptr;
      int count = 0;
      MPI_Datatype type = MPI_DATATYPE_NULL;
    };
    // The pieces passed since the last await_total, and their sends in flight.
    struct Passing {
      struct Sent {
        Piece piece;
        Index offset = 0;  // in θ
        MPI_Request request = MPI_REQUEST_NULL, scalars_request = MPI_REQUEST_NULL;
      };
      std::vector<Sent> sent;
      Index offset = 0;                 // in θ, of the next piece
      std::array<double, 7> scalars{};  // the scalars in flight (sent with the first piece)
    };
    struct State {
      MPI_Comm comm = MPI_COMM_NULL;    // this fit()'s duplicate of the user's communicator
      MPI_Comm node = MPI_COMM_NULL;    // the ranks of this machine, when they share a window
      MPI_Comm across = MPI_COMM_NULL;  // with a window: the ranks of this local index on every machine
      MPI_Win window = MPI_WIN_NULL;    // with a window: every local rank's slot of θ's length
      std::vector<void*> slots;         // their addresses in this process
      Index locals = 1, local = 0;      // ranks sharing the window, and this rank's index there
      Index parameters = 0;             // θ's length
      MpiThreading threading = MpiThreading::funneled;
      Index check_every = 0;  // check_replicas_every
      Index reductions = 0;   // of the step's scalars since θ's broadcast
      Shard theta;            // θ as bytes, for the replica check
      std::string reason;     // why this group failed the step itself (replicas differ)
      Index rank = 0, size = 1, first_worker = 0, workers = 1;
      std::vector<Index> threads_per_rank;  // every rank's team size
      std::vector<Shard> shards;            // funneled: each thread's shard, for thread 0
      std::vector<Segment> segments;        // funneled: planned at the first step
      std::vector<MPI_Comm> thread_comms;   // multiple: one communicator per thread (of across, with a window)
      Passing passing;                      // receive_partial, pass_partial, await_total
      bool passes_in_window = false;        // every rank on this machine, in rank order: pieces pass through the window
      State() = default;
      State(const State&) = delete;
      State& operator=(const State&) = delete;
      ~State() {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized != 0) return;
        if (window != MPI_WIN_NULL) {
          MPI_Win_unlock_all(window);
          MPI_Win_free(&window);
        }
        for (MPI_Comm& c : thread_comms) MPI_Comm_free(&c);
        for (MPI_Comm* c : {&across, &node, &comm})
          if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
      }
    };

    // Collective over the team, with a window: the machine's sum of every rank's team sum, then
    // its slices all-reduced across machines, back in every thread's shard.
    template <class Scalar>
    void sum_on_machine(const TeamMember& me, VectorMap<Scalar> shard) const {
      State& s = *state_;
      if (s.window == MPI_WIN_NULL) {  // the first step: the ranks of the machine allocate it together
        me.barrier();
        if (me.rank == 0) allocate_window(s, sizeof(Scalar));
        me.barrier();
      }
      const auto slot = [&](Index k) { return static_cast<Scalar*>(s.slots[static_cast<std::size_t>(k)]); };
      const Index begin = ShardLayout<Scalar>{s.parameters, me.size}.shard(me.rank).begin;
      std::copy_n(shard.data(), shard.size(), slot(s.local) + begin);
      machine_barrier(me, /*waits_for_slowest=*/true);
      // This rank's slice of the machine's sum, split over its threads, in the same order of
      // slots on every rank; written to this rank's own slot, which no other rank reads yet.
      const ShardLayout<Scalar> slices{s.parameters, s.locals};
      const IndexRange slice = slices.shard(s.local);
      const IndexRange part = ShardLayout<Scalar>{slice.size, me.size}.shard(me.rank);
      constexpr Index block = 1024;  // a sum that stays in L1 while the slots stream past
      Eigen::Array<Scalar, block, 1> sum;
      for (Index i = slice.begin + part.begin; i < slice.begin + part.end(); i += block) {
        const Index n = std::min(block, slice.begin + part.end() - i);
        sum.head(n) = Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>(slot(0) + i, n);
        for (Index k = 1; k < s.locals; ++k)
          sum.head(n) += Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>(slot(k) + i, n);
        Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>(slot(s.local) + i, n) = sum.head(n);
      }
      if (s.across != MPI_COMM_NULL) {  // other machines: the same slice of theirs
        if (s.threading == MpiThreading::multiple) {
          all_reduce_on(s.thread_comms[static_cast<std::size_t>(me.rank)], slot(s.local) + slice.begin + part.begin,
                        part.size);
        } else {
          me.barrier();
          if (me.rank == 0) all_reduce_on(s.across, slot(s.local) + slice.begin, slice.size);
          me.barrier();
        }
      }
      machine_barrier(me);
      // Every thread's shard back from the slots of the slices it spans.
      const IndexRange mine{begin, shard.size()};
      for (Index k = 0; k < s.locals; ++k) {
        const IndexRange owned = slices.shard(k);
        const Index from = std::max(owned.begin, mine.begin), to = std::min(owned.end(), mine.end());
        if (from < to) std::copy(slot(k) + from, slot(k) + to, shard.data() + (from - mine.begin));
      }
      machine_barrier(me);  // no rank writes its slot at the next step while another still reads it
    }

    // The team, then thread 0 with the machine's other ranks: every write to the window before
    // it is seen by every read after it. Where it waits for the slowest rank's workers, thread 0's
    // time in MPI_Barrier is a wait, as the other threads' time in the team's barrier is.
    void machine_barrier(const TeamMember& me, bool waits_for_slowest = false) const {
      const State& s = *state_;
      me.barrier();
      if (me.rank == 0) {
        const bool timed = waits_for_slowest && me.waited != nullptr;
        const auto arrived = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        check(MPI_Win_sync(s.window), "MPI_Win_sync");
        check(MPI_Barrier(s.node), "MPI_Barrier");
        check(MPI_Win_sync(s.window), "MPI_Win_sync");
        if (timed) *me.waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
      }
      me.barrier();
    }

    // Thread 0 of every rank of the machine: a slot of θ's length each, in one shared window.
    static void allocate_window(State& s, std::size_t scalar_bytes) {
      MPI_Info info = MPI_INFO_NULL;
      check(MPI_Info_create(&info), "MPI_Info_create");
      MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each slot in its own rank's memory
      void* base = nullptr;
      const auto bytes = static_cast<MPI_Aint>(static_cast<std::size_t>(s.parameters) * scalar_bytes);
      const int status = MPI_Win_allocate_shared(bytes, static_cast<int>(scalar_bytes), info, s.node, &base, &s.window);
      MPI_Info_free(&info);
      check(status, "MPI_Win_allocate_shared");
      s.slots.resize(static_cast<std::size_t>(s.locals));
      for (Index k = 0; k < s.locals; ++k) {
        MPI_Aint size = 0;
        int unit = 0;
        check(MPI_Win_shared_query(s.window, static_cast<int>(k), &size, &unit, &s.slots[static_cast<std::size_t>(k)]),
              "MPI_Win_shared_query");
      }
      check(MPI_Win_lock_all(MPI_MODE_NOCHECK, s.window), "MPI_Win_lock_all");
    }

    // Ranks with other thread counts cut θ into other shards: cut it at every rank's shard
    // boundaries, so that each piece lies in one shard everywhere and the ranks' calls match.
    template <class Scalar>
    static void plan_segments(State& s) {
      Index n = 0;
      std::vector<Index> begins;
      for (const Shard& shard : s.shards) {
        begins.push_back(n);
        n += shard.size;
      }
      std::vector<Index> cuts{0, n};
      for (const Index threads : s.threads_per_rank)
        for (Index t = 0; t < threads; ++t) cuts.push_back(ShardLayout<Scalar>{n, threads}.shard(t).begin);
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      std::size_t shard = 0;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        while (cuts[i] >= begins[shard] + s.shards[shard].size) ++shard;
        s.segments.push_back({shard, cuts[i] - begins[shard], cuts[i + 1] - cuts[i]});
      }
    }

    // Every rank: whether θ's bytes hash alike everywhere (max of h and of ~h gives max and min).
    static bool replicas_agree(const State& s) {
      const auto* bytes = static_cast<const unsigned char*>(s.theta.data);
      std::uint64_t h = 0x243F6A8885A308D3ULL;
      for (Index i = 0; i < s.theta.size; i += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes + i, static_cast<std::size_t>(std::min<Index>(8, s.theta.size - i)));
        h = (h ^ word) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
      }
      std::array<unsigned long long, 2> high = {h, ~h};
      check(MPI_Allreduce(MPI_IN_PLACE, high.data(), 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, s.comm), "MPI_Allreduce");
      return high[0] == ~high[1];
    }

    // The tags of a sum passed along the ranks: onward while it grows, back once it is complete.
    static constexpr int onward_tag = 17, back_tag = 18;

    // A piece (and the scalars, unless null) from rank `from`, in the order they were sent.
    static void receive(const Piece& piece, StepScalars* scalars, int from, int tag, MPI_Comm comm) {
      check(MPI_Recv(piece.data, piece.count, piece.type, from, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
      if (scalars == nullptr) return;
      std::array<double, 7> fields{};
      check(MPI_Recv(fields.data(), 7, MPI_DOUBLE, from, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
      *scalars = StepScalars::from_array(fields);
    }
    // A piece from rank k's slot of the window, at `offset` in θ, once k's message (the scalars,
    // or none) says it is there.
    static void copy_from_window(State& s, const Piece& piece, Index offset, StepScalars* scalars, Index k, int tag) {
      std::array<double, 7> fields{};
      check(MPI_Recv(fields.data(), scalars != nullptr ? 7 : 0, MPI_DOUBLE, static_cast<int>(k), tag, s.comm,
                     MPI_STATUS_IGNORE),
            "MPI_Recv");
      check(MPI_Win_sync(s.window), "MPI_Win_sync");
      int bytes = 0;
      MPI_Type_size(piece.type, &bytes);
      const auto* from = static_cast<const char*>(s.slots[static_cast<std::size_t>(k)]) + offset * bytes;
      std::memcpy(piece.data, from, static_cast<std::size_t>(piece.count) * static_cast<std::size_t>(bytes));
      if (scalars != nullptr) *scalars = StepScalars::from_array(fields);
    }

    // Starts sending a piece (and seven doubles of scalars, unless null) to rank `to`.
    static void send(Passing::Sent& sent, const double* scalars, int to, int tag, MPI_Comm comm) {
      check(MPI_Wait(&sent.request, MPI_STATUS_IGNORE), "MPI_Wait");  // its last send is done
      check(MPI_Isend(sent.piece.data, sent.piece.count, sent.piece.type, to, tag, comm, &sent.request), "MPI_Isend");
      if (scalars == nullptr) return;
      check(MPI_Wait(&sent.scalars_request, MPI_STATUS_IGNORE), "MPI_Wait");
      check(MPI_Isend(scalars, 7, MPI_DOUBLE, to, tag, comm, &sent.scalars_request), "MPI_Isend");
    }

    template <class Scalar>
    static MPI_Datatype type() noexcept {
      static_assert(std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>);
      return std::is_same_v<Scalar, float> ? MPI_FLOAT : MPI_DOUBLE;
    }
    static int count(Index n) {
      if (n > static_cast<Index>(std::numeric_limits<int>::max()))
        throw error("dptrain::MpiCommunicator: a message of more than 2^31 values");
      return static_cast<int>(n);
    }
    template <class Scalar>
    static void all_reduce_on(MPI_Comm comm, Scalar* data, Index n) {
      if (n == 0) return;
      check(MPI_Allreduce(MPI_IN_PLACE, data, count(n), type<Scalar>(), MPI_SUM, comm), "MPI_Allreduce");
    }
    static void check(int status, const char* call) {
      if (status != MPI_SUCCESS) throw error(std::string("dptrain::MpiCommunicator: ") + call + " failed");
    }

    std::shared_ptr<State> state_ = std::make_shared<State>();
  };

  /**
   * @brief The ranks' group for one fit() of `threads` threads on this rank; collective over comm.
   * @throws dptrain::invalid_argument on every rank when the ranks' runs differ, or when MPI was
   *         not initialised with the thread support `threading` needs
   */
  [[nodiscard]] Group connect(Index threads, const RunSignature& run) const {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0)
      throw invalid_argument("dptrain::MpiCommunicator: MPI is not initialised (call MPI_Init_thread first)");
    Group group;
    Group::State& s = *group.state_;
    Group::check(MPI_Comm_dup(comm, &s.comm), "MPI_Comm_dup");
    s.threading = threading;
    int rank = 0, size = 1;
    MPI_Comm_rank(s.comm, &rank);
    MPI_Comm_size(s.comm, &size);
    s.rank = rank;
    s.size = size;
    // Global workers: this rank's first is the sum of the threads of the ranks before it.
    long long mine = threads, before = 0, all = 0;
    Group::check(MPI_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, s.comm), "MPI_Exscan");
    Group::check(MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, s.comm), "MPI_Allreduce");
    // Sharded: a rank's threads split its own minibatch, numbered as if alone.
    const bool whole = data == MpiData::replicated;
    s.first_worker = whole && rank > 0 ? static_cast<Index>(before) : 0;
    s.workers = whole ? static_cast<Index>(all) : threads;
    std::vector<long long> teams(static_cast<std::size_t>(size));
    Group::check(MPI_Allgather(&mine, 1, MPI_LONG_LONG, teams.data(), 1, MPI_LONG_LONG, s.comm), "MPI_Allgather");
    s.threads_per_rank.assign(teams.begin(), teams.end());
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    compare_runs(s.comm, run, provided);
    // Every check below sees the same values on every rank, once compared: all ranks throw alike.
    const int needed = threading == MpiThreading::multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
    if (provided<needed&& * std::max_element(teams.begin(), teams.end())> 1)
      throw invalid_argument(std::string("dptrain::MpiCommunicator: threading needs MPI initialised with ") +
                             (needed == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_FUNNELED") +
                             " (MPI_Init_thread), got a lower thread level");
    if (check_replicas_every < 0)
      throw invalid_argument("dptrain::MpiCommunicator: check_replicas_every must be >= 0 (0: never), got " +
                             std::to_string(check_replicas_every));
    s.check_every = check_replicas_every;
    s.shards.resize(static_cast<std::size_t>(threads));
    s.parameters = run.parameters;
    if (threading == MpiThreading::multiple &&
        std::any_of(teams.begin(), teams.end(), [&](long long t) { return t != mine; }))
      throw invalid_argument(
          "dptrain::MpiCommunicator: MpiThreading::multiple needs the same thread count on every rank (each "
          "thread's shard crosses on its own); use MpiThreading::funneled");
    find_machine(s);
    // One machine with every rank, in rank order: Reproducible's sum passes through the window.
    int in_window = s.node != MPI_COMM_NULL && s.locals == s.size && s.local == s.rank ? 1 : 0;
    Group::check(MPI_Allreduce(MPI_IN_PLACE, &in_window, 1, MPI_INT, MPI_MIN, s.comm), "MPI_Allreduce");
    s.passes_in_window = in_window == 1;
    // The communicator on which the gradients cross MPI: between machines only, with a window.
    const MPI_Comm crossing = s.locals > 1 ? s.across : s.comm;
    if (threading == MpiThreading::multiple && crossing != MPI_COMM_NULL) {
      s.thread_comms.assign(static_cast<std::size_t>(threads), MPI_COMM_NULL);
      for (MPI_Comm& c : s.thread_comms) Group::check(MPI_Comm_dup(crossing, &c), "MPI_Comm_dup");
    }
    return group;
  }

 private:
  // Collective over s.comm: the ranks that share a window with this one (s.node, s.locals,
  // s.local) and, with several machines, this local index's ranks on all of them (s.across). No
  // window unless every machine has the same number of ranks, more than one: slice k of every
  // machine must cross with slice k of the others.
  void find_machine(Group::State& s) const {
    MPI_Comm machine = MPI_COMM_NULL;
    if (node == MPI_COMM_NULL)
      Group::check(MPI_Comm_split_type(s.comm, MPI_COMM_TYPE_SHARED, static_cast<int>(s.rank), MPI_INFO_NULL, &machine),
                   "MPI_Comm_split_type");
    else if (node != MPI_COMM_SELF)
      Group::check(MPI_Comm_dup(node, &machine), "MPI_Comm_dup");
    int size = 1, local = 0;
    if (machine != MPI_COMM_NULL) {
      MPI_Comm_size(machine, &size);
      MPI_Comm_rank(machine, &local);
    }
    std::array<int, 2> extremes = {size, -size};  // the most and the fewest ranks of a machine
    Group::check(MPI_Allreduce(MPI_IN_PLACE, extremes.data(), 2, MPI_INT, MPI_MAX, s.comm), "MPI_Allreduce");
    if (extremes[0] == 1 || extremes[0] != -extremes[1]) {
      if (machine != MPI_COMM_NULL) MPI_Comm_free(&machine);
      return;
    }
    s.node = machine;
    s.locals = size;
    s.local = local;
    if (s.size > size)
      Group::check(MPI_Comm_split(s.comm, local, static_cast<int>(s.rank), &s.across), "MPI_Comm_split");
  }

  // Every rank: the minimum and maximum of each field over the ranks; a field whose two differ
  // is named in the exception, thrown on every rank alike.
  void compare_runs(MPI_Comm comm, const RunSignature& run, int thread_level) const {
    const auto value = [](auto v) { return static_cast<std::uint64_t>(v); };
    const std::uint64_t node_kind = node == MPI_COMM_NULL ? 0 : node == MPI_COMM_SELF ? 1 : 2;
    RunSignature compared = run;
    if (data == MpiData::sharded) compared.data_checksum = {};  // every rank's shard is its own
    RunAgreement agreement(compared,
                           data == MpiData::sharded
                               ? "data set size (every rank's shard must have as many rows: see shard_of)"
                               : "data set size",
                           {{"MpiCommunicator::threading", value(threading)},
                            {"MpiCommunicator::check_replicas_every", value(check_replicas_every)},
                            {"MpiCommunicator::data", value(data)},
                            {"MpiCommunicator::node (MPI_COMM_NULL, MPI_COMM_SELF or a communicator)", node_kind},
                            {"MPI thread level", value(thread_level)}});
    const auto reduce = [&](std::vector<std::uint64_t>& values, MPI_Op op) {
      Group::check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T, op, comm),
                   "MPI_Allreduce");
    };
    reduce(agreement.low(), MPI_MIN);
    reduce(agreement.high(), MPI_MAX);
    agreement.check("dptrain::MpiCommunicator");
  }
};

static_assert(Communicator<MpiCommunicator>);

}  // namespace dptrain
