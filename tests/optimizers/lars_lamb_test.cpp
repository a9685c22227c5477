// SPDX-License-Identifier: MIT
// Lars and Lamb: the trust ratios of a two-layer θ by hand, the groups' sums over any thread count,
// Mlp's layers as groups, and what cannot take them.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

using Catch::Matchers::Contains;
using dptrain::Index;
using dptrain::Vector;

namespace {

// ℓ(θ; x) = ½‖θ − x‖²: the minibatch's mean gradient is θ minus the mean of its rows, so a data
// set of one row x = θ − g hands the optimizer exactly g. θ = [w₁ (2) | w₂ (3)].
struct TwoLayers {
  using scalar_type = double;
  using batch_type = dptrain::DenseBatch<double, double>;
  struct workspace_type {};
  bool grouped = true;
  Index num_parameters() const { return 5; }
  workspace_type make_workspace(Index) const { return {}; }
  double loss_and_gradient(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::VectorRef<double> g,
                           workspace_type& ws) const {
    for (Index i = 0; i < b.size(); ++i) g += w - b.features.row(i).transpose();
    return loss(w, b, ws);
  }
  double loss(dptrain::ConstVectorRef<double> w, const batch_type& b, workspace_type&) const {
    return 0.5 * (b.features.rowwise() - w.transpose()).squaredNorm();
  }
  void validate(const batch_type& b) const {
    if (b.features.cols() != 5) throw dptrain::invalid_argument("TwoLayers: five features per sample");
  }
  std::vector<dptrain::IndexRange> parameter_groups() const {
    if (grouped) return {{0, 2}, {2, 3}};
    return {{0, 5}};
  }
};

const Vector<double> w0{{3.0, 4.0, 1.0, 2.0, 2.0}};   // ‖w₁‖ = 5, ‖w₂‖ = 3
const Vector<double> g0{{0.6, -0.8, 2.0, 1.0, 2.0}};  // ‖g₁‖ = 1, ‖g₂‖ = 3
const std::vector<dptrain::IndexRange> layers{{0, 2}, {2, 3}};

// `copies` rows of x = w0 − g0, so every step's mean gradient is θ − x.
dptrain::DenseDataset<double> one_gradient(Index copies) {
  dptrain::RowMatrix<double> x(copies, 5);
  x.rowwise() = (w0 - g0).transpose();
  return {.features = x, .targets = Vector<double>::Zero(copies)};
}

// θ after `steps` full-batch steps of `optimizer` from w0 on `threads` threads.
template <class O>
Vector<double> train(const O& optimizer, Index steps, Index threads = 1, bool grouped = true) {
  const auto data = one_gradient(4);
  Vector<double> theta = w0;
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 4, .epochs = steps};
  dptrain::DataParallelTrainer(options, optimizer).fit(TwoLayers{.grouped = grouped}, theta, data);
  return theta;
}

void check_close(const Vector<double>& actual, const Vector<double>& expected, double tolerance = 1e-15) {
  INFO("actual " << actual.transpose() << "\nexpected " << expected.transpose());
  CHECK((actual - expected).cwiseAbs().maxCoeff() <= tolerance);
}

}  // namespace

TEST_CASE("Lars: each layer's trust ratio, by hand", "[optimizers]") {
  const dptrain::Lars lars{.lr = 2.0, .momentum = 0.9, .weight_decay = 0.1, .trust_coefficient = 0.01};
  // Layer 1: ρ = 0.01·5 / (1 + 0.1·5) = 1/30, g + βw = (0.9, −0.4), v = 2·ρ·(0.9, −0.4).
  // Layer 2: ρ = 0.01·3 / (3 + 0.1·3) = 1/110, g + βw = (2.1, 1.2, 2.2), v = 2·ρ·(2.1, 1.2, 2.2).
  const Vector<double> v1{{2.0 / 30 * 0.9, 2.0 / 30 * -0.4, 2.0 / 110 * 2.1, 2.0 / 110 * 1.2, 2.0 / 110 * 2.2}};
  const Vector<double> after_one = w0 - v1;
  check_close(train(lars, 1), after_one);

  // Step 2 at θ₁ with g = θ₁ − x = g0 − v1, each layer's norms taken anew; v ← 0.9·v1 + 2·ρ·(g + βθ₁).
  const Vector<double> g1 = g0 - v1;
  Vector<double> expected = after_one;
  for (const auto& [begin, size] : layers) {
    const auto w = after_one.segment(begin, size), g = g1.segment(begin, size);
    const double rho = 0.01 * w.norm() / (g.norm() + 0.1 * w.norm());
    expected.segment(begin, size) -= 0.9 * v1.segment(begin, size) + 2.0 * rho * (g + 0.1 * w);
  }
  check_close(train(lars, 2), expected);

  // Without groups θ is one: ρ = 0.01·√34 / (√10 + 0.1·√34).
  const double rho = 0.01 * std::sqrt(34.0) / (std::sqrt(10.0) + 0.1 * std::sqrt(34.0));
  check_close(train(lars, 1, 1, false), w0 - 2.0 * rho * (g0 + 0.1 * w0));
}

TEST_CASE("Lars: a layer of zeros takes the plain step (ratio 1)", "[optimizers]") {
  const dptrain::Lars lars{.lr = 0.5, .momentum = 0.9, .trust_coefficient = 0.01};
  std::vector<double> theta{0.0, 0.0}, grad{1.0, 2.0}, velocity{0.0, 0.0};
  const dptrain::UpdateSlice<double, 1> s{dptrain::VectorMap<double>(theta.data(), 2),
                                          dptrain::ConstVectorMap<double>(grad.data(), 2),
                                          {dptrain::VectorMap<double>(velocity.data(), 2)}};
  std::vector<double> sums(2, 0.0);
  lars.add_group_sums(s, dptrain::StepInfo{.lr = 0.5}, sums);
  CHECK(sums == std::vector<double>{0.0, 5.0});
  lars.update(s, dptrain::StepInfo{.lr = 0.5, .group = sums});
  CHECK(theta == std::vector<double>{-0.5, -1.0});
}

TEST_CASE("Lamb: each layer's trust ratio, by hand", "[optimizers]") {
  const dptrain::Lamb lamb{.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-6, .weight_decay = 0.1};
  // Step 1: m̂ = g, v̂ = g², so r = g / (|g| + ε) + λw; each layer moves by lr·‖w‖/‖r‖·r.
  Vector<double> r = g0.array() / (g0.array().abs() + 1e-6);
  r += 0.1 * w0;
  Vector<double> expected = w0;
  for (const auto& [begin, size] : layers)
    expected.segment(begin, size) -=
        0.1 * w0.segment(begin, size).norm() / r.segment(begin, size).norm() * r.segment(begin, size);
  check_close(train(lamb, 1), expected);
  // By hand, layer 1: r = (1.3, −0.6) (to 1e-6), ratio 5/√2.05.
  CHECK(std::abs(expected[0] - (3.0 - 0.1 * 5 / std::sqrt(2.05) * 1.3)) < 1e-6);
  CHECK(std::abs(expected[1] - (4.0 + 0.1 * 5 / std::sqrt(2.05) * 0.6)) < 1e-6);

  // Step 2 from the moments of step 1, with the bias corrections of t = 2.
  const Vector<double> g1 = g0 - (w0 - expected);
  const Vector<double> m = 0.9 * 0.1 * g0 + 0.1 * g1;
  const Vector<double> v = 0.999 * 0.001 * g0.array().square() + 0.001 * g1.array().square();
  const Vector<double> r2 =
      (m.array() / (1 - 0.81)) / ((v.array() / (1 - 0.999 * 0.999)).sqrt() + 1e-6) + 0.1 * expected.array();
  Vector<double> second = expected;
  for (const auto& [begin, size] : layers)
    second.segment(begin, size) -=
        0.1 * expected.segment(begin, size).norm() / r2.segment(begin, size).norm() * r2.segment(begin, size);
  check_close(train(lamb, 2), second, 1e-14);
}

TEST_CASE("Lars and Lamb: the same theta within 1e-12 for 1 to 4 threads, groups across the slices", "[optimizers]") {
  // 387 parameters in 4 groups: W₀ (320), b₀, W₁ (48), b₁; 4 threads cut it in slices of 96.
  const dptrain::Mlp<double> model({20, 16, 3});
  const auto data = test::cluster_data<double>(150, 20, 3, 8);
  const auto run = [&](const auto& optimizer, Index threads) {
    Vector<double> theta = model.init_parameters(2);
    const dptrain::TrainerOptions options{
        .threads = threads, .batch_size = 32, .epochs = 3, .shuffle = true, .seed = 3, .clip_norm = 5.0};
    dptrain::DataParallelTrainer(options, optimizer).fit(model, theta, data);
    return theta;
  };
  const dptrain::Lars lars{.lr = 2.0, .weight_decay = 1e-3, .trust_coefficient = 0.02};
  const dptrain::Lamb lamb{.lr = 0.02, .weight_decay = 0.01};
  const Vector<double> lars_one = run(lars, 1), lamb_one = run(lamb, 1);
  CHECK(test::relative_error(lars_one, model.init_parameters(2)) > 1e-3);  // it trained
  CHECK(test::relative_error(lamb_one, model.init_parameters(2)) > 1e-3);
  for (const Index threads : {2, 3, 4}) {
    INFO(threads << " threads");
    CHECK(test::relative_error(run(lars, threads), lars_one) <= 1e-12);
    CHECK(test::relative_error(run(lamb, threads), lamb_one) <= 1e-12);
  }
}

TEST_CASE("Lars and Lamb: the Mlp's layers are its groups, and they train it in float", "[optimizers][models]") {
  const dptrain::Mlp<float> model({6, 5, 3});
  const std::vector<dptrain::IndexRange> groups = model.parameter_groups();
  REQUIRE(groups.size() == 4);
  CHECK(groups[0] == dptrain::IndexRange{0, 30});
  CHECK(groups[1] == dptrain::IndexRange{30, 5});
  CHECK(groups[2] == dptrain::IndexRange{35, 15});
  CHECK(groups[3] == dptrain::IndexRange{50, 3});
  CHECK(groups[3].end() == model.num_parameters());

  const auto data = test::cluster_data<float>(120, 6, 3, 5);
  const auto loss = [&](const Vector<float>& theta) { return dptrain::mean_loss(model, theta, data); };
  for (const Index threads : {1, 2}) {
    Vector<float> lars_theta = model.init_parameters(4), lamb_theta = model.init_parameters(4);
    const float before = loss(lars_theta);
    const dptrain::TrainerOptions options{.threads = threads, .batch_size = 24, .epochs = 10};
    dptrain::DataParallelTrainer(options, dptrain::Lars{.lr = 5.0, .trust_coefficient = 0.02})
        .fit(model, lars_theta, data);
    dptrain::DataParallelTrainer(options, dptrain::Lamb{.lr = 0.05}).fit(model, lamb_theta, data);
    CHECK(loss(lars_theta) < 0.5f * before);
    CHECK(loss(lamb_theta) < 0.5f * before);
  }
}

TEST_CASE("Lars and Lamb: what cannot take them is refused, with a sentence", "[optimizers]") {
  const auto data = one_gradient(8);
  Vector<double> theta = w0;
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 4};
  const auto refused = [&](auto trainer, const std::string& why, const TwoLayers& model = {}) {
    CHECK_THROWS_WITH(trainer.fit(model, theta, data), Contains(why));
  };
  refused(dptrain::DataParallelTrainer(options, dptrain::Lars{}, dptrain::BackupWorkers{}), "BackupWorkers");
  refused(dptrain::DataParallelTrainer(options, dptrain::Lamb{}, dptrain::Reproducible{.shards = 2}), "Reproducible");
  refused(dptrain::DataParallelTrainer(options, dptrain::Lars{}, dptrain::LocalSgd{.period = 2}), "LocalSgd");
  refused(dptrain::DataParallelTrainer(options, dptrain::Lamb{}, dptrain::BoundedStaleness{}), "BoundedStaleness");
  refused(dptrain::DataParallelTrainer(options, dptrain::Lars{}, dptrain::Hogwild{}), "state");
  refused(dptrain::DataParallelTrainer(options, dptrain::Lars{.trust_coefficient = 0}), "trust_coefficient");
  refused(dptrain::DataParallelTrainer(options, dptrain::Lamb{.epsilon = -1}), "epsilon");
  CHECK(theta == w0);

  struct Gapped : TwoLayers {
    std::vector<dptrain::IndexRange> parameter_groups() const { return {{0, 2}, {3, 2}}; }
  };
  struct Short : TwoLayers {
    std::vector<dptrain::IndexRange> parameter_groups() const { return {{0, 2}, {2, 2}}; }
  };
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Lars{}).fit(Gapped{}, theta, data),
                    Contains("cover theta in order"));
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Lamb{}).fit(Short{}, theta, data),
                    Contains("end at 4"));
}
