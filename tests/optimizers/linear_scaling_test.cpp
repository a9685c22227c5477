// SPDX-License-Identifier: MIT
// Tests for dptrain::linear_scaling: values, constexpr use, errors, pairing with warm-up.
#include "dptrain/optimizers/linear_scaling.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <string>

#include "dptrain/optimizers/sgd.hpp"
#include "dptrain/optimizers/warmup_schedule.hpp"

using Catch::Matchers::Contains;

static_assert(dptrain::linear_scaling(0.1, 256, 512) == 0.2);  // usable in constant expressions

namespace {

std::string scaling_error(double base_lr, dptrain::Index base_batch, dptrain::Index batch) {
  try {
    (void)dptrain::linear_scaling(base_lr, base_batch, batch);
  } catch (const dptrain::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST_CASE("linear_scaling: multiplies the learning rate by batch / base_batch", "[optimizers]") {
  CHECK(dptrain::linear_scaling(0.1, 256, 8192) == 3.2);  // k = 32: 0.1·32
  CHECK(dptrain::linear_scaling(0.1, 256, 128) == 0.05);  // k = ½
  CHECK(dptrain::linear_scaling(0.1, 256, 256) == 0.1);   // k = 1
  CHECK_THAT(dptrain::linear_scaling(0.5, 3, 4), Catch::Matchers::WithinRel(0.6666666666666666, 1e-15));  // 0.5·4/3
}

TEST_CASE("linear_scaling: rejects non-positive arguments and names them", "[optimizers]") {
  CHECK_THAT(scaling_error(0.0, 256, 512),
             Contains("dptrain::linear_scaling: base_lr must be finite and > 0") && Contains("got 0"));
  CHECK_THAT(scaling_error(-0.1, 256, 512), Contains("base_lr must") && Contains("got -0.1"));
  CHECK_THAT(scaling_error(std::numeric_limits<double>::infinity(), 256, 512),
             Contains("base_lr must") && Contains("got inf"));
  CHECK_THAT(scaling_error(std::numeric_limits<double>::quiet_NaN(), 256, 512),
             Contains("base_lr must") && Contains("got nan"));
  CHECK_THAT(scaling_error(0.1, 0, 512), Contains("base_batch must be > 0") && Contains("got 0"));
  CHECK_THAT(scaling_error(0.1, -256, 512), Contains("base_batch must") && Contains("got -256"));
  CHECK_THAT(scaling_error(0.1, 256, 0), Contains("batch must be > 0") && Contains("got 0"));
}

TEST_CASE("linear_scaling: paired with a warm-up as in Goyal et al.", "[optimizers]") {
  // lr = 0.1·8192/256 = 3.2, reached after a 100-step ramp: step 1 uses 3.2/100, step 50 3.2/2.
  const dptrain::Sgd sgd{.lr = dptrain::linear_scaling(0.1, 256, 8192)};
  const dptrain::WarmupSchedule<> warmup{.warmup_steps = 100};
  CHECK_NOTHROW(sgd.validate());
  CHECK_THAT(sgd.lr * warmup.factor(1), Catch::Matchers::WithinRel(0.032, 1e-15));
  CHECK(sgd.lr * warmup.factor(50) == 1.6);
  CHECK(sgd.lr * warmup.factor(100) == 3.2);
}
