// SPDX-License-Identifier: MIT
// Checkpoints: save and load round-trip; resuming is bitwise exact for every optimizer; damaged,
// truncated or mismatched files are rejected without touching θ.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/temp_dir.hpp"

using Catch::Contains;
using dptrain::Index;
using dptrain::Vector;

namespace {

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Rewrites the trailing CRC-32 so that a deliberately edited header gets past the checksum.
void fix_checksum(std::vector<char>& bytes) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::uint32_t crc = dptrain::detail::checkpoint::crc32_of(data, bytes.size() - 4);
  for (std::size_t i = 0; i < 4; ++i) bytes[bytes.size() - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xFFU);
}

// Trains `total` steps in one go, and `first` steps + save + load into a fresh θ and trainer +
// the rest; returns both θ.
template <class Optimizer, class Schedule = dptrain::ConstantSchedule>
std::pair<Vector<float>, Vector<float>> interrupted_and_straight(const Optimizer& optimizer, Index first, Index total,
                                                                 dptrain::TrainerOptions options,
                                                                 Schedule schedule = {}) {
  const test::TempDir dir("checkpoint");
  const auto data = test::cluster_data<float>(90, 5, 3, 4, 2.0);
  const dptrain::Mlp<float> model({5, 7, 3});
  const Vector<float> start = model.init_parameters(11);

  options.epochs = 1000;
  options.max_steps = total;
  Vector<float> straight = start;
  dptrain::DataParallelTrainer(options, optimizer, schedule).fit(model, straight, data);

  options.max_steps = first;
  Vector<float> theta = start;
  dptrain::Checkpoint checkpoint(model, dir.file("run.ckpt"), {.every_epochs = 0});
  dptrain::DataParallelTrainer(options, optimizer, schedule).fit(model, theta, data, checkpoint);
  REQUIRE(checkpoint.saves() == 1);

  Vector<float> resumed = model.init_parameters(99);  // overwritten by the load
  const dptrain::TrainingState<float> state = dptrain::load_checkpoint(checkpoint.path(), model, resumed);
  CHECK(resumed == theta);
  CHECK(state.step == first);
  options.max_steps = total;
  dptrain::DataParallelTrainer fresh(options, optimizer, schedule);
  const dptrain::FitReport report = fresh.resume(model, resumed, data, state);
  CHECK(report.steps == total - first);
  return {straight, resumed};
}

}  // namespace

TEST_CASE("Checkpoint: save and load round-trip theta and the state", "[checkpoint]") {
  const test::TempDir dir("checkpoint");
  const dptrain::SoftmaxRegression<double> model(4, 3);
  const Vector<double> theta = model.init_parameters(3);
  dptrain::TrainingState<double> state;
  state.step = 17;
  state.epoch = 3;
  state.epoch_step = 2;
  state.plan = {.samples = 40,
                .batch_size = 8,
                .accumulation_steps = 1,
                .drop_last = true,
                .shuffle = true,
                .seed = 0xFEEDFACECAFEBEEF};
  state.optimizer_state.assign(2, dptrain::AlignedBuffer<double>(model.num_parameters()));
  state.optimizer_state[0].map().setLinSpaced(-1.0, 1.0);
  state.optimizer_state[1].map().setConstant(-0.0);
  const std::string path = dir.file("model.ckpt");
  dptrain::save_checkpoint(path, model, theta, state);

  Vector<double> loaded = Vector<double>::Zero(model.num_parameters());
  const dptrain::TrainingState<double> back = dptrain::load_checkpoint(path, model, loaded);
  CHECK(loaded == theta);
  CHECK(back.step == 17);
  CHECK(back.epoch == 3);
  CHECK(back.epoch_step == 2);
  CHECK(back.plan == state.plan);
  REQUIRE(back.optimizer_state.size() == 2);
  CHECK(back.optimizer_state[0].map() == state.optimizer_state[0].map());
  CHECK(std::signbit(back.optimizer_state[1].data()[0]));  // the bits, not just the value
  // Written atomically: no temporary file is left behind.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("Checkpoint: resuming is bitwise exact for every optimizer", "[checkpoint]") {
  const dptrain::TrainerOptions options{.threads = 3, .batch_size = 16, .seed = 5};  // 6 steps per epoch
  SECTION("SGD") {
    const auto [straight, resumed] = interrupted_and_straight(dptrain::Sgd{.lr = 0.1}, 8, 20, options);
    CHECK(straight == resumed);
  }
  SECTION("momentum, Nesterov") {
    const auto [straight, resumed] =
        interrupted_and_straight(dptrain::Momentum{.lr = 0.05, .momentum = 0.9, .nesterov = true}, 9, 21, options);
    CHECK(straight == resumed);
  }
  SECTION("Adam") {
    const auto [straight, resumed] = interrupted_and_straight(dptrain::Adam{.lr = 0.01}, 7, 19, options);
    CHECK(straight == resumed);
  }
  SECTION("AdamW") {
    const auto [straight, resumed] =
        interrupted_and_straight(dptrain::AdamW{.lr = 0.01, .weight_decay = 0.1}, 11, 20, options);
    CHECK(straight == resumed);
  }
  SECTION("AdaGrad") {
    const auto [straight, resumed] = interrupted_and_straight(dptrain::AdaGrad{.lr = 0.1}, 5, 15, options);
    CHECK(straight == resumed);
  }
  SECTION("RMSProp") {
    const auto [straight, resumed] = interrupted_and_straight(dptrain::RMSProp{.lr = 0.01}, 13, 25, options);
    CHECK(straight == resumed);
  }
  SECTION("at an epoch boundary, with a cosine schedule, accumulation and drop_last") {
    dptrain::TrainerOptions accumulating = options;
    accumulating.accumulation_steps = 2;
    accumulating.drop_last = true;  // 5 minibatches of 16 of 90 samples: 3 steps per epoch
    const auto [straight, resumed] = interrupted_and_straight(dptrain::Momentum{.lr = 0.05}, 6, 14, accumulating,
                                                              dptrain::CosineSchedule{.total_steps = 14});
    CHECK(straight == resumed);
  }
  SECTION("without shuffling") {
    dptrain::TrainerOptions ordered = options;
    ordered.shuffle = false;
    const auto [straight, resumed] = interrupted_and_straight(dptrain::Adam{.lr = 0.01}, 10, 17, ordered);
    CHECK(straight == resumed);
  }
}

TEST_CASE("Checkpoint: a full-precision run resumes with bf16 products, and back", "[checkpoint][bf16]") {
  // θ and the optimizer state are fp32 in both precisions, and the architecture is the same.
  const test::TempDir dir("checkpoint");
  const auto data = test::cluster_data<float>(90, 5, 3, 4, 2.0);
  const dptrain::Mlp<float> full({5, 7, 3});
  const dptrain::Mlp<float> mixed({5, 7, 3}, dptrain::Precision::bf16);
  const dptrain::TrainerOptions options{.threads = 2, .batch_size = 16, .epochs = 1000, .max_steps = 8, .seed = 5};
  const dptrain::Momentum momentum{.lr = 0.05, .momentum = 0.9};
  for (const bool to_bf16 : {true, false}) {
    CAPTURE(to_bf16);
    const dptrain::Mlp<float>& first = to_bf16 ? full : mixed;
    const dptrain::Mlp<float>& then = to_bf16 ? mixed : full;
    Vector<float> theta = first.init_parameters(11);
    dptrain::Checkpoint checkpoint(first, dir.file("switch.ckpt"), {.every_epochs = 0});
    dptrain::DataParallelTrainer(options, momentum).fit(first, theta, data, checkpoint);
    REQUIRE(checkpoint.saves() == 1);
    Vector<float> resumed = then.init_parameters(99);
    const dptrain::TrainingState<float> state = dptrain::load_checkpoint(checkpoint.path(), then, resumed);
    CHECK(resumed == theta);
    dptrain::TrainerOptions longer = options;
    longer.max_steps = 20;
    const dptrain::FitReport report = dptrain::DataParallelTrainer(longer, momentum).resume(then, resumed, data, state);
    CHECK(report.steps == 12);
    CHECK(resumed.allFinite());
  }
}

TEST_CASE("Checkpoint: the callback saves every N steps and epochs, once per position", "[checkpoint]") {
  const test::TempDir dir("checkpoint");
  const auto data = test::linear_data<double>(40, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  Vector<double> theta = model.init_parameters();
  dptrain::Checkpoint checkpoint(model, dir.file("c.ckpt"), {.every_steps = 3, .every_epochs = 2});
  // 4 steps per epoch, 3 epochs: saves at steps 3, 6, 8 (epoch 2), 9 and 12 (by step, and at the end: once).
  const auto report =
      dptrain::DataParallelTrainer({.threads = 2, .batch_size = 10, .epochs = 3}, dptrain::Sgd{.lr = 0.01})
          .fit(model, theta, data, checkpoint);
  CHECK(report.steps == 12);
  CHECK(checkpoint.saves() == 5);
  Vector<double> loaded(model.num_parameters());
  const auto state = dptrain::load_checkpoint(checkpoint.path(), model, loaded);
  CHECK(state.step == 12);
  CHECK(state.epoch == 3);  // complete: a resumed run starts epoch 3
  CHECK(state.epoch_step == 0);
  CHECK(loaded == theta);
  CHECK_THROWS_AS(dptrain::Checkpoint(model, ""), dptrain::invalid_argument);
  CHECK_THROWS_AS(dptrain::Checkpoint(model, "x", {.every_steps = -1}), dptrain::invalid_argument);
}

TEST_CASE("Checkpoint: damaged, truncated and foreign files are rejected and theta is kept", "[checkpoint]") {
  const test::TempDir dir("checkpoint");
  const dptrain::SoftmaxRegression<float> model(4, 3);
  const Vector<float> saved = model.init_parameters(1);
  dptrain::TrainingState<float> state;
  state.plan = {.samples = 10, .batch_size = 2};
  state.optimizer_state.assign(1, dptrain::AlignedBuffer<float>(model.num_parameters()));
  const std::string good = dir.file("good.ckpt");
  dptrain::save_checkpoint(good, model, saved, state);
  const std::vector<char> bytes = read_bytes(good);
  const std::string bad = dir.file("bad.ckpt");
  const Vector<float> before = Vector<float>::Constant(model.num_parameters(), 7.0F);
  Vector<float> theta = before;
  const auto load = [&] { return dptrain::load_checkpoint(bad, model, theta); };

  SECTION("a flipped byte anywhere") {
    for (std::size_t at = 0; at < bytes.size(); ++at) {
      std::vector<char> damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
      write_bytes(bad, damaged);
      CHECK_THROWS_AS(load(), dptrain::parse_error);
      CHECK(theta == before);
    }
  }
  SECTION("a truncated file, cut anywhere") {
    for (std::size_t size = 0; size < bytes.size(); size += 7) {
      write_bytes(bad, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size)));
      CHECK_THROWS_AS(load(), dptrain::parse_error);
      CHECK(theta == before);
    }
    write_bytes(bad, std::vector<char>(bytes.begin(), bytes.end() - 1));
    CHECK_THROWS_WITH(load(), Contains("damaged or truncated"));
  }
  SECTION("not a checkpoint") {
    write_bytes(bad, {'h', 'e', 'l', 'l', 'o', ',', ' ', 'w', 'o', 'r', 'l', 'd'});
    CHECK_THROWS_WITH(load(), Contains("dptrain::load_checkpoint: ") && Contains("bad.ckpt, byte 0") &&
                                  Contains("not a dptrain checkpoint"));
  }
  SECTION("another format version") {
    std::vector<char> other = bytes;
    other[8] = 3;  // the u32 after the magic
    fix_checksum(other);
    write_bytes(bad, other);
    CHECK_THROWS_WITH(load(),
                      Contains("byte 8") && Contains("format version 3, but this dptrain reads versions 1 and 2"));
  }
  SECTION("trailing bytes") {
    std::vector<char> longer = bytes;
    longer.insert(longer.end() - 4, {0, 0, 0, 0});
    fix_checksum(longer);
    write_bytes(bad, longer);
    CHECK_THROWS_WITH(load(), Contains("bytes after the header"));
  }
  SECTION("a missing file") {
    CHECK_THROWS_AS(dptrain::load_checkpoint(dir.file("missing.ckpt"), model, theta), dptrain::error);
  }
  CHECK(theta == before);
}

TEST_CASE("Checkpoint: another model, scalar type or optimizer is refused", "[checkpoint]") {
  const test::TempDir dir("checkpoint");
  const dptrain::SoftmaxRegression<float> softmax(4, 3);
  const Vector<float> theta = softmax.init_parameters(1);
  dptrain::TrainingState<float> state;
  state.plan = {.samples = 20, .batch_size = 5, .shuffle = true, .seed = 1};
  state.optimizer_state.assign(1, dptrain::AlignedBuffer<float>(softmax.num_parameters()));
  const std::string path = dir.file("softmax.ckpt");
  dptrain::save_checkpoint(path, softmax, theta, state);

  const dptrain::Mlp<float> mlp({4, 3});  // as many parameters, another architecture
  REQUIRE(mlp.num_parameters() == softmax.num_parameters());
  Vector<float> same_size = Vector<float>::Zero(mlp.num_parameters());
  CHECK_THROWS_WITH(dptrain::load_checkpoint(path, mlp, same_size),
                    Contains("a model \"softmax_regression 4-3\", but this model is \"mlp 4-3\""));
  CHECK(same_size.isZero());

  const dptrain::SoftmaxRegression<float> wider(5, 3);
  Vector<float> wider_theta(wider.num_parameters());
  CHECK_THROWS_WITH(dptrain::load_checkpoint(path, wider, wider_theta),
                    Contains("holds 15 parameters") && Contains("the model has 18"));
  const dptrain::SoftmaxRegression<double> in_double(4, 3);
  Vector<double> double_theta(in_double.num_parameters());
  CHECK_THROWS_WITH(dptrain::load_checkpoint(path, in_double, double_theta),
                    Contains("holds float parameters, but the model's scalar type is double"));
  Vector<float> short_theta(3);
  CHECK_THROWS_AS(dptrain::load_checkpoint(path, softmax, short_theta), dptrain::invalid_argument);

  // resume() refuses a state of another plan or optimizer.
  const auto data = test::cluster_data<float>(20, 4, 3, 1);
  Vector<float> loaded(softmax.num_parameters());
  const auto back = dptrain::load_checkpoint(path, softmax, loaded);
  dptrain::DataParallelTrainer other_batch({.threads = 2, .batch_size = 4, .epochs = 2, .seed = 1},
                                           dptrain::Momentum{.lr = 0.1});
  CHECK_THROWS_WITH(other_batch.resume(softmax, loaded, data, back),
                    Contains("dptrain::DataParallelTrainer::resume: the state was saved under another sampling plan") &&
                        Contains("batch_size 5") && Contains("batch_size 4"));
  dptrain::DataParallelTrainer adam({.threads = 2, .batch_size = 5, .epochs = 2, .seed = 1}, dptrain::Adam{.lr = 0.1});
  CHECK_THROWS_WITH(adam.resume(softmax, loaded, data, back),
                    Contains("1 optimizer buffers but this optimizer keeps 2"));
  dptrain::DataParallelTrainer momentum({.threads = 2, .batch_size = 5, .epochs = 2, .seed = 1},
                                        dptrain::Momentum{.lr = 0.1});
  CHECK(momentum.resume(softmax, loaded, data, back).steps == 8);
}

namespace {

// The run that made a state: `threads` threads, 8 steps of `total`, saved, then the rest resumed
// with `resumer` (a fresh trainer); returns the uninterrupted θ, the resumed θ and its report.
struct ResumedElsewhere {
  Vector<float> straight, resumed;
  dptrain::FitReport report;
};

template <class Saver, class Resumer>
ResumedElsewhere resume_elsewhere(Saver saver, Resumer resumer, dptrain::TrainingState<float>* saved = nullptr) {
  const test::TempDir dir("checkpoint");
  const auto data = test::cluster_data<float>(90, 5, 3, 4, 2.0);
  const dptrain::Mlp<float> model({5, 7, 3});
  ResumedElsewhere out{model.init_parameters(11), model.init_parameters(11), {}};
  saver(20).fit(model, out.straight, data);
  dptrain::Checkpoint checkpoint(model, dir.file("run.ckpt"), {.every_epochs = 0});
  saver(8).fit(model, out.resumed, data, checkpoint);
  const dptrain::TrainingState<float> state = dptrain::load_checkpoint(checkpoint.path(), model, out.resumed);
  if (saved != nullptr) *saved = state;
  out.report = resumer(20).resume(model, out.resumed, data, state);
  return out;
}

dptrain::TrainerOptions steps(Index threads, Index max_steps, bool same_workers = false) {
  return {.threads = threads,
          .batch_size = 16,
          .epochs = 1000,
          .max_steps = max_steps,
          .seed = 5,
          .same_workers_on_resume = same_workers};
}

}  // namespace

TEST_CASE("Checkpoint: a version-1 file still loads and resumes", "[checkpoint]") {
  // Written by dptrain with format version 1 (before December 2026): θ[i] = 0.5 − i/64, Adam's buffers k·i/8.
  const std::string path = std::filesystem::path(__FILE__).parent_path() / "data" / "checkpoint_version1.ckpt";
  const dptrain::SoftmaxRegression<float> model(4, 3);
  Vector<float> theta(model.num_parameters());
  const dptrain::TrainingState<float> state = dptrain::load_checkpoint(path, model, theta);
  for (Index i = 0; i < theta.size(); ++i) CHECK(theta[i] == 0.5F - static_cast<float>(i) / 64.0F);
  CHECK(state.step == 6);
  CHECK(state.epoch == 1);
  CHECK(state.epoch_step == 2);
  CHECK(state.plan == dptrain::SamplerPlan{.samples = 40, .batch_size = 10, .shuffle = true, .seed = 7});
  REQUIRE(state.optimizer_state.size() == 2);
  for (Index i = 0; i < theta.size(); ++i)
    CHECK(state.optimizer_state[1].data()[i] == 2.0F * static_cast<float>(i) / 8.0F);
  CHECK_FALSE(state.made_by.known());

  const auto data = test::cluster_data<float>(40, 4, 3, 1);
  dptrain::TrainerOptions options{.threads = 2, .batch_size = 10, .epochs = 3, .seed = 7};
  const dptrain::FitReport report =
      dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}).resume(model, theta, data, state);
  CHECK(report.steps == 6);
  REQUIRE(report.notes.size() == 1);
  CHECK_THAT(report.notes[0], Contains("does not record how it was made (a version-1 checkpoint"));
  options.same_workers_on_resume = true;
  CHECK_THROWS_WITH(dptrain::DataParallelTrainer(options, dptrain::Adam{.lr = 0.01}).resume(model, theta, data, state),
                    Contains("does not record the workers that made it"));
}

TEST_CASE("Checkpoint: a checkpoint records the run that made it", "[checkpoint]") {
  dptrain::TrainingState<float> saved;
  const dptrain::Momentum momentum{.lr = 0.05, .nesterov = true};
  const auto run =
      resume_elsewhere([&](Index n) { return dptrain::DataParallelTrainer(steps(2, n), momentum); },
                       [&](Index n) { return dptrain::DataParallelTrainer(steps(2, n), momentum); }, &saved);
  CHECK(run.straight == run.resumed);
  CHECK(run.report.notes.empty());  // nothing changed
  CHECK(saved.made_by.threads == 2);
  CHECK(saved.made_by.ranks == 1);
  CHECK(saved.made_by.shards == 0);
  CHECK(saved.made_by.synchronizer == dptrain::PolicySetup{"EveryStepSynchronizer", {}});
  CHECK(saved.made_by.optimizer ==
        dptrain::PolicySetup{
            "Momentum", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", 1}, {"weight_decay", 0}, {"decay_biases", 1}}});

  dptrain::TrainingState<float> backup;
  (void)resume_elsewhere(
      [](Index n) {
        return dptrain::DataParallelTrainer(steps(3, n), dptrain::Adam{}, dptrain::BackupWorkers{.chunks = 5});
      },
      [](Index n) {
        return dptrain::DataParallelTrainer(steps(3, n), dptrain::Adam{}, dptrain::BackupWorkers{.chunks = 5});
      },
      &backup);
  CHECK(backup.made_by.threads == 3);
  CHECK(backup.made_by.shards == 5);
  CHECK(backup.made_by.synchronizer == dptrain::PolicySetup{"BackupWorkers", {{"chunks", 5}, {"stall", 1}}});
  CHECK(backup.made_by.optimizer.name == "Adam");
}

TEST_CASE("Checkpoint: another optimizer type is refused, other settings are reported", "[checkpoint]") {
  const auto adam = [](Index n) { return dptrain::DataParallelTrainer(steps(2, n), dptrain::Adam{.lr = 0.01}); };
  SECTION("Adam saved, RMSProp resumed: both keep two buffers") {
    CHECK_THROWS_WITH(
        resume_elsewhere(adam, [](Index n) { return dptrain::DataParallelTrainer(steps(2, n), dptrain::RMSProp{}); }),
        Contains("the state was saved by a run with the optimizer Adam, but this trainer's optimizer is RMSProp"));
  }
  SECTION("a new learning rate and beta2") {
    const auto run = resume_elsewhere(adam, [](Index n) {
      return dptrain::DataParallelTrainer(steps(2, n), dptrain::Adam{.lr = 0.02, .beta2 = 0.99});
    });
    REQUIRE(run.report.notes.size() == 1);
    CHECK(run.report.notes[0] == "resumed with other optimizer settings: lr 0.01 -> 0.02, beta2 0.999 -> 0.99");
    CHECK(run.straight != run.resumed);
  }
  SECTION("another synchronizer") {
    const auto run = resume_elsewhere(adam, [](Index n) {
      return dptrain::DataParallelTrainer(steps(2, n), dptrain::Adam{.lr = 0.01}, dptrain::LocalSgd{.period = 2});
    });
    REQUIRE(run.report.notes.size() == 1);
    CHECK(run.report.notes[0] ==
          "resumed with another synchronizer: saved by EveryStepSynchronizer{}, resumed by LocalSgd{period 2, "
          "warmup_steps 0}");
  }
}

TEST_CASE("Checkpoint: resuming on another thread count is reported, or refused under same_workers_on_resume",
          "[checkpoint]") {
  const dptrain::Momentum momentum{.lr = 0.05};
  const auto saver = [&](Index n) { return dptrain::DataParallelTrainer(steps(2, n), momentum); };
  const auto run =
      resume_elsewhere(saver, [&](Index n) { return dptrain::DataParallelTrainer(steps(3, n), momentum); });
  REQUIRE(run.report.notes.size() == 1);
  CHECK(run.report.notes[0] ==
        "saved on 1 x 2 (ranks x threads), resumed on 1 x 3 (ranks x threads): theta is "
        "rounded differently from an uninterrupted run");
  CHECK(run.resumed.isApprox(run.straight, 1e-4F));
  CHECK_THROWS_WITH(
      resume_elsewhere(saver, [&](Index n) { return dptrain::DataParallelTrainer(steps(3, n, true), momentum); }),
      Contains("saved on 1 x 2 (ranks x threads), resumed on 1 x 3") && Contains("same_workers_on_resume"));
}

TEST_CASE("Checkpoint: with fixed shards a resume on another thread count is bitwise the uninterrupted run",
          "[checkpoint][backup][reproducible]") {
  const auto check = [](auto synchronizer) {
    const auto trainer = [=](Index threads, bool same_workers = false) {
      return [=](Index n) {
        return dptrain::DataParallelTrainer(steps(threads, n, same_workers), dptrain::Adam{.lr = 0.01}, synchronizer);
      };
    };
    for (const auto& [before, after] : {std::pair<Index, Index>{2, 3}, {4, 1}, {1, 2}}) {
      CAPTURE(before, after);
      const auto run = resume_elsewhere(trainer(before), trainer(after, true));
      CHECK(std::memcmp(run.straight.data(), run.resumed.data(), sizeof(float) * run.straight.size()) == 0);
      REQUIRE(run.report.notes.size() == 1);
      CHECK_THAT(run.report.notes[0], Contains("the same bits as an uninterrupted run (6 fixed shards)"));
    }
  };
  check(dptrain::BackupWorkers{.chunks = 6});
  check(dptrain::Reproducible{.shards = 6});
}
