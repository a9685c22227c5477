// SPDX-License-Identifier: MIT
// GradientWorker: a step's gradient is the sum of its micro-batches', whether the model adds its
// gradient or writes it (OverwritesGradient), and 0 when the step had no rows.
#include <catch2/catch.hpp>

#include <limits>

#include "dptrain/dptrain.hpp"

namespace gradient_worker_test {

// ℓ = ½(w·x − y)² on one feature; counts its calls of each kind.
struct CountedLine {
  using scalar_type = double;
  using batch_type = dptrain::DenseBatch<double, double>;
  struct workspace_type {};
  mutable int adds = 0;
  dptrain::Index num_parameters() const { return 1; }
  workspace_type make_workspace(dptrain::Index) const { return {}; }
  double loss_and_gradient(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::VectorRef<double> g,
                           workspace_type& ws) const {
    ++adds;
    for (dptrain::Index i = 0; i < b.size(); ++i) g[0] += (w[0] * b.features(i, 0) - b.targets[i]) * b.features(i, 0);
    return loss(w, b, ws);
  }
  double loss(dptrain::ConstVectorRef<double> w, const batch_type& b, workspace_type&) const {
    return 0.5 * (b.features.col(0) * w[0] - b.targets).squaredNorm();
  }
  void validate(const batch_type&) const {}
};

struct OverwritingCountedLine : CountedLine {
  mutable int writes = 0;
  double loss_and_gradient_overwrite(dptrain::ConstVectorRef<double> w, const batch_type& b,
                                     dptrain::VectorRef<double> g, workspace_type& ws) const {
    ++writes;
    g[0] = 0;
    --adds;  // counted as a write, not as an add
    return loss_and_gradient(w, b, g, ws);
  }
};

static_assert(!dptrain::OverwritesGradient<CountedLine>);
static_assert(dptrain::OverwritesGradient<OverwritingCountedLine>);

}  // namespace gradient_worker_test

TEMPLATE_TEST_CASE("GradientWorker: a step's gradient is the sum of its micro-batches', and 0 without rows",
                   "[workers]", gradient_worker_test::CountedLine, gradient_worker_test::OverwritingCountedLine) {
  const TestType model;
  dptrain::RowMatrix<double> x(4, 1);
  x << 1, 2, 3, 4;
  const dptrain::Vector<double> y = dptrain::Vector<double>::Constant(4, 1.0);
  const dptrain::Vector<double> w = dptrain::Vector<double>::Constant(1, 0.5);
  const dptrain::DenseBatch<double, double> first{x.topRows(2), y.head(2)}, second{x.bottomRows(2), y.tail(2)};
  const dptrain::DenseBatch<double, double> none{x.topRows(0), y.head(0)};
  // Σ (w·x − y)·x over the rows 1, 2 and over 3, 4: (−0.5)(1) + 0·2 = −0.5; 0.5·3 + 1·4 = 5.5.
  auto state = dptrain::GradientWorker{}.make(model, 0, 2);
  state.gradient()[0] = std::numeric_limits<double>::quiet_NaN();  // what a step leaves behind
  for (int step = 0; step < 2; ++step) {
    state.zero();
    state.accumulate(model, w, none);
    state.accumulate(model, w, first);
    state.accumulate(model, w, second);
    CHECK(state.gradient()[0] == 5.0);
    CHECK(state.samples() == 4);
    CHECK(state.loss() == Approx(0.5 * (0.25 + 0 + 0.25 + 1)));
  }
  state.zero();
  CHECK(state.gradient()[0] == 0.0);  // a step without rows
  CHECK(state.samples() == 0);
  if constexpr (dptrain::OverwritesGradient<TestType>) {
    CHECK(model.writes == 2);  // the first micro-batch with rows of each step
    CHECK(model.adds == 2);
  } else {
    CHECK(model.adds == 4);
  }
}
