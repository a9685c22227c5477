// SPDX-License-Identifier: MIT
// Tests for dptrain::Adam: hand-computed steps, bias correction, L2 weight decay, slicing, validation.
#include "dptrain/optimizers/adam.hpp"

#include <catch2/catch.hpp>

#include <limits>

#include "optimizers/optimizer_testing.hpp"

using namespace dptrain_test;
using Catch::Matchers::Contains;

static_assert(dptrain::Optimizer<dptrain::Adam>);
static_assert(dptrain::Adam::state_slots == 2);

TEMPLATE_TEST_CASE("Adam: three steps match hand-computed values", "[optimizers]", float, double) {
  // θ0 = [1, −2, 0.5], lr = 0.1, β1 = 0.9, β2 = 0.999, ε = 1e-8.
  // m ← 0.9·m + 0.1·g, v ← 0.999·v + 0.001·g², θ ← θ − 0.1·m̂/(√v̂ + 1e-8),
  // m̂ = m/(1 − 0.9^t), v̂ = v/(1 − 0.999^t).
  const dptrain::Adam adam{.lr = 0.1};
  // t=1: m = [0.05, −0.1, 0.2], v = [0.00025, 0.001, 0.004]; m̂ = m/0.1 = g1, v̂ = v/0.001 = [0.25, 1, 4]
  //      θ1 = [1 − 0.1·0.5/(0.5 + 1e-8), −2 + 0.1·1/(1 + 1e-8), 0.5 − 0.1·2/(2 + 1e-8)]
  //         = [0.900000002, −1.900000001, 0.4000000005]
  const auto s1 = run<TestType>(adam, hand_theta0, first_grads(1));
  check_close(s1.state[0], {0.05, -0.1, 0.2});
  check_close(s1.state[1], {0.00025, 0.001, 0.004});
  check_close(s1.theta, {0.900000002, -1.900000001, 0.4000000005});
  // t=2: m = [0.045 − 0.05, −0.09 + 0.025, 0.18 + 0.1] = [−0.005, −0.065, 0.28]
  //      v = [0.00024975 + 0.00025, 0.000999 + 0.0000625, 0.003996 + 0.001] = [0.00049975, 0.0010615, 0.004996]
  //      m̂ = m/0.19 = [−0.02631578947368421, −0.3421052631578947, 1.473684210526316]
  //      v̂ = v/0.001999 = [0.25, 0.5310155077538770, 2.499249624812406]
  //      √v̂ = [0.5, 0.7287081087471697, 1.580901522806657]
  //      θ2 = θ1 − 0.1·m̂/(√v̂ + 1e-8) = [0.9052631597894737, −1.853053184523458, 0.3067820372085098]
  const auto s2 = run<TestType>(adam, hand_theta0, first_grads(2));
  check_close(s2.state[0], {-0.005, -0.065, 0.28});
  check_close(s2.state[1], {0.00049975, 0.0010615, 0.004996});
  check_close(s2.theta, {0.9052631597894737, -1.853053184523458, 0.3067820372085098});
  // t=3: m = [−0.0045 + 0.1, −0.0585 + 0.05, 0.252 − 0.025] = [0.0955, −0.0085, 0.227]
  //      v = [0.00049925025 + 0.001, 0.0010604385 + 0.00025, 0.004991004 + 0.0000625]
  //        = [0.00149925025, 0.0013104385, 0.005053504]
  //      m̂ = m/0.271 = [0.3523985239852399, −0.03136531365313653, 0.8376383763837638]
  //      v̂ = v/0.002997001; √v̂ = [0.7072836536708789, 0.6612487712811835, 1.298532617314345]
  //      θ3 = θ2 − 0.1·m̂/(√v̂ + 1e-8) = [0.8554389460989929, −1.848309839122902, 0.2422755043140544]
  const auto s3 = run<TestType>(adam, hand_theta0, first_grads(3));
  check_close(s3.state[0], {0.0955, -0.0085, 0.227});
  check_close(s3.state[1], {0.00149925025, 0.0013104385, 0.005053504});
  check_close(s3.theta, {0.8554389460989929, -1.848309839122902, 0.2422755043140544});
}

TEMPLATE_TEST_CASE("Adam: weight decay is an L2 term added to the gradient", "[optimizers]", float, double) {
  // lr = 0.1, λ = 0.5, default betas: g' = g + 0.5·θ feeds both moments.
  const dptrain::Adam adam{.lr = 0.1, .weight_decay = 0.5};
  // t=1: g' = [1, −2, 2.25]; m̂ = g', √v̂ = |g'|
  //      θ1 = [1 − 0.1·1/(1 + 1e-8), −2 + 0.1·2/(2 + 1e-8), 0.5 − 0.1·2.25/(2.25 + 1e-8)]
  //         = [0.900000001, −1.9000000005, 0.4000000004444444]
  check_close(run<TestType>(adam, hand_theta0, first_grads(1)).theta, {0.900000001, -1.9000000005, 0.4000000004444444});
  // t=2: g' = g2 + 0.5·θ1 = [−0.0499999995, −0.70000000025, 1.200000000222222]
  //      m = [0.08500000005, −0.250000000025, 0.3225000000222222]
  //      v = [0.00100149999995, 0.00448600000035, 0.006497437500533333]
  //      m̂ = m/0.19 = [0.4473684213157895, −1.315789473815789, 1.697368421169591]
  //      √v̂ = √(v/0.001999) = [0.7078138881267537, 1.498039405758608, 1.802871022072234]
  //      θ2 = θ1 − 0.1·m̂/(√v̂ + 1e-8) = [0.8367957572715622, −1.812165898140986, 0.3058519226854590]
  check_close(run<TestType>(adam, hand_theta0, first_grads(2)).theta,
              {0.8367957572715622, -1.812165898140986, 0.3058519226854590});
  // t=3: g' = g3 + 0.5·θ2 = [1.418397878635781, −0.4060829490704930, −0.09707403865727052]
  //      m = [0.2183397879085781, −0.2656082949295493, 0.2805425961542730]
  //      v = [0.003012351042068534, 0.004646417361875438, 0.006500363432014033]
  //      m̂ = m/0.271 = [0.8056818742013953, −0.9801044093341302, 1.035212531934587]
  //      √v̂ = √(v/0.002997001) = [1.002557629656783, 1.245132774499466, 1.472737601791211]
  //      θ3 = θ2 − 0.1·m̂/(√v̂ + 1e-8) = [0.7564331085487204, −1.733451047682035, 0.2355602071995270]
  check_close(run<TestType>(adam, hand_theta0, first_grads(3)).theta,
              {0.7564331085487204, -1.733451047682035, 0.2355602071995270});
}

TEMPLATE_TEST_CASE("Adam: step 1 moves each parameter by about lr whatever the gradient's scale", "[optimizers]", float,
                   double) {
  // Bias correction makes m̂ = g and √v̂ = |g| at t = 1: θ1 = θ0 − lr·g/(|g| + ε) ≈ θ0 − lr·sign(g).
  // g = [1e-3, −1e3, 1]: θ1 = [1 − 0.1·1e-3/(1e-3 + 1e-8), −2 + 0.1, 0.5 − 0.1·1/(1 + 1e-8)]
  //                         = [0.9000009999900001, −1.9000000000000010, 0.400000001]
  const auto s = run<TestType>(dptrain::Adam{.lr = 0.1}, hand_theta0, {{1e-3, -1e3, 1.0}});
  check_close(s.theta, {0.9000009999900001, -1.900000000000001, 0.400000001});
}

TEMPLATE_TEST_CASE("Adam: slicing theta gives bitwise the same result", "[optimizers]", float, double) {
  check_slicing_invariance<TestType>(dptrain::Adam{.lr = 0.01});
  check_slicing_invariance<TestType>(dptrain::Adam{.lr = 0.01, .beta2 = 0.99, .weight_decay = 0.01});
}

TEMPLATE_TEST_CASE("Adam: decay_biases = false takes no decay term on the biases", "[optimizers]", float, double) {
  check_biases_not_decayed<TestType>(dptrain::Adam{.lr = 0.01, .beta2 = 0.99, .weight_decay = 0.3});
}

TEST_CASE("Adam: validate rejects bad hyperparameters and names the value", "[optimizers]") {
  CHECK_NOTHROW(dptrain::Adam{}.validate());
  CHECK_NOTHROW(dptrain::Adam{.beta1 = 0.0, .beta2 = 0.0}.validate());
  CHECK_THAT(validation_error(dptrain::Adam{.lr = 0.0}), Contains("dptrain::Adam: lr must") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::Adam{.lr = std::numeric_limits<double>::quiet_NaN()}),
             Contains("lr must") && Contains("got nan"));
  CHECK_THAT(validation_error(dptrain::Adam{.beta1 = 1.0}), Contains("beta1 must be in [0, 1)") && Contains("got 1"));
  CHECK_THAT(validation_error(dptrain::Adam{.beta2 = -0.5}),
             Contains("beta2 must be in [0, 1)") && Contains("got -0.5"));
  CHECK_THAT(validation_error(dptrain::Adam{.beta2 = 1.5}), Contains("beta2 must") && Contains("got 1.5"));
  CHECK_THAT(validation_error(dptrain::Adam{.epsilon = 0.0}),
             Contains("epsilon must be finite and > 0") && Contains("got 0"));
  CHECK_THAT(validation_error(dptrain::Adam{.weight_decay = -0.25}),
             Contains("weight_decay must") && Contains("got -0.25"));
}
