// SPDX-License-Identifier: MIT
// Tests for dptrain::AdamW: decoupled weight decay by hand, equality with Adam at λ = 0, slicing, validation.
#include "dptrain/optimizers/adamw.hpp"

#include <catch2/catch.hpp>

#include "dptrain/optimizers/adam.hpp"
#include "optimizers/optimizer_testing.hpp"

using namespace dptrain_test;
using Catch::Matchers::Contains;

static_assert(dptrain::Optimizer<dptrain::AdamW>);
static_assert(dptrain::AdamW::state_slots == 2);

TEMPLATE_TEST_CASE("AdamW: three steps with decoupled decay match hand-computed values", "[optimizers]", float,
                   double) {
  // θ0 = [1, −2, 0.5], lr = 0.1, λ = 0.5, default betas and ε: each step first θ ← θ·(1 − 0.1·0.5) = 0.95·θ,
  // then the Adam step on the undecayed gradient (so m, v, m̂, √v̂ are those of the plain Adam test).
  const dptrain::AdamW adamw{.lr = 0.1, .weight_decay = 0.5};
  // t=1: 0.95·θ0 = [0.95, −1.9, 0.475]; Adam step −0.1·g1/(|g1| + 1e-8) = [−0.099999998, 0.099999999, −0.0999999995]
  //      θ1 = [0.850000002, −1.800000001, 0.3750000005]
  const auto s1 = run<TestType>(adamw, hand_theta0, first_grads(1));
  check_close(s1.state[0], {0.05, -0.1, 0.2});
  check_close(s1.state[1], {0.00025, 0.001, 0.004});
  check_close(s1.theta, {0.850000002, -1.800000001, 0.3750000005});
  // t=2: 0.95·θ1 = [0.8075000019, −1.71000000095, 0.356250000475]
  //      m̂ = [−0.02631578947368421, −0.3421052631578947, 1.473684210526316], √v̂ = [0.5,
  //      0.7287081087471697, 1.580901522806657] θ2 = 0.95·θ1 − 0.1·m̂/(√v̂ + 1e-8) = [0.8127631596894737,
  //      −1.663053184473458, 0.2630320371835098]
  check_close(run<TestType>(adamw, hand_theta0, first_grads(2)).theta,
              {0.8127631596894737, -1.663053184473458, 0.2630320371835098});
  // t=3: 0.95·θ2 = [0.772125001705, −1.579900525249785, 0.2498804353243343]
  //      m̂ = [0.3523985239852399, −0.03136531365313653, 0.8376383763837638], √v̂ = [0.7072836536708789,
  //      0.6612487712811835, 1.298532617314345] θ3 = 0.95·θ2 − 0.1·m̂/(√v̂ + 1e-8) = [0.7223007880145193,
  //      −1.575157179849229, 0.1853739024298789]
  check_close(run<TestType>(adamw, hand_theta0, first_grads(3)).theta,
              {0.7223007880145193, -1.575157179849229, 0.1853739024298789});
}

TEMPLATE_TEST_CASE("AdamW: the decay uses the step's scheduled learning rate", "[optimizers]", float, double) {
  // lr = 0.1, λ = 0.5, but StepInfo::lr = 0.05: θ1 = θ0·(1 − 0.05·0.5) − 0.05·g1/(|g1| + 1e-8)
  //   = [0.975 − 0.049999999, −1.95 + 0.0499999995, 0.4875 − 0.04999999975]
  //   = [0.925000001, −1.9000000005, 0.43750000025]
  const dptrain::AdamW adamw{.lr = 0.1, .weight_decay = 0.5};
  check_close(run<TestType>(adamw, hand_theta0, first_grads(1), {}, 0.05).theta,
              {0.925000001, -1.9000000005, 0.43750000025});
}

TEMPLATE_TEST_CASE("AdamW: weight_decay = 0 is bitwise Adam", "[optimizers]", float, double) {
  const std::vector<double> theta0 = random_vector(29, 11);
  const std::vector<std::vector<double>> grads{random_vector(29, 12), random_vector(29, 13), random_vector(29, 14)};
  const auto adamw = run<TestType>(dptrain::AdamW{.lr = 0.01, .weight_decay = 0.0}, theta0, grads);
  const auto adam = run<TestType>(dptrain::Adam{.lr = 0.01}, theta0, grads);
  CHECK(same_bits(adamw, adam));
}

TEMPLATE_TEST_CASE("AdamW: decoupled decay differs from Adam's L2 decay", "[optimizers]", float, double) {
  // Same λ: AdamW shrinks θ by lr·λ·θ outside the adaptive scaling, Adam feeds λθ through it.
  // t=1 θ[0]: AdamW 0.850000002 (above) vs Adam with L2 0.900000001 (adam_test.cpp).
  const auto adamw = run<TestType>(dptrain::AdamW{.lr = 0.1, .weight_decay = 0.5}, hand_theta0, first_grads(1));
  const auto adam = run<TestType>(dptrain::Adam{.lr = 0.1, .weight_decay = 0.5}, hand_theta0, first_grads(1));
  CHECK_THAT(static_cast<double>(adamw.theta[0]),
             Catch::Matchers::WithinAbs(0.850000002, UpdateTolerance<TestType>::abs));
  CHECK_THAT(static_cast<double>(adam.theta[0]),
             Catch::Matchers::WithinAbs(0.900000001, UpdateTolerance<TestType>::abs));
}

TEMPLATE_TEST_CASE("AdamW: slicing theta gives bitwise the same result", "[optimizers]", float, double) {
  check_slicing_invariance<TestType>(dptrain::AdamW{});
  check_slicing_invariance<TestType>(dptrain::AdamW{.lr = 0.01, .beta1 = 0.8, .weight_decay = 0.1});
}

TEMPLATE_TEST_CASE("AdamW: decay_biases = false does not shrink the biases", "[optimizers]", float, double) {
  check_biases_not_decayed<TestType>(dptrain::AdamW{.lr = 0.01, .beta1 = 0.8, .weight_decay = 0.3});
}

TEST_CASE("AdamW: validate rejects bad hyperparameters and names the value", "[optimizers]") {
  CHECK_NOTHROW(dptrain::AdamW{}.validate());
  CHECK_THAT(validation_error(dptrain::AdamW{.lr = -0.001}),
             Contains("dptrain::AdamW: lr must") && Contains("got -0.001"));
  CHECK_THAT(validation_error(dptrain::AdamW{.beta1 = 1.0}), Contains("beta1 must be in [0, 1)") && Contains("got 1"));
  CHECK_THAT(validation_error(dptrain::AdamW{.beta2 = 2.0}), Contains("beta2 must") && Contains("got 2"));
  CHECK_THAT(validation_error(dptrain::AdamW{.epsilon = -1e-8}), Contains("epsilon must") && Contains("got -1e-08"));
  CHECK_THAT(validation_error(dptrain::AdamW{.weight_decay = -0.01}),
             Contains("weight_decay must") && Contains("got -0.01"));
  CHECK_THAT(validation_error(dptrain::AdamW{.lr = 2.0, .weight_decay = 0.5}),
             Contains("lr * weight_decay must be < 1") && Contains("got 1"));
}
