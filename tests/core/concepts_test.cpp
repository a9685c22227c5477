// SPDX-License-Identifier: MIT
// concepts.hpp: the short conforming example of each concept (the same code as its documentation).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <span>
#include <vector>

#include "dptrain/dptrain.hpp"

namespace concepts_examples {

// Model: least squares through the origin on one feature, ℓ = ½(w·x − y)².
struct Line {
  using scalar_type = double;
  using batch_type = dptrain::DenseBatch<double, double>;
  struct workspace_type {};
  dptrain::Index num_parameters() const { return 1; }
  workspace_type make_workspace(dptrain::Index) const { return {}; }
  double loss_and_gradient(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::VectorRef<double> g,
                           workspace_type& ws) const {
    for (dptrain::Index i = 0; i < b.size(); ++i) {
      g[0] += (w[0] * b.features(i, 0) - b.targets[i]) * b.features(i, 0);
    }
    return loss(w, b, ws);
  }
  double loss(dptrain::ConstVectorRef<double> w, const batch_type& b, workspace_type&) const {
    return 0.5 * (b.features.col(0) * w[0] - b.targets).squaredNorm();
  }
  void validate(const batch_type& b) const {
    if (b.features.cols() != 1) throw dptrain::invalid_argument("Line: one feature per sample");
  }
};
static_assert(dptrain::Model<Line> && dptrain::ModelTypes<Line> && dptrain::HasParameterCount<Line> &&
              dptrain::MakesWorkspace<Line> && dptrain::ComputesLossAndGradient<Line> && dptrain::ValidatesData<Line>);

// Predictor: a Model that also predicts one target per row.
struct PredictingLine : Line {
  using target_type = double;
  void predict(dptrain::ConstVectorRef<double> w, const batch_type& b, Eigen::Ref<dptrain::Vector<double>> out,
               workspace_type&) const {
    out = b.features.col(0) * w[0];
  }
};
static_assert(dptrain::Predictor<PredictingLine>);

// DeclaresBiases: a line with an intercept, ℓ = ½(w·x + b − y)², θ = [w, b]; θ[1] is the bias.
struct LineWithIntercept : Line {
  dptrain::Index num_parameters() const { return 2; }
  double loss_and_gradient(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::VectorRef<double> g,
                           workspace_type& ws) const {
    for (dptrain::Index i = 0; i < b.size(); ++i) {
      const double r = w[0] * b.features(i, 0) + w[1] - b.targets[i];
      g[0] += r * b.features(i, 0);
      g[1] += r;
    }
    return loss(w, b, ws);
  }
  double loss(dptrain::ConstVectorRef<double> w, const batch_type& b, workspace_type&) const {
    return 0.5 * (b.features.col(0).array() * w[0] + w[1] - b.targets.array()).matrix().squaredNorm();
  }
  std::vector<dptrain::IndexRange> bias_ranges() const { return {{.begin = 1, .size = 1}}; }
};
static_assert(dptrain::DeclaresBiases<LineWithIntercept>);

// DeclaresParameterGroups: the line's slope and intercept as two groups.
struct GroupedLine : LineWithIntercept {
  std::vector<dptrain::IndexRange> parameter_groups() const { return {{0, 1}, {1, 1}}; }
};
static_assert(dptrain::DeclaresParameterGroups<GroupedLine>);
static_assert(!dptrain::DeclaresBiases<Line>);

// OverwritesGradient: the Line, writing its one gradient element.
struct OverwritingLine : Line {
  double loss_and_gradient_overwrite(dptrain::ConstVectorRef<double> w, const batch_type& b,
                                     dptrain::VectorRef<double> g, workspace_type& ws) const {
    g.setZero();
    return loss_and_gradient(w, b, g, ws);
  }
};
static_assert(dptrain::OverwritesGradient<OverwritingLine>);
static_assert(!dptrain::OverwritesGradient<Line>);

// SparseGradient: the Line, whose batch touches w only if some row's feature is nonzero.
struct SparseLine : Line {
  template <class Visit>
  void gradient_support(const batch_type& b, Visit&& visit) const {
    if ((b.features.col(0).array() != 0.0).any()) visit(dptrain::Index{0});
  }
};
static_assert(dptrain::SparseGradient<SparseLine>);
static_assert(!dptrain::SparseGradient<Line>);

// ResidualGradient: the Line's gradient is Σ rᵢ·xᵢ with rᵢ = w·xᵢ − yᵢ.
struct ResidualLine : Line {
  dptrain::Index residual_width() const { return 1; }
  double loss_and_residuals(dptrain::ConstVectorRef<double> w, const batch_type& b, dptrain::RowMatrixMap<double> r,
                            workspace_type& ws) const {
    r.col(0) = b.features.col(0) * w[0] - b.targets;
    return loss(w, b, ws);
  }
  void add_residual_gradient(const batch_type& b, dptrain::ConstRowMatrixMap<double> r, dptrain::VectorRef<double> g,
                             workspace_type&) const {
    g[0] += b.features.col(0).dot(r.col(0));
  }
};
static_assert(dptrain::ResidualGradient<ResidualLine>);
static_assert(!dptrain::ResidualGradient<Line>);

// DatasetOf: DenseDataset is the usual one; any type with these members is a data set.
static_assert(dptrain::DatasetOf<dptrain::DenseDataset<double>, Line::batch_type>);

// Worker and WorkerPolicy: a decorator that counts the micro-batches its inner worker computes.
struct CountingWorker {
  template <class M>
  struct State {
    decltype(dptrain::GradientWorker{}.make(std::declval<const M&>(), 0, 0)) inner;
    dptrain::Index batches = 0;
    void zero() { inner.zero(); }
    void accumulate(const M& m, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch) {
      ++batches;
      inner.accumulate(m, theta, batch);
    }
    dptrain::VectorMap<typename M::scalar_type> gradient() { return inner.gradient(); }
    double loss() const { return inner.loss(); }
    dptrain::Index samples() const { return inner.samples(); }
  };
  template <class M>
  State<M> make(const M& model, dptrain::Index rank, dptrain::Index max_rows) const {
    return {dptrain::GradientWorker{}.make(model, rank, max_rows)};
  }
};
static_assert(dptrain::Worker<CountingWorker, Line> && dptrain::WorkerPolicy<CountingWorker>);

// IndexedWorkerState: a worker that counts each sample's visits.
struct VisitCountingWorker {
  std::vector<int>* visits;
  template <class M>
  struct State {
    decltype(dptrain::GradientWorker{}.make(std::declval<const M&>(), 0, 0)) inner;
    std::vector<int>* visits;
    void zero() { inner.zero(); }
    void accumulate(const M& m, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch, dptrain::SampleIds ids) {
      for (dptrain::Index i = 0; i < ids.size(); ++i) ++(*visits)[static_cast<std::size_t>(ids[i])];
      inner.accumulate(m, theta, batch);
    }
    dptrain::VectorMap<typename M::scalar_type> gradient() { return inner.gradient(); }
    double loss() const { return inner.loss(); }
    dptrain::Index samples() const { return inner.samples(); }
  };
  template <class M>
  State<M> make(const M& model, dptrain::Index rank, dptrain::Index max_rows) const {
    return {dptrain::GradientWorker{}.make(model, rank, max_rows), visits};
  }
};
static_assert(dptrain::Worker<VisitCountingWorker, Line> && dptrain::WorkerPolicy<VisitCountingWorker>);
static_assert(dptrain::IndexedWorkerState<VisitCountingWorker::State<Line>, Line>);
static_assert(!dptrain::IndexedWorkerState<CountingWorker::State<Line>, Line>);

// Not an example: VisitCountingWorker, also counting batch rows whose feature (the row's number
// in the test's data) is not the row it was told.
struct RowMatchingWorker {
  std::vector<int>* visits;
  std::atomic<int>* mismatches;
  template <class M>
  struct State {
    VisitCountingWorker::State<M> counting;
    std::atomic<int>* mismatches;
    void zero() { counting.zero(); }
    void accumulate(const M& m, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch, dptrain::SampleIds ids) {
      for (dptrain::Index i = 0; i < batch.size(); ++i)
        if (batch.features(i, 0) != static_cast<double>(ids[i])) ++*mismatches;
      counting.accumulate(m, theta, batch, ids);
    }
    dptrain::VectorMap<typename M::scalar_type> gradient() { return counting.gradient(); }
    double loss() const { return counting.loss(); }
    dptrain::Index samples() const { return counting.samples(); }
  };
  template <class M>
  State<M> make(const M& model, dptrain::Index rank, dptrain::Index max_rows) const {
    return {VisitCountingWorker{visits}.make(model, rank, max_rows), mismatches};
  }
};

// Partitioner: everything to the first worker.
struct FirstTakesAll {
  dptrain::IndexRange range(dptrain::Index batch, dptrain::Index, dptrain::Index rank) const {
    return rank == 0 ? dptrain::IndexRange{0, batch} : dptrain::IndexRange{batch, 0};
  }
};
static_assert(dptrain::Partitioner<FirstTakesAll>);

// AdaptivePartitioner: learns from each step's loads, bounds its sizes.
struct LearningFirstTakesAll : FirstTakesAll {
  dptrain::Index steps = 0;
  void observe(std::span<const dptrain::WorkerLoad>) { ++steps; }
  dptrain::Index max_size(dptrain::Index batch, dptrain::Index) const { return batch; }
};
static_assert(dptrain::AdaptivePartitioner<LearningFirstTakesAll>);

// Aggregator: thread 0 sums every buffer into its own, then each thread returns its shard.
struct SumIntoFirst {
  template <class Scalar>
  dptrain::VectorMap<Scalar> all_reduce(const dptrain::TeamMember& team,
                                        const dptrain::GradientBuffers<Scalar>& buffers) const {
    if (team.rank == 0)
      for (dptrain::Index t = 1; t < buffers.count(); ++t) buffers.buffer(0) += buffers.buffer(t);
    team.barrier();
    return buffers.shard(0, team.rank);
  }
};
static_assert(dptrain::Aggregator<SumIntoFirst>);

// Optimizer: plain gradient descent, no state.
struct Descent {
  double lr = 0.1;
  static constexpr int state_slots = 0;
  template <class Scalar>
  void update(const dptrain::UpdateSlice<Scalar, state_slots>& s, const dptrain::StepInfo& info) const {
    dptrain::VectorMap<Scalar> theta = s.theta;  // a writable copy of the view (s is const)
    theta -= static_cast<Scalar>(info.lr) * s.grad;
  }
};
static_assert(dptrain::Optimizer<Descent>);

// Schedule and FitsRun: halve the rate for the second half of the run.
struct HalfwayHalving {
  dptrain::Index total_steps = 0;  // 0: the run's
  double factor(dptrain::Index step) const { return 2 * step > total_steps ? 0.5 : 1.0; }
  HalfwayHalving for_run(const dptrain::RunLength& run) const {
    return {total_steps == 0 ? run.total_steps : total_steps};
  }
};
static_assert(dptrain::Schedule<HalfwayHalving> && dptrain::FitsRun<HalfwayHalving>);

// Communicator: one process, every operation free (what SingleProcessCommunicator does).
struct OneProcess {
  struct Group {
    dptrain::Index threads;
    dptrain::Index rank() const { return 0; }
    dptrain::Index size() const { return 1; }
    dptrain::Index first_worker() const { return 0; }
    dptrain::Index workers() const { return threads; }
    template <class S>
    void broadcast(dptrain::VectorMap<S>) const {}
    template <class S>
    void all_reduce(const dptrain::TeamMember&, dptrain::VectorMap<S>) const {}
    void all_reduce(dptrain::StepScalars&) const {}
  };
  Group connect(dptrain::Index threads, const dptrain::RunSignature&) const { return {threads}; }
};
static_assert(dptrain::Communicator<OneProcess>);

// Synchronizer: synchronous SGD from the step's primitives (what EveryStepSynchronizer does).
struct EveryStep {
  template <class Step>
  struct Loop {
    Step* step;
    dptrain::SpanEnd run(const dptrain::TeamMember& me, const dptrain::StepSpan& span) const {
      dptrain::SpanEnd end;
      for (dptrain::Index k = 0; k < span.count; ++k) {
        step->local_gradient(me, span.first + k, span.epoch_step + k);
        step->wait_for_workers(me);
        auto shard = step->reduce_gradients(me);
        if (step->reduce_scalars(me, shard)) step->update(me, shard);
        step->publish(me);
        end = {k + 1, step->finish(me, span, k)};
        if (end.last.leave) break;
      }
      return end;
    }
  };
  template <class Step>
  Loop<Step> start(Step& step) const {
    return {&step};
  }
};
static_assert(dptrain::Synchronizer<EveryStep>);

}  // namespace concepts_examples

TEST_CASE("concepts: each concept's documented example trains", "[core]") {
  using namespace concepts_examples;
  dptrain::RowMatrix<double> x(64, 1);
  dptrain::Vector<double> y(64);
  for (dptrain::Index i = 0; i < 64; ++i) {
    x(i, 0) = 0.5 + 0.01 * static_cast<double>(i);
    y[i] = 2 * x(i, 0);
  }
  const dptrain::DenseDataset<double> data{.features = x, .targets = y};
  dptrain::Vector<double> w = dptrain::Vector<double>::Zero(1);
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 40}, Descent{.lr = 0.5}, HalfwayHalving{},
                                   SumIntoFirst{}, LearningFirstTakesAll{}, CountingWorker{})
          .fit(PredictingLine{}, w, data);
  CHECK(report.steps == 160);
  CHECK(report.workers[0].samples == 64 * 40);  // the first worker took every sample
  CHECK(report.workers[1].samples == 0);
  CHECK(w[0] == Approx(2.0).epsilon(1e-6));
}

TEST_CASE("concepts: the SparseGradient example trains under Hogwild!, which skips its untouched w", "[core]") {
  using namespace concepts_examples;
  // Rows 0–31 have x = 0: a micro-batch of them touches nothing, and leaves w as it is.
  dptrain::RowMatrix<double> x = dptrain::RowMatrix<double>::Zero(64, 1);
  dptrain::Vector<double> y = dptrain::Vector<double>::Zero(64);
  for (dptrain::Index i = 32; i < 64; ++i) {
    x(i, 0) = 0.5 + 0.01 * static_cast<double>(i);
    y[i] = 2 * x(i, 0);
  }
  const dptrain::DenseDataset<double> data{.features = x, .targets = y};
  dptrain::Vector<double> w = dptrain::Vector<double>::Zero(1);
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 16, .epochs = 40}, dptrain::Sgd{.lr = 0.5},
                               dptrain::Hogwild{})
      .fit(SparseLine{}, w, data);
  CHECK(w[0] == Approx(2.0).epsilon(1e-6));
}

TEST_CASE("concepts: the IndexedWorkerState example sees each sample once an epoch, as the rows it reads", "[core]") {
  using namespace concepts_examples;
  // x = the row's number: a row read is the row named only if its feature says so.
  const dptrain::Index n = 61;
  dptrain::RowMatrix<double> x(n, 1);
  for (dptrain::Index i = 0; i < n; ++i) x(i, 0) = static_cast<double>(i);
  const dptrain::DenseDataset<double> data{.features = x, .targets = dptrain::Vector<double>::Zero(n)};
  const bool shuffle = GENERATE(false, true);
  const dptrain::Index threads = GENERATE(1, 3), accumulation = GENERATE(1, 2);
  std::vector<int> visits(static_cast<std::size_t>(n), 0);
  std::atomic<int> mismatches{0};
  dptrain::Vector<double> w = dptrain::Vector<double>::Zero(1);
  dptrain::DataParallelTrainer({.threads = threads,
                                .batch_size = 8,
                                .epochs = 3,
                                .shuffle = shuffle,
                                .seed = 5,
                                .accumulation_steps = accumulation},
                               dptrain::Sgd{.lr = 1e-6}, RowMatchingWorker{&visits, &mismatches})
      .fit(Line{}, w, data);
  CHECK(std::ranges::count(visits, 3) == n);
  CHECK(mismatches == 0);
}

TEST_CASE("concepts: the ResidualGradient example trains with Saga to the least-squares slope", "[core]") {
  using namespace concepts_examples;
  dptrain::RowMatrix<double> x(40, 1);
  dptrain::Vector<double> y(40);
  for (dptrain::Index i = 0; i < 40; ++i) {
    x(i, 0) = 0.5 + 0.025 * static_cast<double>(i);
    y[i] = 3 * x(i, 0) + 0.1 * std::sin(static_cast<double>(i));
  }
  const dptrain::DenseDataset<double> data{.features = x, .targets = y};
  const ResidualLine model;
  dptrain::GradientTable table(model, data);
  dptrain::Vector<double> w = dptrain::Vector<double>::Zero(1);
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 4, .epochs = 200}, dptrain::Saga{.lr = 0.2}, table.worker())
      .fit(model, w, data, table);
  CHECK(w[0] == Approx(x.col(0).dot(y) / x.col(0).squaredNorm()).epsilon(1e-10));
}

TEST_CASE("concepts: the DeclaresBiases example keeps its intercept out of the weight decay", "[core]") {
  using namespace concepts_examples;
  // y = 2x + 1 exactly; with λ/2·w² on the slope only, the minimiser of (1/n)Σ½(wx + b − y)² + λ/2·w²
  // is w = cov(x, y) / (var(x) + λ), b = ȳ − w·x̄ (variances over n).
  dptrain::RowMatrix<double> x(32, 1);
  dptrain::Vector<double> y(32);
  for (dptrain::Index i = 0; i < 32; ++i) {
    x(i, 0) = -1.0 + 0.0625 * static_cast<double>(i);
    y[i] = 2 * x(i, 0) + 1;
  }
  const double lambda = 0.5, mean_x = x.mean(), mean_y = y.mean();
  const double var_x = (x.col(0).array() - mean_x).square().mean();
  const double cov_xy = ((x.col(0).array() - mean_x) * (y.array() - mean_y)).mean();
  const double slope = cov_xy / (var_x + lambda), intercept = mean_y - slope * mean_x;
  const dptrain::DenseDataset<double> data{.features = x, .targets = y};
  dptrain::Vector<double> w = dptrain::Vector<double>::Zero(2);
  dptrain::DataParallelTrainer({.threads = 2, .batch_size = 32, .epochs = 400},
                               dptrain::Sgd{.lr = 0.5, .weight_decay = lambda, .decay_biases = false})
      .fit(LineWithIntercept{}, w, data);
  CHECK(w[0] == Approx(slope).epsilon(1e-9));
  CHECK(w[1] == Approx(intercept).epsilon(1e-9));
  CHECK(std::abs(intercept - 1.0) > 0.01);  // the decay moved the slope, and so the intercept
  // Line declares no biases: decay_biases = false is refused rather than silently ignored.
  dptrain::Vector<double> v = dptrain::Vector<double>::Zero(1);
  CHECK_THROWS_AS(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 32}, dptrain::Sgd{.decay_biases = false})
                      .fit(Line{}, v, data),
                  dptrain::invalid_argument);
}
