// SPDX-License-Identifier: MIT
// DataParallelTrainer's constructor: policies in any order, each placed by the concept it satisfies.
#include <catch2/catch.hpp>

#include <type_traits>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

using Options = dptrain::TrainerOptions;

// The deduced trainer type for these arguments.
template <class... Policies>
using TrainerFor = decltype(dptrain::DataParallelTrainer(std::declval<const Options&>(), std::declval<Policies>()...));

using OnlyOptimizer = TrainerFor<dptrain::Adam>;
static_assert(std::is_same_v<OnlyOptimizer::optimizer_type, dptrain::Adam>);
static_assert(std::is_same_v<OnlyOptimizer::schedule_type, dptrain::ConstantSchedule>);
static_assert(std::is_same_v<OnlyOptimizer::partitioner_type, dptrain::EvenPartitioner>);
static_assert(std::is_same_v<OnlyOptimizer::aggregator_type, dptrain::ReduceScatterAggregator>);
static_assert(std::is_same_v<OnlyOptimizer::worker_policy, dptrain::GradientWorker>);
static_assert(std::is_same_v<OnlyOptimizer::communicator_type, dptrain::SingleProcessCommunicator>);
static_assert(std::is_same_v<OnlyOptimizer::synchronizer_type, dptrain::EveryStepSynchronizer>);

using Everything = TrainerFor<dptrain::StragglerWorker<>, dptrain::TreeAggregator, dptrain::CosineSchedule,
                              dptrain::WeightedPartitioner, dptrain::Momentum>;
static_assert(
    std::is_same_v<Everything, TrainerFor<dptrain::Momentum, dptrain::WeightedPartitioner, dptrain::CosineSchedule,
                                          dptrain::TreeAggregator, dptrain::StragglerWorker<>>>);
static_assert(std::is_same_v<Everything::optimizer_type, dptrain::Momentum>);
static_assert(std::is_same_v<Everything::schedule_type, dptrain::CosineSchedule>);
static_assert(std::is_same_v<Everything::partitioner_type, dptrain::WeightedPartitioner>);
static_assert(std::is_same_v<Everything::aggregator_type, dptrain::TreeAggregator>);
static_assert(std::is_same_v<Everything::worker_policy, dptrain::StragglerWorker<>>);

// Each shipped policy satisfies exactly the concept of its family.
static_assert(dptrain::WorkerPolicy<dptrain::GradientWorker> && !dptrain::WorkerPolicy<dptrain::Sgd>);
static_assert(dptrain::Communicator<dptrain::SingleProcessCommunicator> &&
              !dptrain::Communicator<dptrain::TreeAggregator>);
static_assert(dptrain::Synchronizer<dptrain::EveryStepSynchronizer> && !dptrain::Synchronizer<dptrain::Adam>);
static_assert(dptrain::FitsRun<dptrain::CosineSchedule> && !dptrain::FitsRun<dptrain::ConstantSchedule>);

}  // namespace

TEST_CASE("DataParallelTrainer: the order of the policies does not matter", "[trainer]") {
  const auto data = test::linear_data<double>(64, 4, 9);
  const dptrain::LinearRegression<double> model(4);
  const Options options{.threads = 3, .batch_size = 16, .epochs = 2, .seed = 1};
  const dptrain::WeightedPartitioner split{.shares = {3, 1, 0.5}};
  const dptrain::StepSchedule halving{.step_size = 3, .gamma = 0.5};
  dptrain::Vector<double> first = model.init_parameters(), second = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, split, halving, dptrain::TreeAggregator{})
      .fit(model, first, data);
  dptrain::DataParallelTrainer(options, dptrain::TreeAggregator{}, halving, split, dptrain::Sgd{.lr = 0.05})
      .fit(model, second, data);
  CHECK((first.array() == second.array()).all());
  // And the policies took effect: without the schedule, another θ.
  dptrain::Vector<double> constant = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, split, dptrain::TreeAggregator{})
      .fit(model, constant, data);
  CHECK((constant.array() != first.array()).any());
}

TEST_CASE("DataParallelTrainer: each fit() works on its own copy of the options", "[trainer]") {
  const auto data = test::linear_data<double>(40, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  Options options{.threads = 2, .batch_size = 10, .epochs = 2};
  const dptrain::DataParallelTrainer trainer(options, dptrain::Sgd{.lr = 0.01});
  options.epochs = 50;  // the trainer keeps what it was given
  CHECK(trainer.options().epochs == 2);
}
