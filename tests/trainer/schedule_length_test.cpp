// SPDX-License-Identifier: MIT
// Schedules take their lengths from the fit() they run in, unless given one.
#include <catch2/catch.hpp>

#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using dptrain::Index;

namespace {

struct LearningRates {
  std::vector<double> lr;
  void on_step_end(dptrain::TrainContext<double>& ctx) { lr.push_back(ctx.lr); }
};

// The learning rate of every step of a 3-epoch fit of 5 steps an epoch (45 samples, batch 10).
template <class Schedule>
std::vector<double> rates(const Schedule& schedule, Index max_steps = 0) {
  const auto data = test::linear_data<double>(45, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  LearningRates seen;
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 3, .max_steps = max_steps},
                               dptrain::Sgd{.lr = 1.0}, schedule)
      .fit(model, theta, data, seen);
  return seen.lr;
}

}  // namespace

TEST_CASE("Schedules: a CosineSchedule without total_steps decays over the whole run", "[optimizers][trainer]") {
  const std::vector<double> lr = rates(dptrain::CosineSchedule{.min_factor = 0.1});
  REQUIRE(lr.size() == 15);
  const dptrain::CosineSchedule fixed{.total_steps = 15, .min_factor = 0.1};
  for (Index step = 1; step <= 15; ++step) CHECK(lr[static_cast<std::size_t>(step - 1)] == fixed.factor(step));
  // max_steps shortens the run, and the decay with it; a given length is kept.
  CHECK(rates(dptrain::CosineSchedule{}, 6).back() == dptrain::CosineSchedule{.total_steps = 6}.factor(6));
  CHECK(rates(dptrain::CosineSchedule{.total_steps = 100}).back() ==
        dptrain::CosineSchedule{.total_steps = 100}.factor(15));
}

TEST_CASE("Schedules: a StepSchedule without step_size decays every step_epochs epochs", "[optimizers][trainer]") {
  const std::vector<double> lr = rates(dptrain::StepSchedule{.gamma = 0.5});
  REQUIRE(lr.size() == 15);
  CHECK(lr[4] == 1.0);    // epoch 1
  CHECK(lr[5] == 0.5);    // epoch 2
  CHECK(lr[14] == 0.25);  // epoch 3
  const std::vector<double> two = rates(dptrain::StepSchedule{.step_epochs = 2, .gamma = 0.5});
  CHECK(two[9] == 1.0);
  CHECK(two[10] == 0.5);
}

TEST_CASE("Schedules: a LinearScalingSchedule scales to the run's minibatch", "[optimizers][trainer]") {
  // batch_size 10: twice the base batch of 5.
  for (const double lr : rates(dptrain::LinearScalingSchedule<>{.base_batch = 5})) CHECK(lr == 2.0);
  // Composed: warm-up over an epoch, scaling, cosine over the run.
  const std::vector<double> lr = rates(dptrain::WarmupSchedule<dptrain::LinearScalingSchedule<dptrain::CosineSchedule>>{
      .warmup_epochs = 1, .after = {.base_batch = 20}});
  REQUIRE(lr.size() == 15);
  const dptrain::WarmupSchedule<dptrain::CosineSchedule> unscaled{.warmup_steps = 5, .after = {.total_steps = 15}};
  for (Index step = 1; step <= 15; ++step)
    CHECK(lr[static_cast<std::size_t>(step - 1)] == Approx(0.5 * unscaled.factor(step)).epsilon(1e-15));
  CHECK_THROWS_WITH(dptrain::LinearScalingSchedule<>{}.validate(),
                    Catch::Matchers::Contains("dptrain::LinearScalingSchedule: base_batch must be > 0"));
}

TEST_CASE("Schedules: a WarmupSchedule ramps over warmup_epochs and passes the run to its inner schedule",
          "[optimizers][trainer]") {
  const std::vector<double> lr = rates(dptrain::WarmupSchedule<dptrain::CosineSchedule>{.warmup_epochs = 1});
  REQUIRE(lr.size() == 15);
  const dptrain::WarmupSchedule<dptrain::CosineSchedule> fixed{.warmup_steps = 5, .after = {.total_steps = 15}};
  for (Index step = 1; step <= 15; ++step) CHECK(lr[static_cast<std::size_t>(step - 1)] == fixed.factor(step));
  CHECK(lr[0] == Approx(0.2));
}
