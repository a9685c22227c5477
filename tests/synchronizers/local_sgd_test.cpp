// SPDX-License-Identifier: MIT
// LocalSgd: periodic model averaging against a serial reference, period 1 against the synchronous
// step, convergence, callbacks at averaging points, and a failing worker and a stopping callback.
#include <catch2/catch.hpp>

#include <array>
#include <utility>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/faults.hpp"

using dptrain::Index;

namespace {

// Local SGD as LocalSgd documents it, on one thread, no shuffling: every worker steps its own
// replica of θ and of the optimizer state with the mean gradient of its micro-batch; at an
// averaging point (every `period` steps and at every epoch's end) the replicas and states are
// averaged, and the Optimizer applies the mean of every worker's gradient (at its own replica).
template <class M, class D, class O>
dptrain::Vector<double> reference_local_sgd(const M& model, const dptrain::Vector<double>& start, const D& data,
                                            Index batch, Index epochs, Index workers, Index period,
                                            const O& optimizer) {
  constexpr auto slots = static_cast<std::size_t>(O::state_slots);
  const Index n = data.size(), batches = n / batch, len = start.size();
  struct Replica {
    dptrain::Vector<double> theta;
    std::array<dptrain::Vector<double>, slots> state;
  };
  dptrain::Vector<double> theta = start;
  std::array<dptrain::Vector<double>, slots> state;
  for (auto& s : state) s = dptrain::Vector<double>::Zero(len);
  std::vector<Replica> replicas(static_cast<std::size_t>(workers));
  std::vector<dptrain::Vector<double>> sums(static_cast<std::size_t>(workers));  // Σ∇ℓ over a micro-batch
  std::vector<Index> counts(static_cast<std::size_t>(workers));
  auto ws = model.make_workspace(batch);
  const auto apply = [&](dptrain::Vector<double>& th, std::array<dptrain::Vector<double>, slots>& st,
                         const dptrain::Vector<double>& g, Index step) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      optimizer.update(dptrain::UpdateSlice<double, O::state_slots>{dptrain::VectorMap<double>(th.data(), len),
                                                                    dptrain::ConstVectorMap<double>(g.data(), len),
                                                                    {dptrain::VectorMap<double>(st[K].data(), len)...}},
                       dptrain::StepInfo{step, optimizer.lr});
    }
    (std::make_index_sequence<slots>{});
  };
  bool diverged = false;
  for (Index step = 1; step <= epochs * batches; ++step) {
    if (!diverged)
      for (Replica& r : replicas) r = {theta, state};
    const Index first = ((step - 1) % batches) * batch;
    for (Index w = 0; w < workers; ++w) {
      const dptrain::IndexRange mine = dptrain::EvenPartitioner{}.range(batch, workers, w);
      auto& g = sums[static_cast<std::size_t>(w)];
      g = dptrain::Vector<double>::Zero(len);
      model.loss_and_gradient(replicas[static_cast<std::size_t>(w)].theta, data.rows(first + mine.begin, mine.size), g,
                              ws);
      counts[static_cast<std::size_t>(w)] = mine.size;
    }
    if (step % period != 0 && step % batches != 0) {  // a local step
      for (Index w = 0; w < workers; ++w) {
        Replica& r = replicas[static_cast<std::size_t>(w)];
        apply(r.theta, r.state,
              sums[static_cast<std::size_t>(w)] / static_cast<double>(counts[static_cast<std::size_t>(w)]), step);
      }
      diverged = true;
      continue;
    }
    if (diverged) {
      theta.setZero();
      for (auto& s : state) s.setZero();
      for (const Replica& r : replicas) {
        theta += r.theta / static_cast<double>(workers);
        for (std::size_t j = 0; j < slots; ++j) state[j] += r.state[j] / static_cast<double>(workers);
      }
    }
    dptrain::Vector<double> g = dptrain::Vector<double>::Zero(len);
    for (const auto& sum : sums) g += sum;
    apply(theta, state, g / static_cast<double>(batch), step);
    diverged = false;
  }
  return theta;
}

}  // namespace

TEST_CASE("LocalSgd: the replicas, their states and the averaging points as a serial reference computes them",
          "[synchronizers][trainer]") {
  const Index threads = GENERATE(1, 2, 3, 4);
  const Index period = GENERATE(1, 3);
  const auto data = test::linear_data<double>(96, 4, 7);
  const dptrain::LinearRegression<double> model(4);
  // 4 steps an epoch: averaging points at 3, 4, 6, 8, 9 and 12 with period 3.
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 24, .epochs = 3, .shuffle = false};
  const dptrain::Momentum momentum{.lr = 0.05};
  dptrain::Vector<double> theta = model.init_parameters();
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, momentum, dptrain::LocalSgd{.period = period}).fit(model, theta, data);
  const dptrain::Vector<double> expected =
      reference_local_sgd(model, model.init_parameters(), data, 24, 3, threads, period, momentum);
  CHECK(test::relative_error(theta, expected) < 1e-12);
  // The replicas' sums go through the fit's Aggregator, whichever it is.
  dptrain::Vector<double> ring = model.init_parameters(), tree = model.init_parameters();
  dptrain::DataParallelTrainer(options, momentum, dptrain::LocalSgd{.period = period},
                               dptrain::RingAllReduceAggregator{})
      .fit(model, ring, data);
  dptrain::DataParallelTrainer(options, momentum, dptrain::LocalSgd{.period = period}, dptrain::TreeAggregator{})
      .fit(model, tree, data);
  CHECK(test::relative_error(ring, expected) < 1e-12);
  CHECK(test::relative_error(tree, expected) < 1e-12);
  if (period > 1 && threads > 1) {  // the replicas did diverge: not the synchronous step
    dptrain::Vector<double> synchronous = model.init_parameters();
    dptrain::DataParallelTrainer(options, momentum).fit(model, synchronous, data);
    CHECK(test::relative_error(theta, synchronous) > 1e-6);
  }
  CHECK(report.steps == 12);
  CHECK(report.samples == 96 * 3);
  CHECK(report.epoch_loss.size() == 3);
  Index samples = 0;
  for (const dptrain::WorkerReport& w : report.workers) samples += w.samples;
  CHECK(samples == 96 * 3);
}

TEST_CASE("LocalSgd: period 1, and warm-up steps that cover the run, are the synchronous step bit for bit",
          "[synchronizers][trainer]") {
  const Index threads = GENERATE(1, 2, 3);
  const auto data = test::linear_data<double>(90, 4, 3);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 3, .seed = 5};
  dptrain::Vector<double> expected = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}).fit(model, expected, data);
  for (const dptrain::LocalSgd local :
       {dptrain::LocalSgd{.period = 1}, dptrain::LocalSgd{.period = 4, .warmup_steps = 18}}) {
    dptrain::Vector<double> theta = model.init_parameters();
    dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}, local).fit(model, theta, data);
    CHECK((theta.array() == expected.array()).all());
  }
}

TEST_CASE("LocalSgd: period 4 converges on a convex problem at 1 to 4 threads", "[synchronizers][trainer]") {
  const Index threads = GENERATE(1, 2, 3, 4);
  const auto data = test::linear_data<float>(512, 6, 11);
  const dptrain::LinearRegression<float> model(6);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 32, .epochs = 30, .seed = 2};
  dptrain::Vector<float> synchronous = model.init_parameters(), theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.02}).fit(model, synchronous, data);
  const dptrain::FitReport report = dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.02},
                                                                 dptrain::LocalSgd{.period = 4, .warmup_steps = 8})
                                        .fit(model, theta, data);
  CHECK(test::relative_error(theta, synchronous) < 0.02);
  CHECK(report.epoch_loss.back() < 0.02);  // the noise's ½σ² is 0.005
  CHECK(report.epoch_loss.back() < report.epoch_loss.front() / 10);
}

TEST_CASE("LocalSgd: on_step_end runs at averaging points only, with theta the average", "[synchronizers][callbacks]") {
  const Index threads = GENERATE(1, 3);
  const auto data = test::linear_data<double>(96, 4, 7);
  const dptrain::LinearRegression<double> model(4);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 24, .epochs = 3, .shuffle = false};
  struct Seen {
    std::vector<Index> steps;
    std::vector<dptrain::Vector<double>> thetas;
    bool on_step_end(dptrain::TrainContext<double>& ctx) {
      steps.push_back(ctx.step);
      thetas.emplace_back(ctx.theta);
      return false;
    }
  } seen;
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer(options, dptrain::Sgd{.lr = 0.05}, dptrain::LocalSgd{.period = 3})
      .fit(model, theta, data, seen);
  CHECK(seen.steps == std::vector<Index>{3, 4, 6, 8, 9, 12});
  // What the hook saw at step 6 is the run cut there (max_steps), which ends on an average.
  dptrain::TrainerOptions six = options;
  six.max_steps = 6;
  dptrain::Vector<double> at_six = model.init_parameters();
  dptrain::DataParallelTrainer(six, dptrain::Sgd{.lr = 0.05}, dptrain::LocalSgd{.period = 3}).fit(model, at_six, data);
  CHECK((seen.thetas[2].array() == at_six.array()).all());
  CHECK((seen.thetas.back().array() == theta.array()).all());
}

TEST_CASE(
    "LocalSgd: a worker that throws at step 7 and a callback that stops at step 9 leave at the next averaging point",
    "[synchronizers][trainer][faults]") {
  const Index threads = GENERATE(1, 2, 3);
  auto data = test::linear_data<double>(128, 3, 1);
  const dptrain::TrainerOptions options{.threads = threads, .batch_size = 16, .epochs = 2, .shuffle = false};
  const auto run_to = [&](Index steps) {  // θ of the same run cut after `steps` steps
    dptrain::TrainerOptions cut = options;
    cut.max_steps = steps;
    const dptrain::LinearRegression<double> plain(3);
    dptrain::Vector<double> theta = plain.init_parameters();
    dptrain::DataParallelTrainer(cut, dptrain::Momentum{.lr = 0.05}, dptrain::LocalSgd{.period = 4})
        .fit(plain, theta, data);
    return theta;
  };
  const dptrain::Vector<double> at_4 = run_to(4), at_12 = run_to(12);

  SECTION("a worker throws at step 7: fit() throws its error, theta the average of step 4") {
    data.features(100, 0) = test::ThrowsOnMarkedRow::marker();
    const test::ThrowsOnMarkedRow model(3, "boom at step 7");  // row 100: minibatch 7 of 16
    dptrain::Vector<double> theta = model.init_parameters();
    CHECK_THROWS_MATCHES(
        dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}, dptrain::LocalSgd{.period = 4})
            .fit(model, theta, data),
        test::WorkerFailure, Catch::Matchers::Message("boom at step 7"));
    CHECK((theta.array() == at_4.array()).all());
  }
  SECTION("a callback asks to stop at step 9: it runs at step 12, the team leaves at 16 with the average of 12") {
    struct StopFromStep9 {
      bool on_step_end(dptrain::TrainContext<double>& ctx) const { return ctx.step >= 9; }
    };
    const dptrain::LinearRegression<double> model(3);
    dptrain::Vector<double> theta = model.init_parameters();
    const dptrain::FitReport report =
        dptrain::DataParallelTrainer(options, dptrain::Momentum{.lr = 0.05}, dptrain::LocalSgd{.period = 4})
            .fit(model, theta, data, StopFromStep9{});
    CHECK(report.stopped_by_callback);
    CHECK(report.steps == 12);
    CHECK((theta.array() == at_12.array()).all());
  }
}

TEST_CASE("LocalSgd: a period below 1 is refused before training", "[synchronizers][trainer]") {
  const auto data = test::linear_data<double>(32, 2, 1);
  const dptrain::LinearRegression<double> model(2);
  dptrain::Vector<double> theta = model.init_parameters();
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.1},
                                                 dptrain::LocalSgd{.period = 0})
                        .fit(model, theta, data),
                    "dptrain::LocalSgd: period must be at least 1, got 0");
  CHECK((theta.array() == model.init_parameters().array()).all());
}
