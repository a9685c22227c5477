// SPDX-License-Identifier: MIT
// Tests for dptrain::AdaGrad: hand-computed steps, weight decay, slicing invariance, validation.
#include "dptrain/optimizers/adagrad.hpp"

#include <catch2/catch.hpp>

#include "optimizers/optimizer_testing.hpp"

using namespace dptrain_test;
using Catch::Matchers::Contains;

static_assert(dptrain::Optimizer<dptrain::AdaGrad>);
static_assert(dptrain::AdaGrad::state_slots == 1);

TEMPLATE_TEST_CASE("AdaGrad: three steps match hand-computed values", "[optimizers]", float, double) {
  // θ0 = [1, −2, 0.5], lr = 0.1, ε = 1e-10: s ← s + g², θ ← θ − 0.1·g/(√s + 1e-10)
  const dptrain::AdaGrad adagrad{.lr = 0.1};
  // t=1: s = [0.25, 1, 4], √s = [0.5, 1, 2]
  //      θ1 = [1 − 0.05/(0.5 + 1e-10), −2 + 0.1/(1 + 1e-10), 0.5 − 0.2/(2 + 1e-10)] = [0.90000000002, −1.90000000001,
  //      0.400000000005]
  const auto s1 = run<TestType>(adagrad, hand_theta0, first_grads(1));
  check_close(s1.state[0], {0.25, 1.0, 4.0});
  check_close(s1.theta, {0.90000000002, -1.90000000001, 0.400000000005});
  // t=2: s = [0.25 + 0.25, 1 + 0.0625, 4 + 1] = [0.5, 1.0625, 5], √s =
  // [0.7071067811865476, 1.030776406404415, 2.236067977499790]
  //      θ2 = θ1 − 0.1·g2/(√s + 1e-10) = [0.9707106781286548, −1.924253562511280, 0.3552786404570042]
  const auto s2 = run<TestType>(adagrad, hand_theta0, first_grads(2));
  check_close(s2.state[0], {0.5, 1.0625, 5.0});
  check_close(s2.theta, {0.9707106781286548, -1.924253562511280, 0.3552786404570042});
  // t=3: s = [0.5 + 1, 1.0625 + 0.25, 5 + 0.0625] = [1.5, 1.3125, 5.0625], √s =
  // [1.224744871391589, 1.145643923738960, 2.25]
  //      θ3 = θ2 − 0.1·g3/(√s + 1e-10) = [0.8890610200425488, −1.967897140554669, 0.3663897515676215]
  const auto s3 = run<TestType>(adagrad, hand_theta0, first_grads(3));
  check_close(s3.state[0], {1.5, 1.3125, 5.0625});
  check_close(s3.theta, {0.8890610200425488, -1.967897140554669, 0.3663897515676215});
}

TEMPLATE_TEST_CASE("AdaGrad: weight decay adds lambda*theta to the gradient", "[optimizers]", float, double) {
  // lr = 0.1, λ = 0.5: g' = g + 0.5·θ, s ← s + g'², θ ← θ − 0.1·g'/(√s + 1e-10)
  const dptrain::AdaGrad adagrad{.lr = 0.1, .weight_decay = 0.5};
  // t=1: g' = [1, −2, 2.25], √s = |g'|: θ1 = [0.90000000001, −1.900000000005, 0.4000000000044444]
  check_close(run<TestType>(adagrad, hand_theta0, first_grads(1)).theta,
              {0.90000000001, -1.900000000005, 0.4000000000044444});
  // t=2: g' = [−0.049999999995, −0.7000000000025, 1.200000000002222]
  //      s = [1.0024999999995, 4.4900000000035, 6.502500000005333], √s =
  //      [1.001249219724790, 2.118962010042535, 2.550000000001046] θ2 = θ1 − 0.1·g'/(√s + 1e-10) = [0.9049937617033923,
  //      −1.866964957533643, 0.3529411764768103]
  check_close(run<TestType>(adagrad, hand_theta0, first_grads(2)).theta,
              {0.9049937617033923, -1.866964957533643, 0.3529411764768103});
  // t=3: g' = [1.452496880851696, −0.4334824787668217, −0.07352941176159486]
  //      s = [3.112247188883407, 4.677907059401328, 6.507906574399340], √s =
  //      [1.764156225758764, 2.162846980117024, 2.551059892358339] θ3 = θ2 − 0.1·g'/(√s + 1e-10) = [0.8226599604469507,
  //      −1.846922740828913, 0.3558234848059471]
  const auto s3 = run<TestType>(adagrad, hand_theta0, first_grads(3));
  check_close(s3.state[0], {3.112247188883407, 4.677907059401328, 6.507906574399340});
  check_close(s3.theta, {0.8226599604469507, -1.846922740828913, 0.3558234848059471});
}

TEMPLATE_TEST_CASE("AdaGrad: slicing theta gives bitwise the same result", "[optimizers]", float, double) {
  check_slicing_invariance<TestType>(dptrain::AdaGrad{.lr = 0.1});
  check_slicing_invariance<TestType>(dptrain::AdaGrad{.lr = 0.1, .weight_decay = 0.01});
}

TEMPLATE_TEST_CASE("AdaGrad: decay_biases = false takes no decay term on the biases", "[optimizers]", float, double) {
  check_biases_not_decayed<TestType>(dptrain::AdaGrad{.lr = 0.1, .weight_decay = 0.3});
}

TEST_CASE("AdaGrad: validate rejects bad hyperparameters and names the value", "[optimizers]") {
  CHECK_NOTHROW(dptrain::AdaGrad{}.validate());
  CHECK_THAT(validation_error(dptrain::AdaGrad{.lr = 0.0}), Contains("dptrain::AdaGrad: lr must") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::AdaGrad{.epsilon = 0.0}),
             Contains("epsilon must be finite and > 0") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::AdaGrad{.weight_decay = -3.0}),
             Contains("weight_decay must") && Contains("got -3"));
}
