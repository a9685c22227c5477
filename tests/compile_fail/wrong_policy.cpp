// SPDX-License-Identifier: MIT
// Must NOT compile: each DPTRAIN_CASE plugs a type that breaks one concept into the trainer.
// tests/CMakeLists.txt builds each case and requires the compiler's output to carry the
// trainer's static_assert sentence for that concept.
#include "dptrain/dptrain.hpp"

namespace {

struct NotAnOptimizer {  // no update()
  double lr = 0.1;
  static constexpr int state_slots = 0;
};
struct NotAnAggregator {};
struct NotAPartitioner {
  int range(int, int, int) const { return 0; }
};
struct NotAModel {
  using scalar_type = double;
  using batch_type = dptrain::DenseBatch<double, double>;
  using workspace_type = int;
  dptrain::Index num_parameters() const { return 1; }
  // make_workspace, loss_and_gradient, loss and validate missing
};
struct NotAWorker {};

}  // namespace

int main() {
  const dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>(2, 1), dptrain::Vector<double>(2)};
  dptrain::Vector<double> theta(2);
  const dptrain::LinearRegression<double> model(1);
#if DPTRAIN_CASE == 1
  dptrain::DataParallelTrainer<dptrain::GradientWorker, dptrain::EvenPartitioner, dptrain::ReduceScatterAggregator,
                               NotAnOptimizer>
      trainer;
#elif DPTRAIN_CASE == 2
  dptrain::DataParallelTrainer<dptrain::GradientWorker, dptrain::EvenPartitioner, NotAnAggregator> trainer;
#elif DPTRAIN_CASE == 3
  dptrain::DataParallelTrainer<dptrain::GradientWorker, NotAPartitioner> trainer;
#elif DPTRAIN_CASE == 4
  dptrain::DataParallelTrainer<> trainer;
  trainer.fit(NotAModel{}, theta, data);
#elif DPTRAIN_CASE == 5
  dptrain::DataParallelTrainer<NotAWorker> trainer;
#endif
  trainer.fit(model, theta, data);
}
