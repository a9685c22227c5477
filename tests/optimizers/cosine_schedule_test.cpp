// SPDX-License-Identifier: MIT
// Tests for dptrain::CosineSchedule: hand-computed factors, the floor, validation.
#include "dptrain/optimizers/cosine_schedule.hpp"

#include <catch2/catch.hpp>

#include "dptrain/concepts.hpp"
#include "optimizers/optimizer_testing.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using dptrain_test::validation_error;

static_assert(dptrain::Schedule<dptrain::CosineSchedule>);

TEST_CASE("CosineSchedule: half a cosine from 1 to 0 over total_steps", "[optimizers]") {
  // T = 4: factor = ½(1 + cos(π·min(t − 1, 4)/4)), cos(π/4) = 0.7071067811865476
  const dptrain::CosineSchedule schedule{.total_steps = 4};
  CHECK(schedule.factor(1) == 1.0);                                      // ½(1 + cos 0)
  CHECK_THAT(schedule.factor(2), WithinAbs(0.8535533905932738, 1e-15));  // ½(1 + 0.7071067811865476)
  CHECK_THAT(schedule.factor(3), WithinAbs(0.5, 1e-15));                 // ½(1 + cos(π/2))
  CHECK_THAT(schedule.factor(4), WithinAbs(0.1464466094067262, 1e-15));  // ½(1 − 0.7071067811865476)
  CHECK(schedule.factor(5) == 0.0);                                      // ½(1 + cos π)
  CHECK(schedule.factor(1000) == 0.0);                                   // stays at the floor
}

TEST_CASE("CosineSchedule: min_factor is the floor", "[optimizers]") {
  // T = 4, m = 0.1: factor = 0.1 + 0.9·½(1 + cos(π·min(t − 1, 4)/4))
  const dptrain::CosineSchedule schedule{.total_steps = 4, .min_factor = 0.1};
  CHECK(schedule.factor(1) == 1.0);
  CHECK_THAT(schedule.factor(2), WithinAbs(0.8681980515339464, 1e-15));  // 0.1 + 0.9·0.8535533905932738
  CHECK_THAT(schedule.factor(3), WithinAbs(0.55, 1e-15));                // 0.1 + 0.9·0.5
  CHECK_THAT(schedule.factor(5), WithinAbs(0.1, 1e-15));
  CHECK_THAT(schedule.factor(50), WithinAbs(0.1, 1e-15));
}

TEST_CASE("CosineSchedule: validate rejects bad values and names them", "[optimizers]") {
  CHECK_NOTHROW(dptrain::CosineSchedule{.total_steps = 1}.validate());
  CHECK_NOTHROW(dptrain::CosineSchedule{.total_steps = 1, .min_factor = 1.0}.validate());
  CHECK_NOTHROW(dptrain::CosineSchedule{}.validate());  // 0: the run's length
  CHECK_THAT(validation_error(dptrain::CosineSchedule{.total_steps = -3}),
             Contains("dptrain::CosineSchedule: total_steps must be >= 0") && Contains("got -3"));
  CHECK_THAT(validation_error(dptrain::CosineSchedule{.total_steps = 10, .min_factor = -0.1}),
             Contains("min_factor must be in [0, 1]") && Contains("got -0.1"));
  CHECK_THAT(validation_error(dptrain::CosineSchedule{.total_steps = 10, .min_factor = 1.5}),
             Contains("min_factor must") && Contains("got 1.5"));
}
