// SPDX-License-Identifier: MIT
// Must NOT compile: each DPTRAIN_CASE hands the trainer a type that breaks one concept (a policy,
// the model, the data set), or a set of arguments that cannot be placed. tests/CMakeLists.txt
// compiles each case with g++ and clang++ (compile_fail/first_error.cmake) and requires the
// sentence for that case in the first error line.
#include "dptrain/dptrain.hpp"

namespace {

struct NotAnOptimizer {  // no update()
  double lr = 0.1;
  static constexpr int state_slots = 0;
};
struct NotAnAggregator {  // float only
  dptrain::VectorMap<float> all_reduce(const dptrain::TeamMember&, const dptrain::GradientBuffers<float>& b) const {
    return b.buffer(0);
  }
};
struct NotAPartitioner {  // returns an int, not an IndexRange
  int range(int, int, int) const { return 0; }
};
struct NotAModel {
  using scalar_type = double;
  using batch_type = dptrain::DenseBatch<double, double>;
  using workspace_type = int;
  dptrain::Index num_parameters() const { return 1; }
  // make_workspace, loss_and_gradient, loss and validate missing
};
struct NotAWorker {  // make() returns no worker state
  template <class M>
  int make(const M&, dptrain::Index, dptrain::Index) const {
    return 0;
  }
};
struct NotASchedule {  // factor of the wrong argument
  double factor(const char*) const { return 1; }
};
struct NotACommunicator {  // connect() returns no process group
  int connect(dptrain::Index, const dptrain::RunSignature&) const { return 0; }
};
struct NotASynchronizer {  // start() of the wrong arguments
  void start(int) const {}
};
struct NotADataSet {  // rows() but no size(), validate(), make_buffer() or gather()
  dptrain::DenseBatch<double, double> rows(dptrain::Index, dptrain::Index) const;
};
struct NotEvenAModel {  // no scalar_type at all
  dptrain::Index num_parameters() const { return 1; }
};
struct ScheduleAndPartitioner {  // satisfies two concepts at once
  double factor(dptrain::Index) const { return 1; }
  dptrain::IndexRange range(dptrain::Index, dptrain::Index, dptrain::Index) const { return {}; }
};

}  // namespace

int main() {
  const dptrain::DenseDataset<double> data{dptrain::RowMatrix<double>(2, 1), dptrain::Vector<double>(2)};
  dptrain::Vector<double> theta(2);
  const dptrain::LinearRegression<double> model(1);
  const dptrain::TrainerOptions options{.threads = 1};
  const dptrain::Sgd sgd{.lr = 0.1};
#if DPTRAIN_CASE == 1
  dptrain::DataParallelTrainer trainer(options, NotAnOptimizer{});
#elif DPTRAIN_CASE == 2
  dptrain::DataParallelTrainer trainer(options, sgd, NotAnAggregator{});
#elif DPTRAIN_CASE == 3
  dptrain::DataParallelTrainer trainer(options, sgd, NotAPartitioner{});
#elif DPTRAIN_CASE == 4
  dptrain::DataParallelTrainer trainer(options, sgd);
  trainer.fit(NotAModel{}, theta, data);
#elif DPTRAIN_CASE == 5
  dptrain::DataParallelTrainer trainer(options, sgd, NotAWorker{});
#elif DPTRAIN_CASE == 6
  dptrain::DataParallelTrainer trainer(options, sgd, NotASchedule{});
#elif DPTRAIN_CASE == 7
  dptrain::DataParallelTrainer trainer(options, sgd, NotACommunicator{});
#elif DPTRAIN_CASE == 8
  dptrain::DataParallelTrainer trainer(options, sgd, NotASynchronizer{});
#elif DPTRAIN_CASE == 9
  dptrain::DataParallelTrainer trainer(options, sgd, 42);
#elif DPTRAIN_CASE == 10
  dptrain::DataParallelTrainer trainer(options, sgd, ScheduleAndPartitioner{});
#elif DPTRAIN_CASE == 11
  dptrain::DataParallelTrainer trainer(options, sgd, dptrain::Adam{});
#elif DPTRAIN_CASE == 12
  dptrain::DataParallelTrainer trainer(options, dptrain::TreeAggregator{});
#elif DPTRAIN_CASE == 13
  dptrain::DataParallelTrainer trainer(options, sgd);
  trainer.fit(model, theta, NotADataSet{});
#elif DPTRAIN_CASE == 14
  dptrain::DataParallelTrainer trainer(options, sgd);
  trainer.fit(NotEvenAModel{}, theta, data);
#endif
  trainer.fit(model, theta, data);
}
