// SPDX-License-Identifier: MIT
// MpiCommunicator, run under mpiexec with 1, 2 or 3 ranks: R ranks × T threads take the step of
// one worker on the whole global minibatch.
#include <catch2/catch.hpp>
#include <mpi.h>
#include <omp.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "dptrain/mpi/mpi_communicator.hpp"
#include "support/data.hpp"
#include "support/worker_check.hpp"

using Catch::Matchers::Contains;
using dptrain::Index;

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}
bool multiple_supported() {
  int provided = 0;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_MULTIPLE;
}

// The ranks in pairs (0-1, 2-3, …), as if each pair were a machine: with 4 ranks, two machines
// of two share windows and cross between them; with 3, machines of 2 and 1 share none.
struct Pairs {
  MPI_Comm comm = MPI_COMM_NULL;
  Pairs() { MPI_Comm_split(MPI_COMM_WORLD, world_rank() / 2, world_rank(), &comm); }
  Pairs(const Pairs&) = delete;
  Pairs& operator=(const Pairs&) = delete;
  ~Pairs() { MPI_Comm_free(&comm); }
};

struct Boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws on one rank from its third gradient call on.
struct FailingOnRank : dptrain::LinearRegression<double> {
  int rank = 0;
  mutable std::atomic<Index> calls{0};
  FailingOnRank(Index inputs, int failing_rank) : LinearRegression(inputs), rank(failing_rank) {}
  double loss_and_gradient(dptrain::ConstVectorRef<double> theta, const batch_type& batch,
                           dptrain::VectorRef<double> grad, workspace_type& ws) const {
    if (world_rank() == rank && calls.fetch_add(1) + 1 >= 3) throw Boom("boom on rank " + std::to_string(rank));
    return LinearRegression::loss_and_gradient(theta, batch, grad, ws);
  }
};

// One process's equivalent of training on `full`'s shards (shard_of) with minibatches of `batch`
// on every rank, unshuffled: the ranks' k-th minibatches side by side, as one minibatch of
// ranks × batch rows. Rank r's local row p is row r + p·ranks of the full set.
template <class Data>
Data sharded_minibatches_side_by_side(const Data& full, Index batch) {
  const Index ranks = world_size(), shard_rows = full.size() / ranks;
  std::vector<Index> order;
  for (Index first = 0; first < shard_rows; first += batch)
    for (Index r = 0; r < ranks; ++r)
      for (Index p = first; p < std::min(first + batch, shard_rows); ++p) order.push_back(r + p * ranks);
  return dptrain::subset(full, order);
}

struct StopAtStep {
  int rank = 0;
  Index step = 4;
  bool on_step_end(dptrain::TrainContext<double>& ctx) { return world_rank() == rank && ctx.step == step; }
};

}  // namespace

TEST_CASE("MpiCommunicator: R ranks × T threads match one worker on the whole minibatch", "[mpi]") {
  // Threads per rank: all 1, all 2, or rank r with r + 1 (machines differ).
  const int layout = GENERATE(0, 1, 2);
  const Index threads = layout == 0 ? 1 : layout == 1 ? 2 : world_rank() + 1;
  const auto threading = GENERATE(dptrain::MpiThreading::funneled, dptrain::MpiThreading::multiple);
  if (threading == dptrain::MpiThreading::multiple && (!multiple_supported() || layout == 2)) return;
  // Which ranks share a window: this machine's (all of them here), none, or pairs.
  const int nodes = GENERATE(0, 1, 2);
  const Pairs pairs;
  const MPI_Comm node = nodes == 0 ? MPI_COMM_NULL : nodes == 1 ? MPI_COMM_SELF : pairs.comm;
  // 45 samples, batch 8: every epoch ends in a partial minibatch; clipping and accumulation on.
  const dptrain::Index accumulation = GENERATE(1, 2);
  const double clip = GENERATE(0.0, 0.5);
  const auto data = test::cluster_data<double>(45, 5, 3, 11);
  const dptrain::Mlp<double> model({5, 7, 3});
  const dptrain::Adam adam{.lr = 0.01};
  dptrain::TrainerOptions options{
      .threads = 1, .batch_size = 8, .epochs = 3, .seed = 5, .accumulation_steps = accumulation, .clip_norm = clip};
  dptrain::Vector<double> expected = model.init_parameters(3);
  dptrain::DataParallelTrainer(options, adam).fit(model, expected, data);  // one process, one worker

  options.threads = threads;
  dptrain::Vector<double> theta = model.init_parameters(3);
  if (world_rank() != 0) theta.setZero();  // rank 0's θ is broadcast
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{.threading = threading, .node = node})
          .fit(model, theta, data);
  CHECK(report.samples == 3 * 45);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
}

TEST_CASE("MpiCommunicator: ranks that run different configurations all get an error naming it", "[mpi]") {
  if (world_size() < 2) return;
  const auto data = test::linear_data<double>(40, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  const Index batch = world_rank() == 1 ? 10 : 8;
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = batch}, dptrain::Sgd{.lr = 0.01},
                                                 dptrain::MpiCommunicator{})
                        .fit(model, theta, data),
                    Contains("batch_size differ"));
}

TEST_CASE("MpiCommunicator: other data with as many rows on one rank is refused on every rank", "[mpi]") {
  if (world_size() < 2) return;
  const dptrain::SoftmaxRegression<float> model(4, 3);
  dptrain::Vector<float> theta = model.init_parameters();
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 8};
  // Replicated: rank 1's draws differ (a seed), and so does one value.
  auto data = test::cluster_data<float>(40, 4, 3, world_rank() == 1 ? 2 : 1);
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.1}, dptrain::MpiCommunicator{})
                        .fit(model, theta, data),
                    Contains("the ranks run different configurations: training data (a checksum of its values"));
  data = test::cluster_data<float>(40, 4, 3, 1);
  if (world_rank() == 1) data.features(39, 3) += 1e-3F;
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.1}, dptrain::MpiCommunicator{})
                        .fit(model, theta, data),
                    Contains("training data"));
  CHECK((theta.array() == model.init_parameters().array()).all());
  // Sharded: every rank's own rows are the point, so they are not compared.
  data.features(39, 3) = static_cast<float>(world_rank());
  CHECK(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.1},
                                     dptrain::MpiCommunicator{.data = dptrain::MpiData::sharded})
            .fit(model, theta, data)
            .steps == 5);
}

TEST_CASE(
    "MpiCommunicator: another learning rate, schedule or optimizer setting on one rank is refused before the first "
    "step",
    "[mpi]") {
  if (world_size() < 2) return;
  const auto data = test::linear_data<double>(40, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 8, .epochs = 2};
  const bool other = world_rank() == 1;
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = other ? 0.02 : 0.01}, dptrain::MpiCommunicator{})
          .fit(model, theta, data),
      Contains("learning rate at the first step (the optimizer's lr and the schedule), learning rate "
               "halfway, learning rate at the last step, optimizer settings differ"));
  // The same lr, a cosine schedule with another floor: the first step agrees, the later ones not.
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01},
                                   dptrain::CosineSchedule{.min_factor = other ? 0.1 : 0.0}, dptrain::MpiCommunicator{})
          .fit(model, theta, data),
      Contains("learning rate halfway, learning rate at the last step differ"));
  // The same lr, another momentum: the optimizer's settings differ.
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.01, .momentum = other ? 0.8 : 0.9},
                                                 dptrain::MpiCommunicator{})
                        .fit(model, theta, data),
                    Contains("the ranks run different configurations: optimizer settings differ"));
  CHECK((theta.array() == model.init_parameters().array()).all());
}

TEST_CASE("MpiCommunicator: ranks that disagree on sharing memory all get an error naming it", "[mpi]") {
  if (world_size() < 2) return;
  const auto data = test::linear_data<double>(40, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  const MPI_Comm node = world_rank() == 1 ? MPI_COMM_SELF : MPI_COMM_NULL;
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.01},
                                                 dptrain::MpiCommunicator{.node = node})
                        .fit(model, theta, data),
                    Contains("MpiCommunicator::node"));
}

TEST_CASE("MpiCommunicator: an exception on one rank ends fit() on every rank at the same step", "[mpi]") {
  const auto data = test::linear_data<double>(64, 3, 1);
  FailingOnRank model(3, world_size() - 1);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 16, .epochs = 5}, dptrain::Sgd{.lr = 0.01},
                                       dptrain::MpiCommunicator{});
  if (world_rank() == world_size() - 1)
    CHECK_THROWS_AS(trainer.fit(model, theta, data), Boom);
  else
    CHECK_THROWS_WITH(trainer.fit(model, theta, data),
                      Contains("at step 2, rank " + std::to_string(world_size() - 1) + " failed: boom on rank " +
                               std::to_string(world_size() - 1)));
}

TEST_CASE("MpiCommunicator: a callback that throws on one rank names the step it ran after, on every rank",
          "[mpi][callbacks]") {
  struct ThrowsAfterStep {
    Index step = 3;
    bool on_step_end(dptrain::TrainContext<double>& ctx) {
      if (world_rank() == world_size() - 1 && ctx.step == step) throw Boom("callback boom");
      return false;
    }
  };
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  // The synchronous step, and LocalSgd (whose hooks run at averaging points: every 3 steps here).
  const bool local = GENERATE(false, true);
  ThrowsAfterStep hook{.step = local ? 6 : 3};
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 16, .epochs = 5};
  const auto fit = [&] {
    if (local)
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, dptrain::LocalSgd{.period = 3},
                                   dptrain::MpiCommunicator{})
          .fit(model, theta, data, hook);
    else
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, dptrain::MpiCommunicator{})
          .fit(model, theta, data, hook);
  };
  if (world_rank() == world_size() - 1)
    CHECK_THROWS_AS(fit(), Boom);
  else
    CHECK_THROWS_WITH(fit(), Contains("in a callback after step " + std::to_string(hook.step) + ", rank " +
                                      std::to_string(world_size() - 1) + " failed: callback boom"));
}

TEST_CASE("MpiCommunicator: a stop request on one rank stops every rank at the same step", "[mpi]") {
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  StopAtStep stop{.rank = world_size() - 1, .step = 4};
  const dptrain::FitReport report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 5},
                                                                 dptrain::Sgd{.lr = 0.01}, dptrain::MpiCommunicator{})
                                        .fit(model, theta, data, stop);
  CHECK(report.steps == 4);
  CHECK(report.stopped_by_callback);
  // Every rank holds the same θ.
  dptrain::Vector<double> lowest = theta, highest = theta;
  MPI_Allreduce(MPI_IN_PLACE, lowest.data(), 4, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, highest.data(), 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK((lowest.array() == highest.array()).all());
}

TEST_CASE("MpiCommunicator: a stop in on_fit_begin on one rank keeps every rank from starting", "[mpi]") {
  struct StopAtBegin {
    int rank = 0;
    bool on_fit_begin(dptrain::TrainContext<double>&) { return world_rank() == rank; }
  } stop{.rank = world_size() - 1};
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 5},
                                                                 dptrain::Sgd{.lr = 0.01}, dptrain::MpiCommunicator{})
                                        .fit(model, theta, data, stop);
  CHECK(report.steps == 0);
  CHECK(report.stopped_by_callback);
}

TEST_CASE("MpiCommunicator: hooks know their rank; ProgressBar and MetricsLog write on rank 0 only", "[mpi]") {
  struct Ranks {
    Index rank = -1, ranks = -1;
    void on_fit_begin(dptrain::TrainContext<double>& ctx) {
      rank = ctx.rank;
      ranks = ctx.ranks;
    }
  } seen;
  const bool every_rank = GENERATE(false, true);
  std::ostringstream progress_text, log_text;
  dptrain::ProgressBar progress(progress_text, {.interactive = false, .every_rank = every_rank});
  dptrain::MetricsLog log(log_text, {.every_rank = every_rank});
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 2}, dptrain::Sgd{.lr = 0.01},
                               dptrain::MpiCommunicator{})
      .fit(model, theta, data, seen, progress, log);
  CHECK(seen.rank == world_rank());
  CHECK(seen.ranks == world_size());
  const bool writes = world_rank() == 0 || every_rank;
  CHECK(progress_text.str().empty() == !writes);
  CHECK(log_text.str().empty() == !writes);
  if (writes) CHECK_THAT(progress_text.str(), Contains("epoch 2/2 done"));
}

TEST_CASE("MpiCommunicator: a checkpoint written by rank 0 resumes every rank bitwise", "[mpi]") {
  // One path for the job: rank 0's process id.
  long id = static_cast<long>(getpid());
  MPI_Bcast(&id, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const std::string path = "dptrain_mpi_resume_" + std::to_string(id) + ".ckpt";
  const auto data = test::cluster_data<double>(45, 5, 3, 11);
  const dptrain::Mlp<double> model({5, 7, 3});
  dptrain::TrainerOptions options{.threads = 2, .batch_size = 8, .epochs = 4, .seed = 9};
  const dptrain::Adam adam{.lr = 0.01};
  dptrain::Vector<double> uninterrupted = model.init_parameters(3);
  dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{}).fit(model, uninterrupted, data);

  dptrain::Vector<double> theta = model.init_parameters(3);
  dptrain::Checkpoint checkpoint(model, path, {.every_steps = 9, .every_epochs = 0, .at_end = false});
  options.max_steps = 9;  // stops in the middle of the second epoch (6 steps per epoch)
  dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{}).fit(model, theta, data, checkpoint);
  CHECK(checkpoint.saves() == (world_rank() == 0 ? 1 : 0));
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0 has written the file

  options.max_steps = 0;
  dptrain::Vector<double> resumed = model.init_parameters(5);  // θ comes from the checkpoint
  dptrain::TrainingState<double> state = dptrain::load_checkpoint(path, model, resumed);
  CHECK(state.step == 9);
  dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{}).resume(model, resumed, data, state);
  CHECK((resumed.array() == uninterrupted.array()).all());

  // The file records R ranks × 2 threads; one rank alone resumes it with 2 threads: allowed,
  // reported, and within rounding of the uninterrupted run (refused under same_workers_on_resume).
  state = dptrain::load_checkpoint(path, model, resumed);
  CHECK(state.made_by.ranks == world_size());
  CHECK(state.made_by.threads == 2);
  const dptrain::FitReport alone =
      dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{.comm = MPI_COMM_SELF})
          .resume(model, resumed, data, state);
  if (world_size() > 1) {
    REQUIRE(alone.notes.size() == 1);
    CHECK_THAT(alone.notes[0], Contains("saved on " + std::to_string(world_size()) +
                                        " x 2 (ranks x threads), resumed on 1 x 2 (ranks x threads)"));
    CHECK(resumed.isApprox(uninterrupted, 1e-9));
    options.same_workers_on_resume = true;
    state = dptrain::load_checkpoint(path, model, resumed);
    CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{.comm = MPI_COMM_SELF})
                          .resume(model, resumed, data, state),
                      Contains("same_workers_on_resume"));
    options.same_workers_on_resume = false;
  } else {
    CHECK(alone.notes.empty());
  }
  // And on the ranks in pairs (R = 3: 2 and 1; R = 4: 2 and 2), each pair a run of its own.
  if (world_size() > 2) {
    const Pairs pairs;
    int pair_size = 0;
    MPI_Comm_size(pairs.comm, &pair_size);
    state = dptrain::load_checkpoint(path, model, resumed);
    const dptrain::FitReport paired =
        dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{.comm = pairs.comm})
            .resume(model, resumed, data, state);
    REQUIRE(paired.notes.size() == 1);
    CHECK_THAT(paired.notes[0],
               Contains("saved on " + std::to_string(world_size()) + " x 2 (ranks x threads), resumed on " +
                        std::to_string(pair_size) + " x 2 (ranks x threads)"));
    CHECK(resumed.isApprox(uninterrupted, 1e-9));
  }

  // A rank resuming from another position: every rank is told, none hangs.
  if (world_size() > 1) {
    state = dptrain::load_checkpoint(path, model, resumed);
    if (world_rank() == 1) {
      state.step -= 1;
      state.epoch_step -= 1;
    }
    CHECK_THROWS_WITH(
        dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{}).resume(model, resumed, data, state),
        Contains("resumed step differ"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());
}

TEST_CASE("MpiCommunicator: replicas of theta that drift apart fail every rank at the next check", "[mpi]") {
  if (world_size() < 2) return;
  struct Nudge {  // the last rank changes θ behind the trainer's back after step 3
    bool on_step_end(dptrain::TrainContext<double>& ctx) {
      if (ctx.rank == ctx.ranks - 1 && ctx.step == 3) ctx.theta[0] += 1e-9;
      return false;
    }
  } nudge;
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 8, .epochs = 3};
  // Checked every 2 steps: the drift after step 3 is found at step 4, on every rank.
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01},
                                                 dptrain::MpiCommunicator{.check_replicas_every = 2})
                        .fit(model, theta, data, nudge),
                    Contains("at step 4, the replicas of theta differ"));
  // The same run without the nudge passes its checks, also with other thread counts per rank
  // (rank r: r + 1 threads), whose updates cut θ into other slices.
  theta = model.init_parameters();
  dptrain::TrainerOptions unequal = options;
  unequal.threads = world_rank() + 1;
  const dptrain::FitReport report = dptrain::DataParallelTrainer(unequal, dptrain::Adam{.lr = 0.01},
                                                                 dptrain::MpiCommunicator{.check_replicas_every = 1})
                                        .fit(model, theta, data);
  CHECK(report.steps == 24);
}

TEST_CASE("MpiCommunicator: sharded data trains as one worker on every rank's minibatch together", "[mpi]") {
  const Index ranks = world_size(), rank = world_rank();
  const Index threads = GENERATE(1, 2);
  const Index accumulation = GENERATE(1, 2);
  const Index batch = 4;
  // 47 rows: shards of 47, 23 or 15 rows, each ending in a partial minibatch of 3.
  const auto full = test::cluster_data<double>(47, 5, 3, 11);
  const Index shard_rows = full.size() / ranks;
  const auto side_by_side = sharded_minibatches_side_by_side(full, batch);
  const dptrain::Mlp<double> model({5, 7, 3});
  const dptrain::Adam adam{.lr = 0.01};
  dptrain::TrainerOptions options{.threads = 1,
                                  .batch_size = batch * ranks,
                                  .epochs = 3,
                                  .shuffle = false,
                                  .accumulation_steps = accumulation,
                                  .clip_norm = 0.5};
  dptrain::Vector<double> expected = model.init_parameters(3);
  dptrain::DataParallelTrainer(options, adam).fit(model, expected, side_by_side);

  options.threads = threads;
  options.batch_size = batch;
  const auto mine = dptrain::shard_of(full, rank, ranks);
  dptrain::Vector<double> theta = model.init_parameters(3);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, adam, dptrain::MpiCommunicator{.data = dptrain::MpiData::sharded})
          .fit(model, theta, mine);
  CHECK(report.samples == 3 * shard_rows * ranks);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
}

TEST_CASE("MpiCommunicator: sharded data with shuffling is deterministic and keeps the replicas equal", "[mpi]") {
  const auto full = test::cluster_data<double>(90, 5, 3, 4);
  const auto mine = dptrain::shard_of(full, world_rank(), world_size());
  const dptrain::Mlp<double> model({5, 7, 3});
  const auto train = [&] {
    dptrain::Vector<double> theta = model.init_parameters(1);
    dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8, .epochs = 2, .seed = 3}, dptrain::Adam{.lr = 0.01},
                                 dptrain::MpiCommunicator{.check_replicas_every = 1, .data = dptrain::MpiData::sharded})
        .fit(model, theta, mine);
    return theta;
  };
  const dptrain::Vector<double> first = train(), second = train();
  CHECK((first.array() == second.array()).all());
}

TEST_CASE("MpiCommunicator: shards of different sizes are refused on every rank", "[mpi]") {
  if (world_size() < 2) return;
  const auto data = test::linear_data<double>(world_rank() == 0 ? 41 : 40, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.01},
                                                 dptrain::MpiCommunicator{.data = dptrain::MpiData::sharded})
                        .fit(model, theta, data),
                    Contains("see shard_of"));
}

TEST_CASE("MpiCommunicator: a rank that refuses its data makes every rank throw, none waits", "[mpi]") {
  if (world_size() < 2) return;
  // The last rank's data has a label the model does not know: its own checks fail before connect.
  auto data = test::cluster_data<double>(40, 3, 3, 2);
  if (world_rank() == world_size() - 1) data.targets[7] = 5;
  const dptrain::SoftmaxRegression<double> model(3, 3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.1},
                                       dptrain::MpiCommunicator{.data = dptrain::MpiData::sharded});
  if (world_rank() == world_size() - 1)
    CHECK_THROWS_AS(trainer.fit(model, theta, data), dptrain::invalid_argument);
  else
    CHECK_THROWS_WITH(trainer.fit(model, theta, data), Contains("another rank refused its model, data or options"));
  // A state that fits one rank's run but not another's fails after connect: before the first step.
  theta = model.init_parameters();
  auto clean = test::cluster_data<double>(40, 3, 3, 2);
  struct KeepState {
    dptrain::TrainingState<double> state;
    void on_fit_end(dptrain::TrainContext<double>& ctx) { state = ctx.state; }
  } kept;
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8, .max_steps = 2}, dptrain::Sgd{.lr = 0.1},
                               dptrain::MpiCommunicator{})
      .fit(model, theta, clean, kept);
  dptrain::TrainingState<double> state = kept.state;
  if (world_rank() == 1) state.optimizer_state.emplace_back(theta.size());  // one buffer too many
  if (world_rank() == 1)
    CHECK_THROWS_WITH(trainer.resume(model, theta, clean, state), Contains("optimizer buffers"));
  else
    CHECK_THROWS_WITH(trainer.resume(model, theta, clean, state), Contains("before the first step, rank 1 failed"));
}

TEST_CASE("MpiCommunicator: a rank OpenMP gives too few threads makes every rank leave before the first step",
          "[mpi]") {
  const auto data = test::linear_data<double>(32, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.01},
                                       dptrain::MpiCommunicator{});
  const bool short_here = world_rank() == world_size() - 1;
  // The last rank trains from inside an active parallel region that may not nest another.
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  std::string what;
  const auto train = [&] {
    try {
      trainer.fit(model, theta, data);
    } catch (const std::exception& e) {
      what = e.what();
    }
  };
  if (short_here) {
#pragma omp parallel num_threads(2)
    {
      if (omp_get_thread_num() == 0) train();
    }
  } else {
    train();
  }
  omp_set_max_active_levels(levels);
  if (short_here)
    CHECK_THAT(what, Contains("asked OpenMP for 2 threads but got 1"));
  else
    CHECK_THAT(what, Contains("before the first step, rank " + std::to_string(world_size() - 1) +
                              " failed: dptrain::DataParallelTrainer: asked OpenMP"));
}

TEST_CASE("MpiCommunicator: LocalSgd averages every worker of every rank at the same points", "[mpi][synchronizers]") {
  const Index threads = GENERATE(1, 2);
  const auto threading = GENERATE(dptrain::MpiThreading::funneled, dptrain::MpiThreading::multiple);
  if (threading == dptrain::MpiThreading::multiple && !multiple_supported()) return;
  // Both transports: a shared-memory window for the machine's ranks, or MPI_Allreduce alone.
  const MPI_Comm node = GENERATE(MPI_COMM_NULL, MPI_COMM_SELF);
  const auto data = test::cluster_data<double>(96, 5, 3, 11);
  const dptrain::Mlp<double> model({5, 7, 3});
  const dptrain::Momentum momentum{.lr = 0.05};
  const dptrain::LocalSgd local{.period = 3};
  // The same workers in one process: worker r·T + t is thread t of rank r.
  dptrain::TrainerOptions options{.threads = threads * world_size(), .batch_size = 24, .epochs = 3, .seed = 5};
  dptrain::Vector<double> expected = model.init_parameters(3);
  dptrain::DataParallelTrainer(options, momentum, local).fit(model, expected, data);

  options.threads = threads;
  dptrain::Vector<double> theta = model.init_parameters(3);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, momentum, local,
                                   dptrain::MpiCommunicator{.threading = threading, .node = node})
          .fit(model, theta, data);
  CHECK(report.steps == 12);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
  if (world_size() > 1) {  // the replicas diverged between averaging points: not the synchronous step
    dptrain::Vector<double> synchronous = model.init_parameters(3);
    options.threads = threads * world_size();
    dptrain::DataParallelTrainer(options, momentum).fit(model, synchronous, data);
    CHECK(test::relative_error(theta, synchronous) > 1e-6);
  }
}

TEST_CASE("MpiCommunicator: Svrg on R ranks × T threads gives one process's theta within 1e-12", "[mpi][workers]") {
  const Index threads = GENERATE(1, 2);
  const auto data = test::cluster_data<double>(96, 5, 3, 11);  // replicated: each rank computes μ whole
  const dptrain::SoftmaxRegression<double> model(5, 3);
  const dptrain::Momentum momentum{.lr = 0.05};
  dptrain::TrainerOptions options{.threads = 1, .batch_size = 24, .epochs = 3, .seed = 5};
  dptrain::Vector<double> expected = model.init_parameters(3);
  dptrain::Svrg alone(model, data);
  dptrain::DataParallelTrainer(options, momentum, alone.worker()).fit(model, expected, data, alone);

  options.threads = threads;
  dptrain::Vector<double> theta = model.init_parameters(3);
  dptrain::Svrg svrg(model, data);
  dptrain::DataParallelTrainer(options, momentum, svrg.worker(), dptrain::MpiCommunicator{})
      .fit(model, theta, data, svrg);
  CHECK(svrg.anchor().refreshes == 3);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
}

TEST_CASE("MpiCommunicator: Lars and Lamb on R ranks × T threads give one process's theta within 1e-12",
          "[mpi][optimizers]") {
  const Index threads = GENERATE(1, 2, 3);
  // 387 parameters in 4 groups (W₀, b₀, W₁, b₁): each rank sums its own part of every group it meets.
  const dptrain::Mlp<double> model({20, 16, 3});
  const auto data = test::cluster_data<double>(150, 20, 3, 8);
  const auto check = [&](const auto& optimizer) {
    dptrain::TrainerOptions options{.threads = 1, .batch_size = 30, .epochs = 3, .seed = 5};
    dptrain::Vector<double> expected = model.init_parameters(2);
    dptrain::DataParallelTrainer(options, optimizer).fit(model, expected, data);
    options.threads = threads;
    dptrain::Vector<double> theta = model.init_parameters(2);
    dptrain::DataParallelTrainer(options, optimizer, dptrain::MpiCommunicator{}).fit(model, theta, data);
    CHECK(test::relative_error(theta, model.init_parameters(2)) > 1e-3);  // it trained
    CHECK(test::relative_error(theta, expected) <= 1e-12);
  };
  check(dptrain::Lars{.lr = 2.0, .weight_decay = 1e-3, .trust_coefficient = 0.02});
  check(dptrain::Lamb{.lr = 0.02, .weight_decay = 0.01});
}

TEST_CASE("MpiCommunicator: Sag and Saga with replicated data on several ranks are refused on every rank",
          "[mpi][workers]") {
  const auto data = test::cluster_data<double>(48, 5, 3, 11);
  const dptrain::SoftmaxRegression<double> model(5, 3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::GradientTable table(model, data);
  const auto fit = [&] {
    dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Saga{.lr = 0.1}, table.worker(),
                                 dptrain::MpiCommunicator{})
        .fit(model, theta, data, table);
  };
  if (world_size() == 1)
    CHECK_NOTHROW(fit());
  else
    CHECK_THROWS_WITH(fit(), Contains("need sharded data"));
}

TEST_CASE("MpiCommunicator: Sag and Saga on sharded data give one process's theta within 1e-12", "[mpi][workers]") {
  const Index ranks = world_size(), rank = world_rank();
  const Index threads = GENERATE(1, 2);
  const Index batch = 4;
  // Each rank's table holds the rows of its own shard, whose samples never change owner.
  const auto full = test::cluster_data<double>(47, 5, 3, 11);
  const auto side_by_side = sharded_minibatches_side_by_side(full, batch);
  const auto mine = dptrain::shard_of(full, rank, ranks);
  const dptrain::SoftmaxRegression<double> model(5, 3);
  const auto check = [&](const auto& optimizer) {
    dptrain::TrainerOptions options{.threads = 1, .batch_size = batch * ranks, .epochs = 4, .shuffle = false};
    dptrain::Vector<double> expected = model.init_parameters(3);
    dptrain::GradientTable whole(model, side_by_side);
    dptrain::DataParallelTrainer(options, optimizer, whole.worker()).fit(model, expected, side_by_side, whole);

    options.threads = threads;
    options.batch_size = batch;
    dptrain::Vector<double> theta = model.init_parameters(3);
    dptrain::GradientTable table(model, mine);
    dptrain::DataParallelTrainer(options, optimizer, table.worker(),
                                 dptrain::MpiCommunicator{.data = dptrain::MpiData::sharded})
        .fit(model, theta, mine, table);
    CHECK(test::relative_error(theta, model.init_parameters(3)) > 1e-3);  // it trained
    CHECK(test::relative_error(theta, expected) <= 1e-12);
  };
  check(dptrain::Saga{.lr = 0.1});
  check(dptrain::Sag{.lr = 0.05});
}

TEST_CASE("MpiCommunicator: current_worker() is the global worker, rank · threads + thread", "[mpi][workers]") {
  const auto data = test::linear_data<double>(60, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  test::WorkerCheck::reset(world_rank() * 2);  // 2 threads on every rank
  (void)dptrain::DataParallelTrainer({.threads = 2, .batch_size = 12}, dptrain::Sgd{.lr = 0.01}, test::WorkerCheck{},
                                     dptrain::MpiCommunicator{})
      .fit(model, theta, data);
  CHECK(test::WorkerCheck::calls == 2 * 5);  // 5 steps, one micro-batch per thread
  CHECK(test::WorkerCheck::elsewhere == 0);
  CHECK(dptrain::current_worker() == -1);
}

TEST_CASE("MpiCommunicator: WeightedPartitioner takes one share for every worker of every rank",
          "[mpi][partitioners]") {
  const auto data = test::linear_data<double>(96, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  const Index threads = 2, workers = threads * world_size();
  if (world_size() > 1) {  // shares for one rank's threads: the other ranks' workers have none
    dptrain::Vector<double> theta = model.init_parameters();
    CHECK_THROWS_WITH(
        dptrain::DataParallelTrainer({.threads = threads, .batch_size = 12}, dptrain::Sgd{.lr = 0.05},
                                     dptrain::WeightedPartitioner{.shares = {2, 1}}, dptrain::MpiCommunicator{})
            .fit(model, theta, data),
        Contains("2 shares for " + std::to_string(workers) + " workers"));
    CHECK((theta.array() == model.init_parameters().array()).all());
  }
  // A share for each: the same θ as those workers in one process.
  std::vector<double> shares;
  for (Index w = 0; w < workers; ++w) shares.push_back(static_cast<double>(1 + w % 3));
  const dptrain::WeightedPartitioner split{.shares = shares};
  dptrain::TrainerOptions options{.threads = workers, .batch_size = 12, .epochs = 2, .seed = 3};
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, split).fit(model, expected, data);
  options.threads = threads;
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, split, dptrain::MpiCommunicator{})
          .fit(model, theta, data);
  CHECK(report.steps == 16);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
}

TEST_CASE("MpiCommunicator: an adaptive partitioner with several ranks is refused on every rank",
          "[mpi][partitioners]") {
  if (world_size() == 1) return;
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  // It learned one process's threads and was asked for every rank's workers: it split evenly.
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.01},
                                                 dptrain::BalancingPartitioner{}, dptrain::MpiCommunicator{})
                        .fit(model, theta, data),
                    Contains("an adaptive partitioner (BalancingPartitioner) learns the speeds of this process's "
                             "threads only, but with " +
                             std::to_string(world_size()) + " processes"));
  CHECK((theta.array() == model.init_parameters().array()).all());
}

TEST_CASE("MpiCommunicator: BoundedStaleness and Hogwild with several ranks are refused on every rank",
          "[mpi][synchronizers]") {
  if (world_size() == 1) return;
  const auto data = test::linear_data<double>(64, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 8};
  const std::string has = " runs in one process; this run has " + std::to_string(world_size());
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, dptrain::BoundedStaleness{},
                                                 dptrain::MpiCommunicator{})
                        .fit(model, theta, data),
                    Contains("dptrain::BoundedStaleness" + has));
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.01}, dptrain::Hogwild{}, dptrain::MpiCommunicator{})
          .fit(model, theta, data),
      Contains("dptrain::Hogwild" + has));
  CHECK((theta.array() == model.init_parameters().array()).all());
}

namespace {

// Reproducible's problem: the MLP in float, 45 samples in minibatches of 8 (a partial one ends
// every epoch), two to a step, clipped; 6 shards.
struct ReproducibleRun {
  dptrain::DenseDataset<float, dptrain::Label> data = test::cluster_data<float>(45, 5, 3, 11);
  dptrain::Mlp<float> model{{5, 600, 3}};  // 5403 parameters: the sum passes in 4 pieces
  dptrain::Adam adam{.lr = 0.01};
  dptrain::TrainerOptions options(Index threads) const {
    return {.threads = threads, .batch_size = 8, .epochs = 4, .seed = 5, .accumulation_steps = 2, .clip_norm = 0.5};
  }
  dptrain::Vector<float> one_thread() const {
    dptrain::Vector<float> theta = model.init_parameters(3);
    dptrain::DataParallelTrainer(options(1), adam, dptrain::Reproducible{.shards = 6}).fit(model, theta, data);
    return theta;
  }
  template <class... Callbacks>
  dptrain::FitReport on_ranks(dptrain::Vector<float>& theta, const dptrain::TrainerOptions& opt, MPI_Comm comm,
                              MPI_Comm node, Callbacks&... callbacks) const {
    return dptrain::DataParallelTrainer(opt, adam, dptrain::Reproducible{.shards = 6},
                                        dptrain::MpiCommunicator{.comm = comm, .node = node})
        .fit(model, theta, data, callbacks...);
  }
};

bool same_bytes(const dptrain::Vector<float>& a, const dptrain::Vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
}

}  // namespace

TEST_CASE("MpiCommunicator: Reproducible gives one thread's theta byte for byte on any ranks × threads",
          "[mpi][reproducible]") {
  // Threads per rank: all 1 (R × 1), all 2 (R × 2), rank r with r + 1 (1 + 2 + …), 4 / R (1 × 4, 2 × 2, 4 × 1).
  const int layout = GENERATE(0, 1, 2, 3);
  if (layout == 3 && 4 % world_size() != 0) return;
  const Index threads = layout == 0 ? 1 : layout == 1 ? 2 : layout == 2 ? world_rank() + 1 : 4 / world_size();
  // The sum passes through the machine's shared-memory window, or in messages (as between machines).
  const MPI_Comm node = GENERATE(0, 1) == 0 ? MPI_COMM_NULL : MPI_COMM_SELF;
  const ReproducibleRun run;
  const dptrain::Vector<float> expected = run.one_thread();
  dptrain::Vector<float> theta = run.model.init_parameters(3);
  const dptrain::FitReport report = run.on_ranks(theta, run.options(threads), MPI_COMM_WORLD, node);
  CHECK(report.samples == 4 * 45);
  CHECK(same_bytes(theta, expected));
}

TEST_CASE("MpiCommunicator: Reproducible's shard count must agree on every rank", "[mpi][reproducible]") {
  if (world_size() < 2) return;
  const ReproducibleRun run;
  dptrain::Vector<float> theta = run.model.init_parameters(3);
  const Index shards = world_rank() == 1 ? 4 : 6;
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(run.options(1), run.adam, dptrain::Reproducible{.shards = shards},
                                                 dptrain::MpiCommunicator{})
                        .fit(run.model, theta, run.data),
                    Contains("synchronizer or its settings differ"));
}

TEST_CASE("MpiCommunicator: under Reproducible, R ranks × 1 thread resume on 1 rank × 2 threads byte for byte",
          "[mpi][reproducible]") {
  long id = static_cast<long>(getpid());
  MPI_Bcast(&id, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const std::string path = "dptrain_mpi_reproducible_" + std::to_string(id) + ".ckpt";
  const ReproducibleRun run;
  const dptrain::Vector<float> uninterrupted = run.one_thread();  // 12 steps

  dptrain::Vector<float> theta = run.model.init_parameters(3);
  dptrain::Checkpoint checkpoint(run.model, path, {.every_steps = 5, .every_epochs = 0, .at_end = false});
  dptrain::TrainerOptions options = run.options(1);
  options.max_steps = 5;  // in the middle of the second epoch (3 steps per epoch)
  run.on_ranks(theta, options, MPI_COMM_WORLD, MPI_COMM_NULL, checkpoint);
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0 has written the file

  dptrain::Vector<float> resumed = run.model.init_parameters(9);
  dptrain::TrainingState<float> state = dptrain::load_checkpoint(path, run.model, resumed);
  CHECK(state.made_by.ranks == world_size());
  CHECK(state.made_by.shards == 6);
  options = run.options(2);
  options.same_workers_on_resume = true;  // the bits are kept: allowed
  const dptrain::FitReport alone = dptrain::DataParallelTrainer(options, run.adam, dptrain::Reproducible{.shards = 6},
                                                                dptrain::MpiCommunicator{.comm = MPI_COMM_SELF})
                                       .resume(run.model, resumed, run.data, state);
  REQUIRE(alone.notes.size() == 1);
  CHECK_THAT(alone.notes[0], Contains("the same bits as an uninterrupted run (6 fixed shards)"));
  CHECK(same_bytes(resumed, uninterrupted));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());
}

TEST_CASE("MpiCommunicator: Reproducible with sharded data gives the same bytes for any threads per rank",
          "[mpi][reproducible]") {
  const ReproducibleRun run;
  const auto mine = dptrain::shard_of(run.data, world_rank(), world_size());
  const auto train = [&](Index threads) {
    dptrain::Vector<float> theta = run.model.init_parameters(3);
    dptrain::TrainerOptions options = run.options(threads);
    options.batch_size = 4;
    dptrain::DataParallelTrainer(options, run.adam, dptrain::Reproducible{.shards = 3},
                                 dptrain::MpiCommunicator{.data = dptrain::MpiData::sharded})
        .fit(run.model, theta, mine);
    return theta;
  };
  const dptrain::Vector<float> one = train(1);
  CHECK(same_bytes(train(2), one));
  CHECK(same_bytes(train(3), one));
}

TEST_CASE("MpiCommunicator: under Reproducible an exception on one rank ends fit() on every rank",
          "[mpi][reproducible]") {
  const auto data = test::linear_data<double>(64, 3, 1);
  FailingOnRank model(3, world_size() - 1);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 16, .epochs = 5}, dptrain::Sgd{.lr = 0.01},
                                       dptrain::Reproducible{.shards = 8}, dptrain::MpiCommunicator{});
  if (world_rank() == world_size() - 1)
    CHECK_THROWS_AS(trainer.fit(model, theta, data), Boom);
  else
    CHECK_THROWS_WITH(trainer.fit(model, theta, data),
                      Contains("rank " + std::to_string(world_size() - 1) + " failed: boom on rank " +
                               std::to_string(world_size() - 1)));
}
