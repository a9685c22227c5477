// SPDX-License-Identifier: MIT
// Tests for dptrain::Sgd: hand-computed steps, weight decay, slicing invariance, validation.
#include "dptrain/optimizers/sgd.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "optimizers/optimizer_testing.hpp"

using namespace dptrain_test;
using Catch::Matchers::Contains;

static_assert(dptrain::Optimizer<dptrain::Sgd>);
static_assert(dptrain::Sgd::state_slots == 0);

TEMPLATE_TEST_CASE("Sgd: three steps match hand-computed values", "[optimizers]", float, double) {
  // θ0 = [1, −2, 0.5], lr = 0.1, θ ← θ − 0.1·g
  const dptrain::Sgd sgd{.lr = 0.1};
  // t=1: g1 = [0.5, −1, 2]   → θ1 = [1 − 0.05, −2 + 0.1, 0.5 − 0.2]      = [0.95, −1.9, 0.3]
  check_close(run<TestType>(sgd, hand_theta0, first_grads(1)).theta, {0.95, -1.9, 0.3});
  // t=2: g2 = [−0.5, 0.25, 1] → θ2 = [0.95 + 0.05, −1.9 − 0.025, 0.3 − 0.1] = [1, −1.925, 0.2]
  check_close(run<TestType>(sgd, hand_theta0, first_grads(2)).theta, {1.0, -1.925, 0.2});
  // t=3: g3 = [1, 0.5, −0.25] → θ3 = [1 − 0.1, −1.925 − 0.05, 0.2 + 0.025] = [0.9, −1.975, 0.225]
  check_close(run<TestType>(sgd, hand_theta0, first_grads(3)).theta, {0.9, -1.975, 0.225});
}

TEMPLATE_TEST_CASE("Sgd: weight decay adds lambda*theta to the gradient", "[optimizers]", float, double) {
  // λ = 0.5, lr = 0.1: g' = g + 0.5·θ, θ ← θ − 0.1·g'
  const dptrain::Sgd sgd{.lr = 0.1, .weight_decay = 0.5};
  // t=1: g' = [0.5 + 0.5, −1 − 1, 2 + 0.25] = [1, −2, 2.25]
  //      θ1 = [1 − 0.1, −2 + 0.2, 0.5 − 0.225] = [0.9, −1.8, 0.275]
  check_close(run<TestType>(sgd, hand_theta0, first_grads(1)).theta, {0.9, -1.8, 0.275});
  // t=2: g' = [−0.5 + 0.45, 0.25 − 0.9, 1 + 0.1375] = [−0.05, −0.65, 1.1375]
  //      θ2 = [0.9 + 0.005, −1.8 + 0.065, 0.275 − 0.11375] = [0.905, −1.735, 0.16125]
  check_close(run<TestType>(sgd, hand_theta0, first_grads(2)).theta, {0.905, -1.735, 0.16125});
  // t=3: g' = [1 + 0.4525, 0.5 − 0.8675, −0.25 + 0.080625] = [1.4525, −0.3675, −0.169375]
  //      θ3 = [0.905 − 0.14525, −1.735 + 0.03675, 0.16125 + 0.0169375] = [0.75975, −1.69825, 0.1781875]
  check_close(run<TestType>(sgd, hand_theta0, first_grads(3)).theta, {0.75975, -1.69825, 0.1781875});
}

TEMPLATE_TEST_CASE("Sgd: the step uses StepInfo::lr, not the optimizer's lr", "[optimizers]", float, double) {
  // lr = 0.1 but the schedule made it 0.05: θ1 = θ0 − 0.05·g1 = [1 − 0.025, −2 + 0.05, 0.5 − 0.1]
  const dptrain::Sgd sgd{.lr = 0.1};
  check_close(run<TestType>(sgd, hand_theta0, first_grads(1), {}, 0.05).theta, {0.975, -1.95, 0.4});
}

TEMPLATE_TEST_CASE("Sgd: slicing theta gives bitwise the same result", "[optimizers]", float, double) {
  check_slicing_invariance<TestType>(dptrain::Sgd{.lr = 0.1});
  check_slicing_invariance<TestType>(dptrain::Sgd{.lr = 0.1, .weight_decay = 0.01});
}

TEMPLATE_TEST_CASE("Sgd: decay_biases = false takes no decay term on the biases", "[optimizers]", float, double) {
  // λ = 0.5, lr = 0.1, θ[2] a bias: g' = [0.5 + 0.5, −1 − 1, 2] (no 0.5·θ[2] term)
  //   θ1 = [1 − 0.1, −2 + 0.2, 0.5 − 0.2] = [0.9, −1.8, 0.3]
  const dptrain::Sgd sgd{.lr = 0.1, .weight_decay = 0.5, .decay_biases = false};
  check_close(run<TestType>(sgd, hand_theta0, first_grads(1), {}, -1.0, {{2, 1}}).theta, {0.9, -1.8, 0.3});
  // The default decays it: θ1[2] = 0.5 − 0.1·(2 + 0.25) = 0.275 (see the weight decay case).
  check_close(
      run<TestType>(dptrain::Sgd{.lr = 0.1, .weight_decay = 0.5}, hand_theta0, first_grads(1), {}, -1.0, {{2, 1}})
          .theta,
      {0.9, -1.8, 0.275});
  check_biases_not_decayed<TestType>(dptrain::Sgd{.lr = 0.1, .weight_decay = 0.3});
}

TEST_CASE("Sgd: validate rejects bad hyperparameters and names the value", "[optimizers]") {
  CHECK_NOTHROW(dptrain::Sgd{}.validate());
  CHECK_THAT(validation_error(dptrain::Sgd{.lr = 0.0}), Contains("dptrain::Sgd: lr must") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::Sgd{.lr = -0.5}), Contains("lr must") && Contains("got -0.5"));
  CHECK_THAT(validation_error(dptrain::Sgd{.lr = std::numeric_limits<double>::quiet_NaN()}),
             Contains("lr must") && Contains("got nan"));
  CHECK_THAT(validation_error(dptrain::Sgd{.lr = std::numeric_limits<double>::infinity()}),
             Contains("lr must") && Contains("got inf"));
  CHECK_THAT(validation_error(dptrain::Sgd{.weight_decay = -1e-4}),
             Contains("weight_decay must") && Contains("got -1e-04"));
}
