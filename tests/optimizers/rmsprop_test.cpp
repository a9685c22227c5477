// SPDX-License-Identifier: MIT
// Tests for dptrain::RMSProp: hand-computed steps with and without momentum, weight decay, slicing, validation.
#include "dptrain/optimizers/rmsprop.hpp"

#include <catch2/catch.hpp>

#include "optimizers/optimizer_testing.hpp"

using namespace dptrain_test;
using Catch::Matchers::Contains;

static_assert(dptrain::Optimizer<dptrain::RMSProp>);
static_assert(dptrain::RMSProp::state_slots == 2);

TEMPLATE_TEST_CASE("RMSProp: three steps match hand-computed values", "[optimizers]", float, double) {
  // θ0 = [1, −2, 0.5], lr = 0.01, α = 0.99, ε = 1e-8: v ← 0.99·v + 0.01·g², θ ← θ − 0.01·g/(√v + 1e-8)
  const dptrain::RMSProp rmsprop{.lr = 0.01};
  // t=1: v = [0.0025, 0.01, 0.04], √v = [0.05, 0.1, 0.2]
  //      θ1 = [1 − 0.005/(0.05 + 1e-8), −2 + 0.01/(0.1 + 1e-8), 0.5 − 0.02/(0.2 + 1e-8)] = [0.900000019999996,
  //      −1.900000009999999, 0.4000000049999998]
  const auto s1 = run<TestType>(rmsprop, hand_theta0, first_grads(1));
  check_close(s1.state[0], {0.0025, 0.01, 0.04});
  check_close(s1.theta, {0.900000019999996, -1.900000009999999, 0.4000000049999998});
  // t=2: v = [0.002475 + 0.0025, 0.0099 + 0.000625, 0.0396 + 0.01] = [0.004975, 0.010525, 0.0496]
  //      √v = [0.07053367989832943, 0.1025914226434160, 0.2227105745132009]
  //      θ2 = θ1 − 0.01·g2/(√v + 1e-8) = [0.9708881304505798, −1.924368516566131, 0.3550986815094350]
  const auto s2 = run<TestType>(rmsprop, hand_theta0, first_grads(2));
  check_close(s2.state[0], {0.004975, 0.010525, 0.0496});
  check_close(s2.theta, {0.9708881304505798, -1.924368516566131, 0.3550986815094350});
  // t=3: v = [0.00492525 + 0.01, 0.01041975 + 0.0025, 0.049104 + 0.000625] = [0.01492525, 0.01291975, 0.049729]
  //      √v = [0.1221689404063079, 0.1136650781902692, 0.223]
  //      θ3 = θ2 − 0.01·g3/(√v + 1e-8) = [0.8890342717840190, −1.968357397229561, 0.3663094433385488]
  const auto s3 = run<TestType>(rmsprop, hand_theta0, first_grads(3));
  check_close(s3.state[0], {0.01492525, 0.01291975, 0.049729});
  check_close(s3.theta, {0.8890342717840190, -1.968357397229561, 0.3663094433385488});
  check_close(s3.state[1], {0.0, 0.0, 0.0});  // momentum = 0: the buffer is never touched
}

TEMPLATE_TEST_CASE("RMSProp: three steps with momentum match hand-computed values", "[optimizers]", float, double) {
  // lr = 0.01, α = 0.99, μ = 0.9: v as above, b ← 0.9·b + g/(√v + 1e-8), θ ← θ − 0.01·b
  const dptrain::RMSProp rmsprop{.lr = 0.01, .momentum = 0.9};
  // t=1: b = [0.5/0.05000001, −1/0.10000001, 2/0.20000001] = [9.999998000000400, −9.999999000000100, 9.999999500000024]
  //      θ1 = θ0 − 0.01·b = [0.900000019999996, −1.900000009999999, 0.4000000049999998]
  const auto s1 = run<TestType>(rmsprop, hand_theta0, first_grads(1));
  CHECK_THAT(static_cast<double>(s1.state[1][0]), Catch::Matchers::WithinRel(9.999998000000400, 1e-6));
  check_close(s1.theta, {0.900000019999996, -1.900000009999999, 0.4000000049999998});
  // t=2: b = 0.9·b1 + g2/(√v + 1e-8) = [1.911187154941984, −6.563148443386861, 13.49013189905650]
  //      θ2 = θ1 − 0.01·b = [0.8808881484505762, −1.834368525566130, 0.2650986860094348]
  check_close(run<TestType>(rmsprop, hand_theta0, first_grads(2)).theta,
              {0.8808881484505762, -1.834368525566130, 0.2650986860094348});
  // t=3: b = 0.9·b2 + g3/(√v + 1e-8) = [9.905454306103867, −1.507945532705172, 11.02004252623947]
  //      θ3 = θ2 − 0.01·b = [0.7818336053895375, −1.819289070239079, 0.1548982607470401]
  const auto s3 = run<TestType>(rmsprop, hand_theta0, first_grads(3));
  CHECK_THAT(static_cast<double>(s3.state[1][1]), Catch::Matchers::WithinRel(-1.507945532705172, 1e-5));
  check_close(s3.theta, {0.7818336053895375, -1.819289070239079, 0.1548982607470401});
}

TEMPLATE_TEST_CASE("RMSProp: weight decay adds lambda*theta to the gradient", "[optimizers]", float, double) {
  // lr = 0.01, α = 0.99, λ = 0.5: g' = g + 0.5·θ, v ← 0.99·v + 0.01·g'², θ ← θ − 0.01·g'/(√v + 1e-8)
  const dptrain::RMSProp rmsprop{.lr = 0.01, .weight_decay = 0.5};
  // t=1: g' = [1, −2, 2.25], √v = 0.1·|g'|: θ1 = [0.900000009999999, −1.9000000049999997, 0.4000000044444442]
  check_close(run<TestType>(rmsprop, hand_theta0, first_grads(1)).theta,
              {0.900000009999999, -1.9000000049999997, 0.4000000044444442});
  // t=2: g' = [−0.0499999950000005, −0.7000000025, 1.200000002222222]
  //      v = [0.009924999995, 0.044500000035, 0.06451875005333334], √v = [0.09962429420076210, 0.2109502311802478,
  //      0.2540054134331261] θ2 = θ1 − 0.01·g'/(√v + 1e-8) = [0.9050188651278843, −1.866816824047773,
  //      0.3527569186078084]
  check_close(run<TestType>(rmsprop, hand_theta0, first_grads(2)).theta,
              {0.9050188651278843, -1.866816824047773, 0.3527569186078084});
  // t=3: g' = [1.452509432563942, −0.4334084120238866, −0.07362154069609582]
  //      v = [0.03092358651192225, 0.04593342855078067, 0.06392776386534467], √v = [0.1758510350038414,
  //      0.2143208542134448, 0.2528394033083939] θ3 = θ2 − 0.01·g'/(√v + 1e-8) = [0.8224200137800171,
  //      −1.846594415295621, 0.3556687091286279]
  check_close(run<TestType>(rmsprop, hand_theta0, first_grads(3)).theta,
              {0.8224200137800171, -1.846594415295621, 0.3556687091286279});
}

TEMPLATE_TEST_CASE("RMSProp: slicing theta gives bitwise the same result", "[optimizers]", float, double) {
  check_slicing_invariance<TestType>(dptrain::RMSProp{});
  check_slicing_invariance<TestType>(
      dptrain::RMSProp{.lr = 0.001, .alpha = 0.9, .weight_decay = 0.01, .momentum = 0.9});
}

TEMPLATE_TEST_CASE("RMSProp: decay_biases = false takes no decay term on the biases", "[optimizers]", float, double) {
  check_biases_not_decayed<TestType>(dptrain::RMSProp{.lr = 0.001, .alpha = 0.9, .weight_decay = 0.3});
  check_biases_not_decayed<TestType>(dptrain::RMSProp{.lr = 0.001, .alpha = 0.9, .weight_decay = 0.3, .momentum = 0.9});
}

TEST_CASE("RMSProp: validate rejects bad hyperparameters and names the value", "[optimizers]") {
  CHECK_NOTHROW(dptrain::RMSProp{}.validate());
  CHECK_THAT(validation_error(dptrain::RMSProp{.lr = -0.01}),
             Contains("dptrain::RMSProp: lr must") && Contains("got -0.01"));
  CHECK_THAT(validation_error(dptrain::RMSProp{.alpha = 1.0}),
             Contains("alpha must be in [0, 1)") && Contains("got 1"));
  CHECK_THAT(validation_error(dptrain::RMSProp{.epsilon = 0.0}), Contains("epsilon must") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::RMSProp{.weight_decay = -0.1}),
             Contains("weight_decay must") && Contains("got -0.1"));
  CHECK_THAT(validation_error(dptrain::RMSProp{.momentum = 1.0}),
             Contains("momentum must be in [0, 1)") && Contains("got 1"));
}
