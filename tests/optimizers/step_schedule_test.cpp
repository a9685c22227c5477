// SPDX-License-Identifier: MIT
// Tests for dptrain::StepSchedule: hand-computed factors and validation.
#include "dptrain/optimizers/step_schedule.hpp"

#include <catch2/catch.hpp>

#include <limits>

#include "dptrain/concepts.hpp"
#include "optimizers/optimizer_testing.hpp"

using Catch::Matchers::Contains;
using dptrain_test::validation_error;

static_assert(dptrain::Schedule<dptrain::StepSchedule>);

TEST_CASE("StepSchedule: multiplies by gamma every step_size steps", "[optimizers]") {
  // step_size = 3, γ = 0.5: factor = 0.5^floor((t − 1)/3)
  const dptrain::StepSchedule schedule{.step_size = 3, .gamma = 0.5};
  CHECK(schedule.factor(1) == 1.0);            // floor(0/3) = 0
  CHECK(schedule.factor(3) == 1.0);            // floor(2/3) = 0
  CHECK(schedule.factor(4) == 0.5);            // floor(3/3) = 1
  CHECK(schedule.factor(6) == 0.5);            // floor(5/3) = 1
  CHECK(schedule.factor(7) == 0.25);           // floor(6/3) = 2
  CHECK(schedule.factor(31) == 0.0009765625);  // floor(30/3) = 10: 0.5^10 = 1/1024
}

TEST_CASE("StepSchedule: the default gamma is 0.1", "[optimizers]") {
  const dptrain::StepSchedule schedule{.step_size = 100};
  CHECK(schedule.factor(100) == 1.0);
  CHECK_THAT(schedule.factor(101), Catch::Matchers::WithinRel(0.1, 1e-15));
  CHECK_THAT(schedule.factor(201), Catch::Matchers::WithinRel(0.01, 1e-15));
}

TEST_CASE("StepSchedule: validate rejects bad values and names them", "[optimizers]") {
  CHECK_NOTHROW(dptrain::StepSchedule{.step_size = 1}.validate());
  CHECK_NOTHROW(dptrain::StepSchedule{.step_size = 1, .gamma = 1.0}.validate());
  CHECK_NOTHROW(dptrain::StepSchedule{}.validate());  // 0: every step_epochs epochs of the run
  CHECK_THAT(validation_error(dptrain::StepSchedule{.step_epochs = 0}),
             Contains("dptrain::StepSchedule: step_epochs must be > 0") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::StepSchedule{.step_size = -5}),
             Contains("step_size must") && Contains("got -5"));
  CHECK_THAT(validation_error(dptrain::StepSchedule{.step_size = 10, .gamma = 0.0}),
             Contains("gamma must be in (0, 1]") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::StepSchedule{.step_size = 10, .gamma = 2.0}),
             Contains("gamma must") && Contains("got 2"));
  CHECK_THAT(
      validation_error(dptrain::StepSchedule{.step_size = 10, .gamma = std::numeric_limits<double>::quiet_NaN()}),
      Contains("gamma must") && Contains("got nan"));
}
