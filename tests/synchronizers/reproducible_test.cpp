// SPDX-License-Identifier: MIT
// Reproducible: the same θ, byte for byte, on any number of threads, for a fixed shard count.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/faults.hpp"

using dptrain::Index;

static_assert(dptrain::Synchronizer<dptrain::Reproducible>);

namespace {

template <class Scalar>
bool same_bytes(const dptrain::Vector<Scalar>& a, const dptrain::Vector<Scalar>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(Scalar)) == 0;
}

// 203 samples in minibatches of 24: eight full ones and a partial one of 11, two minibatches to a
// step (accumulation), clipped: 50 steps are 10 epochs of 5 steps.
dptrain::TrainerOptions reproducible_options(Index threads) {
  return {.threads = threads, .batch_size = 24, .epochs = 10, .seed = 5, .accumulation_steps = 2, .clip_norm = 0.5};
}

template <class Model, class Optimizer>
dptrain::Vector<typename Model::scalar_type> train_reproducible(const Model& model, const Optimizer& optimizer,
                                                                Index threads, Index shards) {
  using Scalar = typename Model::scalar_type;
  static const auto data = test::cluster_data<Scalar>(203, 10, 4, 3);
  dptrain::Vector<Scalar> theta = model.init_parameters(7);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(reproducible_options(threads), optimizer, dptrain::Reproducible{.shards = shards})
          .fit(model, theta, data);
  REQUIRE(report.steps == 50);
  return theta;
}

template <class Scalar>
void check_every_optimizer_and_thread_count() {
  const dptrain::SoftmaxRegression<Scalar> softmax(10, 4);
  const dptrain::Mlp<Scalar> mlp({10, 12, 4});
  const auto each_model = [&](const auto& optimizer, const std::string& name) {
    for (const Index shards : {6, 7}) {  // 2 and 3 divide 6; 4, 5 and 8 neither; 7 is prime
      const auto soft_one = train_reproducible(softmax, optimizer, 1, shards);
      const auto mlp_one = train_reproducible(mlp, optimizer, 1, shards);
      for (const Index threads : {2, 3, 4, 5, 8}) {
        INFO(name << ", " << shards << " shards, " << threads << " threads");
        CHECK(same_bytes(train_reproducible(softmax, optimizer, threads, shards), soft_one));
        CHECK(same_bytes(train_reproducible(mlp, optimizer, threads, shards), mlp_one));
      }
    }
  };
  each_model(dptrain::Sgd{.lr = 0.1}, "Sgd");
  each_model(dptrain::Momentum{.lr = 0.05, .momentum = 0.9, .nesterov = true}, "Momentum");
  each_model(dptrain::Adam{.lr = 0.01}, "Adam");
  each_model(dptrain::AdamW{.lr = 0.01}, "AdamW");
  each_model(dptrain::RMSProp{.lr = 0.01}, "RMSProp");
  each_model(dptrain::AdaGrad{.lr = 0.05}, "Adagrad");
}

}  // namespace

TEST_CASE("Reproducible: theta after 50 steps is the same bytes on 1, 2, 3, 4, 5 and 8 threads (float)",
          "[synchronizers][trainer][reproducible]") {
  check_every_optimizer_and_thread_count<float>();
}

TEST_CASE("Reproducible: theta after 50 steps is the same bytes on 1, 2, 3, 4, 5 and 8 threads (double)",
          "[synchronizers][trainer][reproducible]") {
  check_every_optimizer_and_thread_count<double>();
}

TEST_CASE("Reproducible: each step is the synchronous step, equal to EveryStepSynchronizer's within 1e-12 in double",
          "[synchronizers][trainer][reproducible]") {
  const auto data = test::cluster_data<double>(203, 10, 4, 3);
  const dptrain::Mlp<double> mlp({10, 12, 4});
  const dptrain::Momentum momentum{.lr = 0.05, .momentum = 0.9};
  // Under Weighting::by_samples the mean is over the step's samples however they are cut.
  dptrain::TrainerOptions options = reproducible_options(2);
  options.weighting = dptrain::Weighting::by_samples;
  dptrain::Vector<double> every = mlp.init_parameters(7), shards = every;
  const dptrain::FitReport expected = dptrain::DataParallelTrainer(options, momentum).fit(mlp, every, data);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, momentum, dptrain::Reproducible{.shards = 5}).fit(mlp, shards, data);
  CHECK(test::relative_error(shards, every) < 1e-12);
  CHECK(report.steps == expected.steps);
  CHECK(report.samples == expected.samples);
  CHECK(report.final_loss == Approx(expected.final_loss).epsilon(1e-12));
  Index samples = 0;
  for (const dptrain::WorkerReport& worker : report.workers) samples += worker.samples;
  CHECK(samples == report.samples);
}

TEST_CASE("Reproducible: a shard that throws at step 7 leaves fit() with its exception, theta as after step 6",
          "[synchronizers][trainer][reproducible][faults]") {
  // Row 100 of unshuffled data is in the seventh minibatch of 16: step 7 fails.
  auto data = test::linear_data<double>(160, 3, 1);
  data.features(100, 0) = test::ThrowsOnMarkedRow::marker();
  const test::ThrowsOnMarkedRow model(3, "shard failed");
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 16, .epochs = 2, .shuffle = false};
  dptrain::Vector<double> theta = model.init_parameters();
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, dptrain::Reproducible{.shards = 4})
                        .fit(model, theta, data),
                    "shard failed");
  dptrain::TrainerOptions six = options;
  six.max_steps = 6;
  dptrain::Vector<double> expected = model.init_parameters();
  dptrain::DataParallelTrainer(six, dptrain::Adam{.lr = 0.01}, dptrain::Reproducible{.shards = 4})
      .fit(model, expected, data);
  CHECK((theta.array() == expected.array()).all());
}

TEST_CASE("Reproducible: a callback that stops at step 9 ends training there, on every thread count",
          "[synchronizers][trainer][reproducible]") {
  struct StopAtNine {
    dptrain::Index seen = 0;
    bool on_step_end(dptrain::TrainContext<float>& ctx) {
      ++seen;
      return ctx.step == 9;
    }
  };
  const auto data = test::cluster_data<float>(203, 10, 4, 3);
  const dptrain::Mlp<float> mlp({10, 12, 4});
  dptrain::TrainerOptions options = reproducible_options(1);
  options.max_steps = 9;
  dptrain::Vector<float> expected = mlp.init_parameters(7);
  dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, dptrain::Reproducible{.shards = 6})
      .fit(mlp, expected, data);
  for (const Index threads : {1, 3}) {
    StopAtNine stop;
    dptrain::Vector<float> theta = mlp.init_parameters(7);
    const dptrain::FitReport report =
        dptrain::DataParallelTrainer(reproducible_options(threads), dptrain::Adam{.lr = 0.01},
                                     dptrain::Reproducible{.shards = 6})
            .fit(mlp, theta, data, stop);
    CHECK(report.steps == 9);
    CHECK(stop.seen == 9);
    CHECK(same_bytes(theta, expected));
  }
}

TEST_CASE("Reproducible: bad settings are refused before the first step", "[synchronizers][trainer][reproducible]") {
  const auto data = test::cluster_data<float>(40, 4, 2, 1);
  const dptrain::SoftmaxRegression<float> model(4, 2);
  dptrain::Vector<float> theta = model.init_parameters(1);
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.1},
                                       dptrain::Reproducible{.shards = 0});
  CHECK_THROWS_WITH(trainer.fit(model, theta, data), Catch::Contains("shards must be at least 1"));
}
