// SPDX-License-Identifier: MIT
// The synchronisation seam: EveryStepSynchronizer, and a user's Synchronizer built from the step's primitives.
#include <catch2/catch.hpp>

#include <atomic>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

// Synchronous SGD written by a user, counting its calls: the seam a new synchronisation
// (periodic averaging, bounded staleness, backup workers) plugs into.
struct CountingSynchronizer {
  std::atomic<Index>* calls;
  template <class Step>
  struct Loop {
    Step* step;
    std::atomic<Index>* calls;
    void run(const dptrain::TeamMember& me, const dptrain::StepSpan& span) const {
      for (Index k = 0; k < span.count; ++k) {
        calls->fetch_add(1, std::memory_order_relaxed);
        step->local_gradient(me, span.first + k, span.epoch_step + k);
        step->wait_for_workers(me);
        auto shard = step->reduce_gradients(me);
        if (step->reduce_scalars(me, shard)) step->update(me, shard);
        step->publish(me);
        if (step->finish(me, span, k)) return;
      }
    }
  };
  template <class Step>
  Loop<Step> start(Step& step) const {
    return {&step, calls};
  }
};
static_assert(dptrain::Synchronizer<CountingSynchronizer>);

}  // namespace

TEST_CASE("Synchronizer: a user's synchronizer composed of the step's primitives replaces the default",
          "[synchronizers][trainer]") {
  const Index threads = GENERATE(1, 2, 3);
  const auto data = test::linear_data<double>(90, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .seed = 5};
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, dptrain::EveryStepSynchronizer{})
      .fit(model, expected, data);
  std::atomic<Index> calls{0};
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, CountingSynchronizer{&calls}, dptrain::Adam{.lr = 0.01})
          .fit(model, theta, data);
  CHECK((theta.array() == expected.array()).all());
  CHECK(calls.load() == report.steps * threads);
}
