// SPDX-License-Identifier: MIT
// detail::scale_and_update: the trainer's blockwise update equals scaling the whole slice and one
// update call, bit for bit, for every optimizer, with biases across and at block boundaries.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"
#include "dptrain/detail/optimizer_support.hpp"
#include "dptrain/optimizers/adagrad.hpp"
#include "dptrain/optimizers/adam.hpp"
#include "dptrain/optimizers/adamw.hpp"
#include "dptrain/optimizers/momentum.hpp"
#include "dptrain/optimizers/rmsprop.hpp"
#include "dptrain/optimizers/sgd.hpp"
#include "optimizer_testing.hpp"

namespace {

using dptrain::Index;
using dptrain::IndexRange;
using dptrain_test::make_slice;
using dptrain_test::OptimizerState;
using dptrain_test::random_vector;
using dptrain_test::same_bits;
using dptrain_test::to_scalar;

template <class Scalar>
constexpr Index blockwise_block = dptrain::detail::update_block_bytes / static_cast<Index>(sizeof(Scalar));

// Three steps on a slice of 3 blocks and a bit, its biases across a block boundary, at its
// start and at its end, each step's gradient scaled by 1/3: once blockwise, once as the whole
// slice scaled and updated by one call.
template <class Scalar, class O>
void check_blockwise_matches_whole(const O& opt) {
  constexpr int slots = O::state_slots;
  constexpr Index block = blockwise_block<Scalar>;
  const Index n = 3 * block + 37;
  const std::vector<IndexRange> biases{{0, 5}, {block - 3, 10}, {2 * block, block}, {n - 4, 4}};
  const auto sequence = std::make_index_sequence<static_cast<std::size_t>(slots)>{};
  const Scalar scale = Scalar(1) / Scalar(3);

  OptimizerState<Scalar, slots> blockwise, whole;
  blockwise.theta = whole.theta = to_scalar<Scalar>(random_vector(static_cast<std::size_t>(n), 3));
  for (auto* s : {&blockwise, &whole})
    for (auto& v : s->state) v.assign(static_cast<std::size_t>(n), Scalar(0));
  for (Index step = 1; step <= 3; ++step) {
    const std::vector<Scalar> g = to_scalar<Scalar>(random_vector(static_cast<std::size_t>(n), 10 + unsigned(step)));
    const dptrain::StepInfo info{.step = step, .lr = opt.lr};

    std::vector<Scalar> g_blockwise = g;
    dptrain::detail::scale_and_update(opt, dptrain::VectorMap<Scalar>(g_blockwise.data(), n), scale,
                                      make_slice(blockwise, g_blockwise, 0, n, sequence, biases), info);

    std::vector<Scalar> g_whole = g;
    for (Scalar& x : g_whole) x *= scale;
    opt.update(make_slice(whole, g_whole, 0, n, sequence, biases), info);

    INFO("step " << step);
    CHECK(g_blockwise == g_whole);  // the gradient is scaled in place
    REQUIRE(same_bits(blockwise, whole));
  }
  CHECK(blockwise.theta != to_scalar<Scalar>(random_vector(static_cast<std::size_t>(n), 3)));
}

// Records the parts it is called on: where they lie in the slice, and their biases.
struct RecordingDescent {
  double lr = 0.1;
  static constexpr int state_slots = 0;
  struct Call {
    Index begin, size;
    std::vector<IndexRange> biases;
  };
  std::vector<Call>* calls = nullptr;
  const float* first = nullptr;  // the slice's first θ element
  template <class Scalar>
  void update(const dptrain::UpdateSlice<Scalar, 0>& s, const dptrain::StepInfo& /*info*/) const {
    calls->push_back({static_cast<Index>(s.theta.data() - first), s.theta.size(), {s.biases.begin(), s.biases.end()}});
  }
};

}  // namespace

TEMPLATE_TEST_CASE("scale_and_update: blockwise equals the whole slice scaled and updated once, bit for bit",
                   "[optimizers]", float, double) {
  using Scalar = TestType;
  SECTION("Sgd, weight decay sparing the biases") {
    check_blockwise_matches_whole<Scalar>(dptrain::Sgd{.lr = 0.1, .weight_decay = 0.01, .decay_biases = false});
  }
  SECTION("Momentum, Nesterov") {
    check_blockwise_matches_whole<Scalar>(dptrain::Momentum{.lr = 0.05, .momentum = 0.9, .nesterov = true});
  }
  SECTION("Momentum, weight decay sparing the biases") {
    check_blockwise_matches_whole<Scalar>(
        dptrain::Momentum{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .decay_biases = false});
  }
  SECTION("Adam, weight decay sparing the biases") {
    check_blockwise_matches_whole<Scalar>(dptrain::Adam{.lr = 0.01, .weight_decay = 0.01, .decay_biases = false});
  }
  SECTION("AdamW, decay sparing the biases") {
    check_blockwise_matches_whole<Scalar>(dptrain::AdamW{.lr = 0.01, .weight_decay = 0.05, .decay_biases = false});
  }
  SECTION("RMSProp with momentum, weight decay sparing the biases") {
    check_blockwise_matches_whole<Scalar>(
        dptrain::RMSProp{.lr = 0.01, .weight_decay = 0.01, .momentum = 0.9, .decay_biases = false});
  }
  SECTION("AdaGrad, weight decay sparing the biases") {
    check_blockwise_matches_whole<Scalar>(dptrain::AdaGrad{.lr = 0.1, .weight_decay = 0.01, .decay_biases = false});
  }
}

TEST_CASE("scale_and_update: parts of at most a block, in order, each all bias or none", "[optimizers]") {
  constexpr Index block = blockwise_block<float>;
  const Index n = 2 * block + 100;
  // A bias across the first block boundary, one that ends where the second block ends, and one
  // that ends the slice.
  const std::vector<IndexRange> biases{{block - 8, 16}, {2 * block - 4, 4}, {n - 10, 10}};
  std::vector<float> theta(static_cast<std::size_t>(n), 1.0F), g(static_cast<std::size_t>(n), 2.0F);
  std::vector<RecordingDescent::Call> calls;
  const RecordingDescent recorder{.calls = &calls, .first = theta.data()};
  dptrain::detail::scale_and_update(
      recorder, dptrain::VectorMap<float>(g.data(), n), 0.5F,
      dptrain::UpdateSlice<float, 0>{
          dptrain::VectorMap<float>(theta.data(), n), dptrain::ConstVectorMap<float>(g.data(), n), {}, biases},
      dptrain::StepInfo{});

  const std::vector<std::pair<Index, Index>> expected{
      {0, block - 8},     {block - 8, 8},  {block, 8},  {block + 8, block - 12},
      {2 * block - 4, 4}, {2 * block, 90}, {n - 10, 10}};
  REQUIRE(calls.size() == expected.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    INFO("part " << i);
    CHECK(calls[i].begin == expected[i].first);
    CHECK(calls[i].size == expected[i].second);
    const bool in_bias = i == 1 || i == 2 || i == 4 || i == 6;
    if (in_bias) {
      REQUIRE(calls[i].biases.size() == 1);
      CHECK(calls[i].biases[0].begin == 0);
      CHECK(calls[i].biases[0].size == calls[i].size);
    } else {
      CHECK(calls[i].biases.empty());
    }
  }
  CHECK(std::all_of(g.begin(), g.end(), [](float x) { return x == 1.0F; }));  // scaled once each
}
