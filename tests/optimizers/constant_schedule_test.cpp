// SPDX-License-Identifier: MIT
// Tests for dptrain::ConstantSchedule.
#include "dptrain/optimizers/constant_schedule.hpp"

#include <catch2/catch.hpp>

#include "dptrain/concepts.hpp"

static_assert(dptrain::Schedule<dptrain::ConstantSchedule>);
static_assert(dptrain::ConstantSchedule{}.factor(1) == 1.0);

TEST_CASE("ConstantSchedule: the factor is 1 at every step", "[optimizers]") {
  const dptrain::ConstantSchedule schedule{};
  const dptrain::Index step = GENERATE(1, 2, 100, 1'000'000'000);
  CHECK(schedule.factor(step) == 1.0);
  CHECK_NOTHROW(schedule.validate());
}
