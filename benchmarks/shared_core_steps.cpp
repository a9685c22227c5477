// SPDX-License-Identifier: MIT
// shared_core_steps: which schedule of a synchronous step keeps T threads no slower than one
// when another process holds a core (issue 16)? The same MLP step (784-256-10, batch 256,
// momentum, Fashion-MNIST or generated data of its shape) under four schedules, one epoch each,
// on a quiet machine and then beside a forked busy loop, in alternating rounds:
//   lockstep     each thread its 1/T of the batch, a barrier, its 1/T of θ, a barrier: the
//                trainer's schedule (dptrain::TeamBarrier, its default 50 µs spin)
//   claimed      the batch in C chunks and θ in blocks, each taken by whichever thread is free,
//                with the same two barriers: work moves to the thread that runs
//   backup       claimed, without barriers: a step ends when its chunks are done, and a thread
//                with nothing left computes again a chunk that another has held for longer than
//                K chunk times; the first result wins (backup workers). A thread that was
//                descheduled finds the step gone on without it.
//   independent  each thread trains its own copy on its share, exchanging nothing: the ceiling
// Every schedule sums a step's chunks in chunk order, so claimed and backup give the same θ bit
// for bit whoever computed what; the program checks that and fails otherwise.
//   OMP_WAIT_POLICY=passive benchmarks/shared_core_steps [--rounds R] [--threads T] [--chunks C]
//       [--stall K] [--spin-us S] [--samples N]
// Defaults: 7 rounds, 2 threads, 4 chunks, K = 1, backup's idle threads spin S = 0 µs before they
// sleep, 60000 samples. OMP_WAIT_POLICY=passive, as docs/trainer.md advises on shared machines,
// keeps OpenMP's pool threads from spinning between the schedules' parallel regions. Prints per scenario the median
// seconds per epoch and the median of the rounds' ratios to lockstep on one thread.
#include <dptrain/dptrain.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/fashion_mnist_data.hpp"
#include "common/machine.hpp"

namespace {

using dptrain::Index;
using Scalar = float;
using Clock = std::chrono::steady_clock;
using Buffer = dptrain::AlignedBuffer<Scalar>;

struct Options {
  int rounds = 7;
  int threads = 2;
  int chunks = 4;
  double stall = 1.0;
  double spin_us = 0;
  Index samples = 60000;
};

// One epoch's problem: the model, the data in one shuffled order, and θ to start from.
struct Problem {
  dptrain::Mlp<Scalar> model{{784, 256, 10}};
  dptrain::DenseDataset<Scalar, dptrain::Label> data;
  std::vector<Index> order;
  Index batch = 256;
  Index steps = 0;
  dptrain::Vector<Scalar> theta0;
  Scalar lr = 0.05f, momentum = 0.9f;

  [[nodiscard]] Index parameters() const { return theta0.size(); }
  // Rows [begin, end) of step s's minibatch.
  [[nodiscard]] std::span<const Index> rows(Index s, Index begin, Index end) const {
    return {order.data() + s * batch + begin, static_cast<std::size_t>(end - begin)};
  }
  // Momentum on elements [begin, end): v = μv + g/m, θ_out = θ_in − lr·v (θ_out may be θ_in).
  void update(Index begin, Index end, const Scalar* g, Scalar* v, const Scalar* in, Scalar* out) const {
    const Index count = end - begin;
    Array velocity(v + begin, count);
    velocity = momentum * velocity + ConstArray(g + begin, count) * (Scalar(1) / static_cast<Scalar>(batch));
    Array(out + begin, count) = ConstArray(in + begin, count) - lr * velocity;
  }

  using Array = Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>;
  using ConstArray = Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>;
};

// Σ of chunk buffers in chunk order into `out`, elements [begin, end).
void sum_chunks(const std::vector<const Scalar*>& chunks, Index begin, Index end, Scalar* out) {
  const Index count = end - begin;
  Problem::Array sum(out + begin, count);
  sum = Problem::ConstArray(chunks[0] + begin, count);
  for (std::size_t c = 1; c < chunks.size(); ++c) sum += Problem::ConstArray(chunks[c] + begin, count);
}

// Hands out indices 0 … n − 1 of a step once each; a thread still on an older step gets none.
class Claims {
 public:
  explicit Claims(Index n) : n_(n) {}
  // The next index of step `step`, or −1 when all are taken or the step has passed.
  Index next(Index step) {
    long v = word_.load();
    for (;;) {
      const long tag = v >> 20, taken = v & mask;
      if (tag > step) return -1;
      const long want = tag < step ? (long(step) << 20) | 1 : v + 1;
      if (tag == step && taken >= n_) return -1;
      if (word_.compare_exchange_weak(v, want)) return tag < step ? 0 : taken;
    }
  }

 private:
  static constexpr long mask = (1 << 20) - 1;
  Index n_;
  std::atomic<long> word_{-(1L << 20)};  // step −1, none taken
};

// What an idle thread of the backup schedule waits for: a chunk or a step done. It spins for
// `spin`, then sleeps on a futex (not sched_yield: beside a busy process each yield hands it the
// core for a time slice), at most until `timeout`, when a held chunk would count as stalled. As
// TeamBarrier does, a wait that outlasts 0.5 ms (a thread is being descheduled) makes every wait
// of the next 10 ms sleep at once. (detail::sleep_while_for, which BackupWorkers uses too, gives the timeout.)
class Events {
 public:
  explicit Events(std::chrono::nanoseconds spin) : spin_(spin) {}
  [[nodiscard]] std::uint32_t seen() const { return word_.load(); }
  void signal() {
    word_.fetch_add(1);
    dptrain::detail::wake_all(word_);
  }
  void wait(std::uint32_t seen, std::chrono::nanoseconds timeout) {
    const Clock::time_point start = Clock::now();
    const bool held = start.time_since_epoch().count() < held_until_.load(std::memory_order_relaxed);
    const Clock::time_point spin_end = start + (held ? std::chrono::nanoseconds(0) : spin_);
    while (word_.load() == seen) {
      if (Clock::now() < spin_end) {
        dptrain::detail::cpu_relax();
        continue;
      }
      dptrain::detail::sleep_while_for(word_, seen, timeout);
      break;
    }
    const Clock::time_point end = Clock::now();
    if (spin_.count() > 0 && end - start > std::chrono::microseconds(500))
      held_until_.store((end + std::chrono::milliseconds(10)).time_since_epoch().count(), std::memory_order_relaxed);
  }

 private:
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  std::atomic<std::uint32_t> word_{0};
  std::chrono::nanoseconds spin_;
  std::atomic<Clock::rep> held_until_{0};  // waits sleep at once until then (the clock's ticks)
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// --- the schedules: each trains one epoch from p.theta0 into `theta` and returns its seconds ---

// A barrier schedule's buffers: one gradient per part (thread or chunk), their sum, the velocity.
struct StepBuffers {
  StepBuffers(Index n, int count) : sum(n), velocity(n) {
    velocity.map().setZero();
    for (int i = 0; i < count; ++i) grads.emplace_back(n);
    for (const Buffer& g : grads) parts.push_back(g.data());
  }
  std::vector<Buffer> grads;
  std::vector<const Scalar*> parts;
  Buffer sum, velocity;
};

double lockstep(const Problem& p, int threads, dptrain::Vector<Scalar>& theta) {
  const Index n = p.parameters();
  theta = p.theta0;
  StepBuffers b(n, threads);
  dptrain::TeamBarrier barrier(std::chrono::microseconds(50));
  const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    const Index me = dptrain::detail::omp_thread_id();
    auto ws = p.model.make_workspace(p.batch);
    auto buffer = p.data.make_buffer(p.batch);
    const Index lo = p.batch * me / threads, hi = p.batch * (me + 1) / threads;
    const Index first = n * me / threads, last = n * (me + 1) / threads;
    for (Index s = 0; s < p.steps; ++s) {
      b.grads[me].map().setZero();
      p.model.loss_and_gradient(theta, p.data.gather(p.rows(s, lo, hi), buffer), b.grads[me].map(), ws);
      barrier.arrive_and_wait(threads);
      sum_chunks(b.parts, first, last, b.sum.data());
      p.update(first, last, b.sum.data(), b.velocity.data(), theta.data(), theta.data());
      barrier.arrive_and_wait(threads);
    }
  }
  return seconds_since(start);
}

constexpr Index update_blocks = 32;

double claimed(const Problem& p, int threads, int chunks, dptrain::Vector<Scalar>& theta) {
  const Index n = p.parameters(), block = (n + update_blocks - 1) / update_blocks;
  theta = p.theta0;
  StepBuffers b(n, chunks);
  Claims chunk_claims(chunks), block_claims(update_blocks);
  dptrain::TeamBarrier barrier(std::chrono::microseconds(50));
  const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    auto ws = p.model.make_workspace(p.batch);
    auto buffer = p.data.make_buffer(p.batch);
    for (Index s = 0; s < p.steps; ++s) {
      for (Index c; (c = chunk_claims.next(s)) >= 0;) {
        b.grads[c].map().setZero();
        p.model.loss_and_gradient(theta,
                                  p.data.gather(p.rows(s, p.batch * c / chunks, p.batch * (c + 1) / chunks), buffer),
                                  b.grads[c].map(), ws);
      }
      barrier.arrive_and_wait(threads);
      for (Index k; (k = block_claims.next(s)) >= 0;) {
        const Index first = k * block, last = std::min(n, first + block);
        sum_chunks(b.parts, first, last, b.sum.data());
        p.update(first, last, b.sum.data(), b.velocity.data(), theta.data(), theta.data());
      }
      barrier.arrive_and_wait(threads);
    }
  }
  return seconds_since(start);
}

// The backup schedule's shared state. θ is kept in `versions` copies, step s reading copy
// s % versions and its update writing the next: a thread descheduled in the middle of a chunk
// may still read its step's copy while the others go on, for up to versions − 1 steps; beyond
// that the step that would overwrite the copy waits for it.
class Backup {
 public:
  Backup(const Problem& p, int threads, int chunks, double stall, std::chrono::nanoseconds spin)
      : p_(p),
        threads_(threads),
        chunks_(chunks),
        stall_(stall),
        block_((p.parameters() + update_blocks - 1) / update_blocks),
        chunk_claims_(chunks),
        block_claims_(update_blocks),
        state_(static_cast<std::size_t>(chunks)),
        held_since_(static_cast<std::size_t>(chunks)),
        pool_used_(static_cast<std::size_t>(chunks + threads)),
        readers_(versions),
        tag_(versions),
        events_(spin) {
    const Index n = p.parameters();
    for (int i = 0; i < chunks + threads; ++i) pool_.emplace_back(n);
    for (int v = 0; v < versions; ++v) theta_.emplace_back(n);
    theta_[0].map() = p.theta0;
    for (int v = 0; v < versions; ++v) tag_[static_cast<std::size_t>(v)] = v == 0 ? 0 : -1;
    for (auto& s : state_) s = -1;
    velocity_ = Buffer(n);
    velocity_.map().setZero();
    sum_ = Buffer(n);
  }

  double run(dptrain::Vector<Scalar>& theta) {
    const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads_)
    work();
    const double seconds = seconds_since(start);
    theta = theta_[static_cast<std::size_t>(p_.steps % versions)].map();
    return seconds;
  }

  [[nodiscard]] long duplicates() const {
    return duplicates_.load();
  }

 private:
  static constexpr int versions = 8;
  static constexpr long held = 0xffff;  // a state's low bits while its chunk is being computed

  // A chunk's state: the step in the high bits; in the low 16 bits `held`, or the pool buffer
  // that holds its result once done.
  static long holding(Index s) {
    return (long(s) << 16) | held;
  }

  void work() {
    auto ws = p_.model.make_workspace(p_.batch);
    auto buffer = p_.data.make_buffer(p_.batch);
    int scratch = take();
    std::vector<const Scalar*> parts(static_cast<std::size_t>(chunks_));
    for (;;) {
      const Index s = current_.load();
      if (s >= p_.steps) break;
      for (Index c; (c = chunk_claims_.next(s)) >= 0;) {
        held_since_[c] = now();
        state_[c] = holding(s);
        compute(s, c, scratch, ws, buffer);
      }
      if (!await_chunks(s, scratch, ws, buffer)) continue;
      for (Index b; (b = block_claims_.next(s)) >= 0;) {
        update_block(s, b, parts);
        if (blocks_done_.fetch_add(1) + 1 == (long(s) << 16) + update_blocks) complete(s);
      }
      for (std::uint32_t seen = events_.seen(); current_.load() == s; seen = events_.seen())
        events_.wait(seen, std::chrono::milliseconds(1));
    }
    pool_used_[static_cast<std::size_t>(scratch)] = 0;
  }

  // Chunk c of step s into the pool buffer `scratch`; if this is the first result, it becomes
  // the chunk's and this thread takes another scratch buffer.
  template <class Workspace, class GatherBuffer>
  void compute(Index s, Index c, int& scratch, Workspace& ws, GatherBuffer& buffer) {
    const std::size_t v = static_cast<std::size_t>(s % versions);
    readers_[v].fetch_add(1);
    if (tag_[v].load() != s) {  // the step is long gone: its θ copy is being rewritten
      readers_[v].fetch_sub(1);
      return;
    }
    Buffer& out = pool_[static_cast<std::size_t>(scratch)];
    out.map().setZero();
    const long started = now();
    p_.model.loss_and_gradient(theta_[v].map(),
                               p_.data.gather(p_.rows(s, p_.batch * c / chunks_, p_.batch * (c + 1) / chunks_), buffer),
                               out.map(), ws);
    readers_[v].fetch_sub(1);
    chunk_nanoseconds_.store(now() - started, std::memory_order_relaxed);
    long expected = holding(s);
    if (state_[c].compare_exchange_strong(expected, (long(s) << 16) | scratch)) {
      scratch = take();
      events_.signal();
    }
  }

  // Waits until every chunk of step s is done, computing again any that stalls; false if the
  // step went on without this thread.
  template <class Workspace, class GatherBuffer>
  bool await_chunks(Index s, int& scratch, Workspace& ws, GatherBuffer& buffer) {
    for (;;) {
      const std::uint32_t seen = events_.seen();
      if (current_.load() != s) return false;
      const long t = now();
      const long limit = static_cast<long>(stall_ * static_cast<double>(chunk_nanoseconds_.load())) + 20'000;
      int done = 0;
      Index stalled = -1;
      long next_stall = limit;  // until the first held chunk counts as stalled
      for (Index c = 0; c < chunks_; ++c) {
        const long state = state_[c].load();
        if (state >> 16 != s) continue;  // not yet marked as held for this step
        if ((state & held) != held) {
          ++done;
        } else {
          const long held_for = t - held_since_[c].load();
          if (held_for > limit) stalled = c;
          next_stall = std::min(next_stall, limit - held_for);
        }
      }
      if (done == chunks_) return true;
      long since = stalled >= 0 ? held_since_[stalled].load() : 0;
      if (stalled >= 0 && held_since_[stalled].compare_exchange_strong(since, t)) {  // one copy at a time
        duplicates_.fetch_add(1);
        compute(s, stalled, scratch, ws, buffer);
      } else {
        events_.wait(seen, std::chrono::nanoseconds(std::max(next_stall, 1000L)));
      }
    }
  }

  // Block b of step s's update: θ's next copy from this one, the chunks' results summed in order.
  void update_block(Index s, Index b, std::vector<const Scalar*>& parts) {
    const Index n = p_.parameters(), first = b * block_, last = std::min(n, first + block_);
    for (Index c = 0; c < chunks_; ++c)
      parts[static_cast<std::size_t>(c)] = pool_[static_cast<std::size_t>(state_[c].load() & held)].data();
    sum_chunks(parts, first, last, sum_.data());
    p_.update(first, last, sum_.data(), velocity_.data(), theta_[static_cast<std::size_t>(s % versions)].data(),
              theta_[static_cast<std::size_t>((s + 1) % versions)].data());
  }

  // The thread that finished step s's last block: frees its results, makes sure no reader of
  // the θ copy that step s + 1 will write remains, and starts step s + 1.
  void complete(Index s) {
    for (Index c = 0; c < chunks_; ++c) pool_used_[static_cast<std::size_t>(state_[c].load() & held)] = 0;
    const std::size_t next_write = static_cast<std::size_t>((s + 2) % versions);
    tag_[next_write] = -1;
    while (readers_[next_write].load() != 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    tag_[static_cast<std::size_t>((s + 1) % versions)] = s + 1;
    blocks_done_ = long(s + 1) << 16;
    current_ = s + 1;
    events_.signal();
  }

  int take() {
    for (;;)
      for (std::size_t i = 0; i < pool_used_.size(); ++i) {
        int free = 0;
        if (pool_used_[i].compare_exchange_strong(free, 1)) return static_cast<int>(i);
      }
  }

  static long now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

  const Problem& p_;
  int threads_, chunks_;
  double stall_;
  Index block_;
  Claims chunk_claims_, block_claims_;
  std::vector<std::atomic<long>> state_, held_since_;
  std::vector<Buffer> pool_;
  std::vector<std::atomic<int>> pool_used_;
  std::vector<Buffer> theta_;
  std::vector<std::atomic<int>> readers_;
  std::vector<std::atomic<long>> tag_;
  Buffer velocity_, sum_;
  std::atomic<Index> current_{0};
  std::atomic<long> blocks_done_{0};
  std::atomic<long> chunk_nanoseconds_{0};
  std::atomic<long> duplicates_{0};
  Events events_;
};

double independent(const Problem& p, int threads) {
  const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    const Index me = dptrain::detail::omp_thread_id(), n = p.parameters();
    dptrain::Vector<Scalar> theta = p.theta0;
    Buffer velocity(n), grad(n);
    velocity.map().setZero();
    auto ws = p.model.make_workspace(p.batch);
    auto buffer = p.data.make_buffer(p.batch);
    const Index lo = p.batch * me / threads, hi = p.batch * (me + 1) / threads;
    for (Index s = 0; s < p.steps; ++s) {
      grad.map().setZero();
      p.model.loss_and_gradient(theta, p.data.gather(p.rows(s, lo, hi), buffer), grad.map(), ws);
      p.update(0, n, grad.data(), velocity.data(), theta.data(), theta.data());
    }
  }
  return seconds_since(start);
}

// --- the rounds ---------------------------------------------------------------------------------

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// A process that keeps one core busy, like `yes > /dev/null`; stopped by the destructor.
struct BusyNeighbour {
  pid_t pid = fork();
  BusyNeighbour() {
    if (pid == 0) {
      std::atomic<unsigned long> spins{0};
      for (;;) spins.fetch_add(1, std::memory_order_relaxed);
    }
  }
  ~BusyNeighbour() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

void scenario(const char* title, const Problem& p, const Options& o) {
  const std::vector<std::string> names = {"lockstep, 1 thread", "lockstep", "claimed", "backup", "independent"};
  std::vector<std::vector<double>> seconds(names.size()), ratios(names.size());
  long duplicates = 0;
  for (int r = 0; r < o.rounds; ++r) {
    dptrain::Vector<Scalar> one, claimed_theta, backup_theta, unused;
    std::vector<double> t(names.size());
    t[0] = lockstep(p, 1, one);
    t[1] = lockstep(p, o.threads, unused);
    t[2] = claimed(p, o.threads, o.chunks, claimed_theta);
    Backup backup(p, o.threads, o.chunks, o.stall, std::chrono::nanoseconds(std::llround(o.spin_us * 1e3)));
    t[3] = backup.run(backup_theta);
    duplicates += backup.duplicates();
    t[4] = independent(p, o.threads);
    if (claimed_theta != backup_theta) {
      std::fprintf(stderr, "shared_core_steps: claimed and backup trained different theta\n");
      std::exit(1);
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      seconds[i].push_back(t[i]);
      ratios[i].push_back(t[i] / t[0]);
    }
  }
  std::printf("\n## %s (%d rounds; backup computed %.1f chunks again per epoch)\n", title, o.rounds,
              static_cast<double>(duplicates) / o.rounds);
  std::printf("%-22s %12s %22s\n", "schedule", "s/epoch", "t / t(lockstep, 1)");
  for (std::size_t i = 0; i < names.size(); ++i)
    std::printf("%-22s %12.4f %22.3f\n", (names[i] + (i == 0 ? "" : ", " + std::to_string(o.threads))).c_str(),
                median(seconds[i]), median(ratios[i]));
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "shared_core_steps: %s\n"
      "usage: shared_core_steps [--rounds R] [--threads T] [--chunks C] [--stall K] [--spin-us S] [--samples N]\n",
      why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage(("no value after " + key).c_str());
    char* end = nullptr;
    const double value = std::strtod(argv[i + 1], &end);
    if (*end != '\0' || !(value > 0 || (value == 0 && key == "--spin-us")))
      usage(("not a positive number after " + key).c_str());
    if (key == "--rounds")
      o.rounds = static_cast<int>(value);
    else if (key == "--threads")
      o.threads = static_cast<int>(value);
    else if (key == "--chunks")
      o.chunks = static_cast<int>(value);
    else if (key == "--stall")
      o.stall = value;
    else if (key == "--spin-us")
      o.spin_us = value;
    else if (key == "--samples")
      o.samples = static_cast<Index>(value);
    else
      usage(("unknown option " + key).c_str());
  }
  if (o.chunks > 256) usage("--chunks must be at most 256");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Eigen::setNbThreads(1);  // the threads are the parallelism (Eigen's GEMM would start its own)
  Problem p;
  examples::FashionMnist fashion = examples::load_fashion_mnist();
  p.data = std::move(fashion.train);
  const Index n = std::min(o.samples, p.data.size());
  p.order.resize(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) p.order[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 rng(1);
  std::shuffle(p.order.begin(), p.order.end(), rng);
  p.steps = n / p.batch;
  p.theta0 = p.model.init_parameters(1);
  std::printf("CPU: %s; %u CPUs available; %d threads, %d chunks, stall after %.2f chunk times, spin %.1f us\n",
              examples::cpu_model().c_str(), std::thread::hardware_concurrency(), o.threads, o.chunks, o.stall,
              o.spin_us);
  scenario("quiet", p, o);
  {
    const BusyNeighbour busy;
    scenario("beside a busy process", p, o);
  }
}
