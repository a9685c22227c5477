// SPDX-License-Identifier: MIT
// The communication seam: SingleProcessCommunicator, and a communicator that sees every call.
#include <catch2/catch.hpp>

#include <atomic>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

// One process, like the default, but counting what crosses the seam and checking what the
// trainer hands it: a second level of workers (MPI ranks) implements the same calls.
struct CountingCommunicator {
  struct Counts {
    std::atomic<Index> connects{0}, broadcasts{0}, shard_reduces{0}, scalar_reduces{0};
    dptrain::RunSignature run;
  };
  Counts* counts;
  struct Group {
    Counts* counts;
    Index threads;
    Index rank() const { return 0; }
    Index size() const { return 1; }
    Index first_worker() const { return 0; }
    Index workers() const { return threads; }
    template <class Scalar>
    void broadcast(dptrain::VectorMap<Scalar>) const {
      ++counts->broadcasts;
    }
    template <class Scalar>
    void all_reduce(const dptrain::TeamMember&, dptrain::VectorMap<Scalar>) const {
      ++counts->shard_reduces;
    }
    void all_reduce(dptrain::StepScalars&) const { ++counts->scalar_reduces; }
  };
  Group connect(Index threads, const dptrain::RunSignature& run) const {
    ++counts->connects;
    counts->run = run;
    return {counts, threads};
  }
};
static_assert(dptrain::Communicator<CountingCommunicator>);

}  // namespace

TEST_CASE("SingleProcessCommunicator: one process, all its threads are the workers", "[communicators]") {
  const dptrain::SingleProcessCommunicator::Group group = dptrain::SingleProcessCommunicator{}.connect(4, {});
  CHECK(group.rank() == 0);
  CHECK(group.size() == 1);
  CHECK(group.first_worker() == 0);
  CHECK(group.workers() == 4);
}

TEST_CASE("Communicator: θ, every gradient shard and the run's signature go through the seam",
          "[communicators][trainer]") {
  const Index threads = GENERATE(1, 3);
  const auto data = test::linear_data<double>(50, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 10, .epochs = 2, .seed = 4};
  CountingCommunicator::Counts counts;
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}).fit(model, expected, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, CountingCommunicator{&counts})
          .fit(model, theta, data);
  CHECK((theta.array() == expected.array()).all());
  CHECK(counts.connects == 1);
  CHECK(counts.broadcasts == 1);
  CHECK(counts.shard_reduces == report.steps * threads);
  CHECK(counts.scalar_reduces == 0);  // a group of one process: the team's sum is the total
  CHECK(counts.run.parameters == 4);
  CHECK(counts.run.samples == 50);
  CHECK(counts.run.batch_size == 10);
  CHECK(counts.run.seed == 4);
}
