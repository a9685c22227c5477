// SPDX-License-Identifier: MIT
// The synchronisation seam: EveryStepSynchronizer, and a user's Synchronizer built from the step's primitives.
#include <catch2/catch.hpp>

#include <atomic>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

// A user's Synchronizer that wraps the default's loop, counting the spans and steps it runs: the
// seam a new synchronisation (periodic averaging, bounded staleness) plugs into.
struct CountingSynchronizer {
  std::atomic<Index>* spans;
  std::atomic<Index>* steps;
  template <class Step>
  struct Loop {
    dptrain::EveryStepSynchronizer::Loop<Step> inner;
    std::atomic<Index>*spans, *steps;
    void run(const dptrain::TeamMember& me, const dptrain::StepSpan& span) const {
      if (me.rank == 0) {
        spans->fetch_add(1, std::memory_order_relaxed);
        steps->fetch_add(span.count, std::memory_order_relaxed);
      }
      inner.run(me, span);
    }
  };
  template <class Step>
  Loop<Step> start(Step& step) const {
    return {dptrain::EveryStepSynchronizer{}.start(step), spans, steps};
  }
};
static_assert(dptrain::Synchronizer<CountingSynchronizer>);

}  // namespace

TEST_CASE("Synchronizer: a user's synchronizer replaces the default, one span of steps per epoch",
          "[synchronizers][trainer]") {
  const Index threads = GENERATE(1, 2, 3);
  const auto data = test::linear_data<double>(90, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .seed = 5};
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, dptrain::EveryStepSynchronizer{})
      .fit(model, expected, data);
  std::atomic<Index> spans{0}, steps{0};
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, CountingSynchronizer{&spans, &steps}, dptrain::Adam{.lr = 0.01})
          .fit(model, theta, data);
  CHECK((theta.array() == expected.array()).all());
  CHECK(steps.load() == report.steps);
  CHECK(spans.load() == report.epochs);  // no step hook: one span per epoch
}
