// SPDX-License-Identifier: MIT
// The synchronisation seam: EveryStepSynchronizer, a user's Synchronizer built from the step's primitives,
// and loops' refusals before any worker state is made.
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
    dptrain::SpanEnd run(const dptrain::TeamMember& me, const dptrain::StepSpan& span) const {
      if (me.rank == 0) {
        spans->fetch_add(1, std::memory_order_relaxed);
        steps->fetch_add(span.count, std::memory_order_relaxed);
      }
      return inner.run(me, span);
    }
  };
  template <class Step>
  Loop<Step> start(Step& step) const {
    return {dptrain::EveryStepSynchronizer{}.start(step), spans, steps};
  }
};
static_assert(dptrain::Synchronizer<CountingSynchronizer>);

// A synchronizer written from StepParts alone: every worker steps its own replica of θ with its
// own gradient, then the replicas are averaged (model averaging every step). With Sgd and equal
// micro-batches that is the synchronous step up to rounding.
struct AverageEveryStep {
  template <class Step>
  struct Loop {
    using Scalar = typename Step::Scalar;
    Step* step;
    std::vector<dptrain::Vector<Scalar>> replicas;  // one per thread
    std::vector<dptrain::IndexRange> biases;        // θ's biases, for the update of a whole replica

    dptrain::SpanEnd run(const dptrain::TeamMember& me, const dptrain::StepSpan& span) {
      dptrain::VectorMap<Scalar> theta = step->theta();
      dptrain::Vector<Scalar>& mine = replicas[static_cast<std::size_t>(me.rank)];
      const dptrain::IndexRange all{0, theta.size()}, owned = step->shard(me);
      dptrain::SpanEnd end;
      for (Index k = 0; k < span.count; ++k) {
        const Index t = span.first + k;
        mine = theta;  // θ as the last step published it
        dptrain::StepScalars part = step->local_gradient(me, t, span.epoch_step + k, mine);
        part.sumsq = Step::squared_norm(step->gradient(me));
        const dptrain::StepOutcome local = step->judge(part, t, false);  // my own step's scale and norm
        if (local.update) step->update_range(step->gradient(me), all, mine.data(), {}, biases, local, t);
        const dptrain::StepOutcome outcome = step->judge(step->sum_scalars(me, part), t, me.rank == 0);
        end = {k + 1, outcome};
        if (outcome.leave) break;
        const dptrain::VectorMap<Scalar> sum = step->sum_vectors(me, {mine.data(), mine.size()});
        theta.segment(owned.begin, owned.size) = sum / static_cast<Scalar>(step->workers());
        step->publish(me);
        step->adopt(me, outcome, {.samples = static_cast<Index>(part.samples)});
        if (me.rank == 0) step->record(span, k, outcome, nullptr, false);
      }
      return end;
    }
  };
  template <class Step>
  Loop<Step> start(Step& step) const {
    if (Step::state_slots != 0) throw dptrain::invalid_argument("AverageEveryStep: a stateless optimizer only");
    const Index n = step.theta().size();
    return {&step,
            std::vector<dptrain::Vector<typename Step::Scalar>>(static_cast<std::size_t>(step.options().threads),
                                                                dptrain::Vector<typename Step::Scalar>(n)),
            dptrain::whole_theta_biases(step)};
  }
};
static_assert(dptrain::Synchronizer<AverageEveryStep>);

// A Worker policy that counts the states it makes.
struct CountsStates {
  std::atomic<Index>* made;
  template <dptrain::Model M>
  [[nodiscard]] auto make(const M& model, Index rank, Index max_rows) const {
    made->fetch_add(1);
    return dptrain::GradientWorker{}.make(model, rank, max_rows);
  }
};

}  // namespace

// The library's loops call nothing beyond StepParts: they build against a step that has nothing else,
// whose model has the optional members a loop may ask for (so Hogwild!'s sparse path builds too).
static_assert(dptrain::SparseGradient<dptrain::detail::StepArchetype::Model>);
template struct dptrain::EveryStepSynchronizer::Loop<dptrain::detail::StepArchetype>;
template class dptrain::BackupWorkers::Loop<dptrain::detail::StepArchetype>;
template class dptrain::LocalSgd::Loop<dptrain::detail::StepArchetype>;
template class dptrain::BoundedStaleness::Loop<dptrain::detail::StepArchetype>;
template class dptrain::Hogwild::Loop<dptrain::detail::StepArchetype>;
template class dptrain::Reproducible::Loop<dptrain::detail::StepArchetype>;
template struct AverageEveryStep::Loop<dptrain::detail::StepArchetype>;

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

TEST_CASE(
    "Synchronizer: a loop written from StepParts (replicas, their sum, the scalars) trains as the synchronous step",
    "[synchronizers][trainer]") {
  const Index threads = GENERATE(1, 2, 4);
  const auto data = test::linear_data<double>(96, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .seed = 5};
  dptrain::Vector<double> expected = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}).fit(model, expected, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, AverageEveryStep{}).fit(model, theta, data);
  CHECK(report.steps == 18);
  CHECK(report.samples == 96 * 3);
  CHECK(report.workers[0].samples == 96 * 3 / threads);
  CHECK((theta - expected).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((theta - model.init_parameters()).norm() > 0.1);  // it trained
  CHECK_THROWS_WITH(
      dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}, AverageEveryStep{}).fit(model, theta, data),
      "AverageEveryStep: a stateless optimizer only");
}

TEST_CASE("Synchronizer: a loop's refusal comes before any worker state is made", "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(64, 3, 2);
  const dptrain::LinearRegression<double> model(3);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 16};
  std::atomic<Index> made{0};
  const CountsStates worker{&made};
  dptrain::Vector<double> theta = model.init_parameters();
  const auto refused = [&](const auto& optimizer, const auto& synchronizer) {
    made = 0;
    CHECK_THROWS_AS(dptrain::DataParallelTrainer(options, optimizer, worker, synchronizer).fit(model, theta, data),
                    dptrain::invalid_argument);
    return made.load();
  };
  CHECK(refused(dptrain::Adam{.lr = 0.1}, dptrain::Hogwild{}) == 0);
  CHECK(refused(dptrain::Sgd{.lr = 0.1}, dptrain::LocalSgd{.period = 0}) == 0);
  CHECK(refused(dptrain::Sgd{.lr = 0.1}, dptrain::BoundedStaleness{.staleness = -1}) == 0);
  CHECK(refused(dptrain::Sgd{.lr = 0.1}, dptrain::Reproducible{.shards = 0}) == 0);
  CHECK(refused(dptrain::Sgd{.lr = 0.1}, dptrain::BackupWorkers{.chunks = -1}) == 0);
  // Accepted, the same run makes one state per thread (and Hogwild! its own, one per thread).
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.1}, worker).fit(model, theta, data);
  CHECK(made == 2);
}
