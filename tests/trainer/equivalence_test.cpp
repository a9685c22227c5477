// SPDX-License-Identifier: MIT
// N workers give the same θ as one worker on the whole minibatch, for every aggregator.
#include <catch2/catch.hpp>

#include <chrono>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

TEMPLATE_TEST_CASE("DataParallelTrainer: N threads match single-thread training on the whole minibatch", "[trainer]",
                   dptrain::SerialAggregator, dptrain::TreeAggregator, dptrain::ReduceScatterAggregator,
                   dptrain::RingAllReduceAggregator) {
  const Index threads = GENERATE(1, 2, 3, 4, 7);
  const Index batch = GENERATE(8, 12, 7);  // 45 samples: every epoch ends in a partial minibatch
  const auto data = test::cluster_data<double>(45, 6, 4, 11);
  const dptrain::SoftmaxRegression<double> model(6, 4);
  const dptrain::Momentum optimizer{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  const Index steps = 2 * ((45 + batch - 1) / batch) + 1;  // two epochs and a bit

  dptrain::Vector<double> theta = model.init_parameters(3);
  theta.setLinSpaced(-0.2, 0.3);
  const dptrain::Vector<double> expected = test::reference_training(model, theta, data, batch, steps, optimizer);

  dptrain::DataParallelTrainer trainer(
      {.threads = threads, .batch_size = batch, .epochs = 10, .max_steps = steps, .shuffle = false}, optimizer,
      TestType{});
  const dptrain::FitReport report = trainer.fit(model, theta, data);
  CHECK(report.steps == steps);
  CHECK(report.threads == threads);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
}

TEST_CASE("DataParallelTrainer: AnyAggregator trains as the aggregator it holds, bit for bit", "[trainer]") {
  const auto data = test::cluster_data<float>(45, 6, 4, 11);
  const dptrain::SoftmaxRegression<float> model(6, 4);
  const auto train = [&](auto aggregator) {
    dptrain::Vector<float> theta = model.init_parameters(3);
    dptrain::DataParallelTrainer trainer({.threads = 3, .batch_size = 8, .epochs = 3},
                                         dptrain::Momentum{.lr = 0.1, .momentum = 0.9}, aggregator);
    trainer.fit(model, theta, data);
    return theta;
  };
  CHECK(train(dptrain::AnyAggregator::named("reduce-scatter")) == train(dptrain::ReduceScatterAggregator{}));
  CHECK(train(dptrain::AnyAggregator::named("ring")) == train(dptrain::RingAllReduceAggregator{}));
  CHECK(train(dptrain::AnyAggregator::named("tree")) == train(dptrain::TreeAggregator{}));
  CHECK(train(dptrain::AnyAggregator::named("serial")) == train(dptrain::SerialAggregator{}));
}

TEST_CASE("DataParallelTrainer: a multilayer model also matches single-thread training", "[trainer]") {
  const Index threads = GENERATE(2, 3, 7);
  const auto data = test::cluster_data<double>(50, 5, 3, 5);
  const dptrain::Mlp<double> model({5, 8, 7, 3});
  const dptrain::Adam optimizer{.lr = 0.01};
  dptrain::Vector<double> theta = model.init_parameters(9);
  const dptrain::Vector<double> expected = test::reference_training(model, theta, data, 16, 9, optimizer);
  dptrain::DataParallelTrainer trainer(
      {.threads = threads, .batch_size = 16, .epochs = 3, .max_steps = 9, .shuffle = false}, optimizer);
  trainer.fit(model, theta, data);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
}

TEST_CASE("DataParallelTrainer: with shuffling, N threads match one thread", "[trainer]") {
  const Index threads = GENERATE(2, 3, 4, 7);
  const auto data = test::linear_data<double>(101, 5, 2);
  const dptrain::LinearRegression<double> model(5);
  dptrain::TrainerOptions options{.threads = 1, .batch_size = 10, .epochs = 3, .seed = 42};
  dptrain::Vector<double> one = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}).fit(model, one, data);
  options.threads = threads;
  dptrain::Vector<double> many = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}).fit(model, many, data);
  CHECK(test::relative_error(many, one) <= 1e-12);
}

TEST_CASE("DataParallelTrainer: same seed and threads give bitwise-identical theta", "[trainer]") {
  const auto data = test::cluster_data<float>(300, 8, 3, 4);
  const dptrain::SoftmaxRegression<float> model(8, 3);
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 32, .epochs = 2, .seed = 7};
  const auto train = [&](dptrain::TrainerOptions o) {
    dptrain::Vector<float> theta = model.init_parameters();
    dptrain::DataParallelTrainer(o, dptrain::Adam{.lr = 0.01}).fit(model, theta, data);
    return theta;
  };
  const dptrain::Vector<float> a = train(options), b = train(options);
  CHECK((a.array() == b.array()).all());
  dptrain::TrainerOptions other = options;
  other.seed = 8;
  CHECK_FALSE((train(other).array() == a.array()).all());
}

TEST_CASE("DataParallelTrainer: gradient accumulation of k minibatches equals one k-times larger batch", "[trainer]") {
  const auto data = test::linear_data<double>(96, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  dptrain::Vector<double> accumulated = model.init_parameters(), large = model.init_parameters();
  dptrain::DataParallelTrainer({.threads = 3, .batch_size = 8, .epochs = 2, .shuffle = false, .accumulation_steps = 4},
                               dptrain::Sgd{.lr = 0.1})
      .fit(model, accumulated, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 32, .epochs = 2, .shuffle = false},
                                   dptrain::Sgd{.lr = 0.1})
          .fit(model, large, data);
  CHECK(report.steps == 6);
  CHECK(test::relative_error(accumulated, large) <= 1e-12);
}

TEST_CASE("DataParallelTrainer: equal weighting is the mean of the workers' mean gradients", "[trainer]") {
  // 10 samples on 3 workers: micro-batches of 4, 3 and 3 samples.
  const auto data = test::linear_data<double>(10, 3, 8);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = dptrain::Vector<double>::Constant(4, 0.25);
  const dptrain::Vector<double> start = theta;
  dptrain::DataParallelTrainer(
      {.threads = 3, .batch_size = 10, .max_steps = 1, .shuffle = false, .weighting = dptrain::Weighting::equal},
      dptrain::Sgd{.lr = 1.0})
      .fit(model, theta, data);
  dptrain::Vector<double> mean = dptrain::Vector<double>::Zero(4);
  auto ws = model.make_workspace(10);
  for (auto [begin, size] : {std::pair<Index, Index>{0, 4}, {4, 3}, {7, 3}}) {
    dptrain::Vector<double> g = dptrain::Vector<double>::Zero(4);
    model.loss_and_gradient(start, data.rows(begin, size), g, ws);
    mean += g / static_cast<double>(size) / 3.0;
  }
  CHECK(test::relative_error<double>(theta, start - mean) <= 1e-13);
}

TEST_CASE("DataParallelTrainer: more threads than samples still trains correctly", "[trainer]") {
  const auto data = test::linear_data<double>(3, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::Vector<double> expected = test::reference_training(model, theta, data, 3, 4, dptrain::Sgd{.lr = 0.1});
  dptrain::DataParallelTrainer({.threads = 7, .batch_size = 3, .epochs = 4, .shuffle = false}, dptrain::Sgd{.lr = 0.1})
      .fit(model, theta, data);
  CHECK(test::relative_error(theta, expected) <= 1e-12);
}

TEST_CASE("DataParallelTrainer: the report counts steps, epochs, samples and phase times", "[trainer]") {
  const auto data = test::linear_data<double>(50, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  SECTION("every minibatch, partial last one included") {
    const auto report =
        dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 3}, dptrain::Sgd{.lr = 0.01})
            .fit(model, theta, data);
    CHECK(report.steps == 12);
    CHECK(report.epochs == 3);
    CHECK(report.samples == 150);
    REQUIRE(report.epoch_loss.size() == 3);
    CHECK(report.epoch_loss[2] < report.epoch_loss[0]);
    REQUIRE(report.workers.size() == 2);
    for (const auto& w : report.workers) CHECK(w.compute > 0);
    CHECK(report.seconds > 0);
    CHECK(report.samples_per_second() > 0);
  }
  SECTION("drop_last skips the partial minibatch") {
    const auto report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 3, .drop_last = true},
                                                     dptrain::Sgd{.lr = 0.01})
                            .fit(model, theta, data);
    CHECK(report.steps == 9);
    CHECK(report.samples == 144);
  }
  SECTION("max_steps ends inside an epoch") {
    const auto report = dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 5, .max_steps = 6},
                                                     dptrain::Sgd{.lr = 0.01})
                            .fit(model, theta, data);
    CHECK(report.steps == 6);
    CHECK(report.epochs == 2);
  }
}

TEST_CASE("DataParallelTrainer: a weighted split gives the same theta as an even one", "[trainer]") {
  const auto data = test::linear_data<double>(64, 4, 9);
  const dptrain::LinearRegression<double> model(4);
  dptrain::Vector<double> even = model.init_parameters(), weighted = model.init_parameters();
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 16, .epochs = 2, .seed = 1};
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}).fit(model, even, data);
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, dptrain::WeightedPartitioner{.shares = {3, 1, 0.5}})
      .fit(model, weighted, data);
  CHECK(test::relative_error(weighted, even) <= 1e-12);
}

TEST_CASE("DataParallelTrainer: a balancing split moves samples off a slow worker and keeps theta", "[trainer]") {
  using namespace std::chrono_literals;
  const auto data = test::linear_data<double>(256, 4, 9);
  const dptrain::LinearRegression<double> model(4);
  dptrain::Vector<double> even = model.init_parameters(), balanced = model.init_parameters();
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 64, .epochs = 10, .seed = 1};
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}).fit(model, even, data);
  // Worker 1 waits 1 ms per micro-batch, far longer than its gradient takes: the split moves to
  // the floor, a quarter of the even share (8 of 64 samples). The even split would give it half.
  const dptrain::StragglerWorker<> slow{.ranks = {1}, .delay = 1ms};
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, dptrain::BalancingPartitioner{}, slow)
          .fit(model, balanced, data);
  CHECK(report.workers[0].samples + report.workers[1].samples == report.samples);
  CHECK(report.workers[1].samples < report.samples / 4);
  CHECK(test::relative_error(balanced, even) <= 1e-12);
}

TEST_CASE("DataParallelTrainer: gradient clipping bounds the step to lr times clip_norm", "[trainer]") {
  const auto data = test::linear_data<double>(20, 3, 2);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = dptrain::Vector<double>::Constant(4, 50.0);
  const dptrain::Vector<double> start = theta;
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 20, .max_steps = 1, .clip_norm = 0.5},
                               dptrain::Sgd{.lr = 1.0})
      .fit(model, theta, data);
  CHECK((theta - start).norm() == Approx(0.5).epsilon(1e-12));
}
