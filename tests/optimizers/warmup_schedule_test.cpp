// SPDX-License-Identifier: MIT
// Tests for dptrain::WarmupSchedule: the linear ramp, composition with other schedules, validation.
#include "dptrain/optimizers/warmup_schedule.hpp"

#include <catch2/catch.hpp>

#include "dptrain/concepts.hpp"
#include "dptrain/optimizers/cosine_schedule.hpp"
#include "dptrain/optimizers/step_schedule.hpp"
#include "optimizers/optimizer_testing.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using dptrain_test::validation_error;

static_assert(dptrain::Schedule<dptrain::WarmupSchedule<>>);
static_assert(dptrain::Schedule<dptrain::WarmupSchedule<dptrain::CosineSchedule>>);
static_assert(dptrain::Schedule<dptrain::WarmupSchedule<dptrain::WarmupSchedule<dptrain::StepSchedule>>>);

TEST_CASE("WarmupSchedule: ramps linearly to 1 over warmup_steps, then constant", "[optimizers]") {
  // W = 4: factor = min(1, t/4)
  const dptrain::WarmupSchedule<> schedule{.warmup_steps = 4};
  CHECK(schedule.factor(1) == 0.25);
  CHECK(schedule.factor(2) == 0.5);
  CHECK(schedule.factor(3) == 0.75);
  CHECK(schedule.factor(4) == 1.0);
  CHECK(schedule.factor(5) == 1.0);
  CHECK(schedule.factor(10'000) == 1.0);
}

TEST_CASE("WarmupSchedule: warmup_steps = 0 or 1 is no warm-up", "[optimizers]") {
  const dptrain::Index step = GENERATE(1, 2, 50);
  CHECK(dptrain::WarmupSchedule<>{.warmup_steps = 0}.factor(step) == 1.0);
  CHECK(dptrain::WarmupSchedule<>{.warmup_steps = 1}.factor(step) == 1.0);
}

TEST_CASE("WarmupSchedule: composes with a cosine decay", "[optimizers]") {
  // W = 2, cosine over T = 4 counted from step 1: factor = ½(1 + cos(π·min(t − 1, 4)/4))·min(1, t/2)
  const dptrain::WarmupSchedule<dptrain::CosineSchedule> schedule{.warmup_steps = 2, .after = {.total_steps = 4}};
  CHECK(schedule.factor(1) == 0.5);                                      // 1·½
  CHECK_THAT(schedule.factor(2), WithinAbs(0.8535533905932738, 1e-15));  // ½(1 + cos(π/4))·1
  CHECK_THAT(schedule.factor(3), WithinAbs(0.5, 1e-15));                 // ½(1 + cos(π/2))
  CHECK(schedule.factor(5) == 0.0);
}

TEST_CASE("WarmupSchedule: the documented cosine example builds with designated initialisers", "[optimizers]") {
  const auto schedule =
      dptrain::WarmupSchedule<dptrain::CosineSchedule>{.warmup_steps = 500, .after = {.total_steps = 10000}};
  CHECK_NOTHROW(schedule.validate());
  // t = 1: ½(1 + cos 0)·(1/500) = 0.002; t = 10001: the cosine has reached 0
  CHECK(schedule.factor(1) == 0.002);
  CHECK(schedule.factor(10001) == 0.0);
  // t = 250: inside the ramp, the factor is the cosine's times 250/500
  CHECK(schedule.factor(250) == dptrain::CosineSchedule{.total_steps = 10000}.factor(250) * 0.5);
}

TEST_CASE("WarmupSchedule: composes with step decay", "[optimizers]") {
  // W = 4, step_size = 3, γ = 0.5: factor = 0.5^floor((t − 1)/3)·min(1, t/4)
  const dptrain::WarmupSchedule<dptrain::StepSchedule> schedule{.warmup_steps = 4,
                                                                .after = {.step_size = 3, .gamma = 0.5}};
  CHECK(schedule.factor(1) == 0.25);  // 1·1/4
  CHECK(schedule.factor(3) == 0.75);  // 1·3/4
  CHECK(schedule.factor(4) == 0.5);   // 0.5·1
  CHECK(schedule.factor(7) == 0.25);  // 0.25·1
}

TEST_CASE("WarmupSchedule: validate checks warmup_steps and the inner schedule", "[optimizers]") {
  CHECK_NOTHROW(dptrain::WarmupSchedule<>{.warmup_steps = 0}.validate());
  CHECK_THAT(validation_error(dptrain::WarmupSchedule<>{.warmup_steps = -1}),
             Contains("dptrain::WarmupSchedule: warmup_steps must be >= 0") && Contains("got -1"));
  CHECK_THAT(validation_error(
                 dptrain::WarmupSchedule<dptrain::CosineSchedule>{.warmup_steps = 10, .after = {.total_steps = -1}}),
             Contains("dptrain::CosineSchedule: total_steps must be >= 0"));
  CHECK_THAT(validation_error(dptrain::WarmupSchedule<>{.warmup_epochs = -0.5}),
             Contains("dptrain::WarmupSchedule: warmup_epochs must be finite and >= 0") && Contains("got -0.5"));
  CHECK_THAT(validation_error(dptrain::WarmupSchedule<dptrain::StepSchedule>{.warmup_steps = 10,
                                                                             .after = {.step_size = 5, .gamma = 3.0}}),
             Contains("dptrain::StepSchedule: gamma must") && Contains("got 3"));
}
