// SPDX-License-Identifier: MIT
// Tests for dptrain::Momentum: heavy ball, Nesterov, weight decay, slicing invariance, validation.
#include "dptrain/optimizers/momentum.hpp"

#include <catch2/catch.hpp>

#include "dptrain/optimizers/sgd.hpp"
#include "optimizers/optimizer_testing.hpp"

using namespace dptrain_test;
using Catch::Matchers::Contains;

static_assert(dptrain::Optimizer<dptrain::Momentum>);
static_assert(dptrain::Momentum::state_slots == 1);

TEMPLATE_TEST_CASE("Momentum: three heavy-ball steps match hand-computed values", "[optimizers]", float, double) {
  // θ0 = [1, −2, 0.5], lr = 0.1, μ = 0.9: v ← 0.9·v + g, θ ← θ − 0.1·v
  const dptrain::Momentum opt{.lr = 0.1, .momentum = 0.9};
  // t=1: v1 = g1 = [0.5, −1, 2];  θ1 = [1 − 0.05, −2 + 0.1, 0.5 − 0.2] = [0.95, −1.9, 0.3]
  const auto s1 = run<TestType>(opt, hand_theta0, first_grads(1));
  check_close(s1.state[0], {0.5, -1.0, 2.0});
  check_close(s1.theta, {0.95, -1.9, 0.3});
  // t=2: v2 = [0.45 − 0.5, −0.9 + 0.25, 1.8 + 1] = [−0.05, −0.65, 2.8]
  //      θ2 = [0.95 + 0.005, −1.9 + 0.065, 0.3 − 0.28] = [0.955, −1.835, 0.02]
  const auto s2 = run<TestType>(opt, hand_theta0, first_grads(2));
  check_close(s2.state[0], {-0.05, -0.65, 2.8});
  check_close(s2.theta, {0.955, -1.835, 0.02});
  // t=3: v3 = [−0.045 + 1, −0.585 + 0.5, 2.52 − 0.25] = [0.955, −0.085, 2.27]
  //      θ3 = [0.955 − 0.0955, −1.835 + 0.0085, 0.02 − 0.227] = [0.8595, −1.8265, −0.207]
  const auto s3 = run<TestType>(opt, hand_theta0, first_grads(3));
  check_close(s3.state[0], {0.955, -0.085, 2.27});
  check_close(s3.theta, {0.8595, -1.8265, -0.207});
}

TEMPLATE_TEST_CASE("Momentum: three Nesterov steps match hand-computed values", "[optimizers]", float, double) {
  // lr = 0.1, μ = 0.9: v ← 0.9·v + g (as heavy ball), θ ← θ − 0.1·(g + 0.9·v)
  const dptrain::Momentum opt{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  // t=1: v1 = [0.5, −1, 2];  g + 0.9·v1 = [0.5 + 0.45, −1 − 0.9, 2 + 1.8] = [0.95, −1.9, 3.8]
  //      θ1 = [1 − 0.095, −2 + 0.19, 0.5 − 0.38] = [0.905, −1.81, 0.12]
  check_close(run<TestType>(opt, hand_theta0, first_grads(1)).theta, {0.905, -1.81, 0.12});
  // t=2: v2 = [−0.05, −0.65, 2.8];  g + 0.9·v2 = [−0.5 − 0.045, 0.25 − 0.585, 1 + 2.52] = [−0.545, −0.335, 3.52]
  //      θ2 = [0.905 + 0.0545, −1.81 + 0.0335, 0.12 − 0.352] = [0.9595, −1.7765, −0.232]
  check_close(run<TestType>(opt, hand_theta0, first_grads(2)).theta, {0.9595, -1.7765, -0.232});
  // t=3: v3 = [0.955, −0.085, 2.27];  g + 0.9·v3 = [1 + 0.8595, 0.5 − 0.0765, −0.25 + 2.043] = [1.8595, 0.4235, 1.793]
  //      θ3 = [0.9595 − 0.18595, −1.7765 − 0.04235, −0.232 − 0.1793] = [0.77355, −1.81885, −0.4113]
  const auto s3 = run<TestType>(opt, hand_theta0, first_grads(3));
  check_close(s3.state[0], {0.955, -0.085, 2.27});
  check_close(s3.theta, {0.77355, -1.81885, -0.4113});
}

TEMPLATE_TEST_CASE("Momentum: weight decay enters the velocity", "[optimizers]", float, double) {
  // lr = 0.1, μ = 0.9, λ = 0.5: g' = g + 0.5·θ, v ← 0.9·v + g', θ ← θ − 0.1·v
  const dptrain::Momentum opt{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.5};
  // t=1: g' = [1, −2, 2.25] = v1;  θ1 = [0.9, −1.8, 0.275]
  check_close(run<TestType>(opt, hand_theta0, first_grads(1)).theta, {0.9, -1.8, 0.275});
  // t=2: g' = [−0.5 + 0.45, 0.25 − 0.9, 1 + 0.1375] = [−0.05, −0.65, 1.1375]
  //      v2 = [0.9 − 0.05, −1.8 − 0.65, 2.025 + 1.1375] = [0.85, −2.45, 3.1625]
  //      θ2 = [0.9 − 0.085, −1.8 + 0.245, 0.275 − 0.31625] = [0.815, −1.555, −0.04125]
  check_close(run<TestType>(opt, hand_theta0, first_grads(2)).theta, {0.815, -1.555, -0.04125});
  // t=3: g' = [1 + 0.4075, 0.5 − 0.7775, −0.25 − 0.020625] = [1.4075, −0.2775, −0.270625]
  //      v3 = [0.765 + 1.4075, −2.205 − 0.2775, 2.84625 − 0.270625] = [2.1725, −2.4825, 2.575625]
  //      θ3 = [0.815 − 0.21725, −1.555 + 0.24825, −0.04125 − 0.2575625] = [0.59775, −1.30675, −0.2988125]
  const auto s3 = run<TestType>(opt, hand_theta0, first_grads(3));
  check_close(s3.state[0], {2.1725, -2.4825, 2.575625});
  check_close(s3.theta, {0.59775, -1.30675, -0.2988125});
}

TEMPLATE_TEST_CASE("Momentum: momentum = 0 is bitwise plain Sgd", "[optimizers]", float, double) {
  const std::vector<double> theta0 = random_vector(23, 7);
  const std::vector<std::vector<double>> grads{random_vector(23, 8), random_vector(23, 9)};
  const auto momentum =
      run<TestType>(dptrain::Momentum{.lr = 0.1, .momentum = 0.0, .weight_decay = 0.01}, theta0, grads);
  const auto sgd = run<TestType>(dptrain::Sgd{.lr = 0.1, .weight_decay = 0.01}, theta0, grads);
  CHECK(momentum.theta == sgd.theta);
}

TEMPLATE_TEST_CASE("Momentum: slicing theta gives bitwise the same result", "[optimizers]", float, double) {
  check_slicing_invariance<TestType>(dptrain::Momentum{.lr = 0.1, .momentum = 0.9});
  check_slicing_invariance<TestType>(
      dptrain::Momentum{.lr = 0.1, .momentum = 0.9, .nesterov = true, .weight_decay = 0.01});
}

TEMPLATE_TEST_CASE("Momentum: decay_biases = false takes no decay term on the biases", "[optimizers]", float, double) {
  check_biases_not_decayed<TestType>(dptrain::Momentum{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.3});
  check_biases_not_decayed<TestType>(
      dptrain::Momentum{.lr = 0.1, .momentum = 0.9, .nesterov = true, .weight_decay = 0.3});
}

TEST_CASE("Momentum: validate rejects bad hyperparameters and names the value", "[optimizers]") {
  CHECK_NOTHROW(dptrain::Momentum{}.validate());
  CHECK_NOTHROW(dptrain::Momentum{.momentum = 0.0}.validate());
  CHECK_THAT(validation_error(dptrain::Momentum{.lr = -1.0}),
             Contains("dptrain::Momentum: lr must") && Contains("got -1"));
  CHECK_THAT(validation_error(dptrain::Momentum{.momentum = 1.0}),
             Contains("momentum must be in [0, 1)") && Contains("got 1"));
  CHECK_THAT(validation_error(dptrain::Momentum{.momentum = -0.1}), Contains("momentum must") && Contains("got -0.1"));
  CHECK_THAT(validation_error(dptrain::Momentum{.weight_decay = -0.5}),
             Contains("weight_decay must") && Contains("got -0.5"));
  CHECK_THAT(validation_error(dptrain::Momentum{.momentum = 0.0, .nesterov = true}),
             Contains("momentum must be > 0 when nesterov is true") && Contains("got 0"));
}
