// SPDX-License-Identifier: MIT
// custom_model: a user-defined model (Huber regression, robust to outliers) that satisfies
// dptrain::Model, checked with gradient_check, then trained on every core.
#include <dptrain/dptrain.hpp>

#include <cmath>
#include <cstdio>
#include <random>

// Huber loss of the residual r = wᵀx + b − y: ½r² for |r| ≤ δ, δ(|r| − ½δ) beyond, so a few
// wild targets pull on θ linearly instead of quadratically. θ = [w; b].
struct HuberRegression {
  using scalar_type = double;
  using batch_type = dptrain::DenseBatch<double, double>;
  struct workspace_type {
    dptrain::Vector<double> residual;  // one per row, sized once
  };

  dptrain::Index inputs;
  double delta = 1.0;

  dptrain::Index num_parameters() const { return inputs + 1; }
  workspace_type make_workspace(dptrain::Index max_rows) const { return {dptrain::Vector<double>(max_rows)}; }

  // Adds Σ∇ℓ to grad and returns Σℓ (sums, not means: the trainer divides by the batch size).
  double loss_and_gradient(dptrain::ConstVectorRef<double> theta, const batch_type& batch,
                           dptrain::VectorRef<double> grad, workspace_type& ws) const {
    const double total = residuals(theta, batch, ws);
    auto r = ws.residual.head(batch.size()).array();
    r = r.max(-delta).min(delta);  // ∂ℓ/∂r, the residual clipped to [−δ, δ]
    grad.head(inputs).noalias() += batch.features.transpose() * ws.residual.head(batch.size());
    grad[inputs] += ws.residual.head(batch.size()).sum();
    return total;
  }

  double loss(dptrain::ConstVectorRef<double> theta, const batch_type& batch, workspace_type& ws) const {
    return residuals(theta, batch, ws);
  }

  void validate(const batch_type& all) const {
    if (all.features.cols() != inputs) throw dptrain::invalid_argument("HuberRegression: wrong feature count");
  }

 private:
  double residuals(dptrain::ConstVectorRef<double> theta, const batch_type& batch, workspace_type& ws) const {
    auto r = ws.residual.head(batch.size());
    r.noalias() = batch.features * theta.head(inputs);
    r.array() += theta[inputs] - batch.targets.array();
    const auto a = r.array().abs();
    return (a <= delta).select(0.5 * a.square(), delta * (a - 0.5 * delta)).sum();
  }
};
static_assert(dptrain::Model<HuberRegression>);

int main() {
  // y = 3x − 1 with small noise, and 5% of the targets replaced by wild outliers.
  const dptrain::Index n = 20000;
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0, 1);
  dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>(n, 1), dptrain::Vector<double>(n)};
  for (dptrain::Index i = 0; i < n; ++i) {
    data.features(i, 0) = normal(rng);
    data.targets[i] = 3 * data.features(i, 0) - 1 + 0.1 * normal(rng);
    if (uniform(rng) < 0.05) data.targets[i] += 50 * normal(rng);
  }

  const HuberRegression huber{.inputs = 1, .delta = 1.0};
  dptrain::Vector<double> theta = dptrain::Vector<double>::Zero(2);
  const dptrain::GradientCheckResult check =
      dptrain::gradient_check(huber, dptrain::Vector<double>::Constant(2, 0.3), data.rows(0, 100));
  std::printf("gradient_check: max relative error %.2e -> %s\n", check.max_rel_error,
              check.passed ? "passed" : "FAILED");
  if (!check.passed) return 1;

  // The cosine decays over the whole run: fit() gives the schedule its length.
  dptrain::DataParallelTrainer trainer({.batch_size = 128, .epochs = 10, .seed = 1}, dptrain::Adam{.lr = 0.05},
                                       dptrain::CosineSchedule{});
  const dptrain::FitReport report = trainer.fit(huber, theta, data);
  std::printf("Huber regression on %ld threads: w = %.3f, b = %.3f (true 3, -1), final epoch loss %.4f\n",
              long(report.threads), theta[0], theta[1], report.epoch_loss.back());

  // Least squares on the same data, for contrast: the outliers drag it away.
  dptrain::Vector<double> ls = dptrain::Vector<double>::Zero(2);
  dptrain::DataParallelTrainer(trainer.options(), dptrain::Adam{.lr = 0.05}, dptrain::CosineSchedule{})
      .fit(dptrain::LinearRegression<double>(1), ls, data);
  std::printf("least squares on the same data:   w = %.3f, b = %.3f\n", ls[0], ls[1]);
  return std::abs(theta[0] - 3) < 0.05 && std::abs(theta[1] + 1) < 0.05 ? 0 : 1;
}
