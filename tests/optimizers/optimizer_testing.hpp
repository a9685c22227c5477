// SPDX-License-Identifier: MIT
// Test helpers for optimizers: build UpdateSlices over std::vectors, run steps, compare results.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/core/update_slice.hpp"

namespace dptrain_test {

using dptrain::Index;

/// Absolute tolerance for hand-computed values of order 1.
template <class Scalar>
struct UpdateTolerance;
template <>
struct UpdateTolerance<float> {
  static constexpr double abs = 1e-5;
};
template <>
struct UpdateTolerance<double> {
  static constexpr double abs = 1e-12;
};

/// θ and the optimizer's state vectors, owned.
template <class Scalar, int Slots>
struct OptimizerState {
  std::vector<Scalar> theta;
  std::array<std::vector<Scalar>, static_cast<std::size_t>(Slots)> state;
};

/// The UpdateSlice over elements [begin, begin + size) of θ, g and each state vector, with `biases`
/// (relative to begin).
template <class Scalar, int Slots, std::size_t... K>
dptrain::UpdateSlice<Scalar, Slots> make_slice(OptimizerState<Scalar, Slots>& s, const std::vector<Scalar>& grad,
                                               Index begin, Index size, std::index_sequence<K...> /*slots*/,
                                               std::span<const dptrain::IndexRange> biases = {}) {
  const auto b = static_cast<std::size_t>(begin);
  return {dptrain::VectorMap<Scalar>(s.theta.data() + b, size),
          dptrain::ConstVectorMap<Scalar>(grad.data() + b, size),
          {dptrain::VectorMap<Scalar>(s.state[K].data() + b, size)...},
          biases};
}

/// The parts of `biases` (ranges of θ) inside [begin, end), relative to begin, as the trainer
/// hands them to a slice; written here element by element, independently of the trainer's code.
inline std::vector<dptrain::IndexRange> biases_within(const std::vector<dptrain::IndexRange>& biases, Index begin,
                                                      Index end) {
  std::vector<dptrain::IndexRange> within;
  for (const dptrain::IndexRange& r : biases) {
    Index first = -1, count = 0;
    for (Index i = r.begin; i < r.end(); ++i) {
      if (i < begin || i >= end) continue;
      if (first < 0) first = i - begin;
      ++count;
    }
    if (count > 0) within.push_back({first, count});
  }
  return within;
}

template <class Scalar>
std::vector<Scalar> to_scalar(const std::vector<double>& values) {
  return std::vector<Scalar>(values.begin(), values.end());
}

/**
 * Runs grads.size() steps of `opt` from θ0 and zero state; step t (1-based) uses grads[t−1]
 * and StepInfo{t, lr} (lr = opt.lr unless given). `bounds` (0 = b_0 ≤ b_1 ≤ … = n) splits θ
 * into slices [b_i, b_{i+1}) updated one after another, as the trainer's threads do; empty:
 * one slice over all of θ. `biases` (ranges of θ) are handed to each slice as its part of them.
 */
template <class Scalar, dptrain::Optimizer O>
OptimizerState<Scalar, O::state_slots> run(const O& opt, const std::vector<double>& theta0,
                                           const std::vector<std::vector<double>>& grads,
                                           std::vector<Index> bounds = {}, double lr = -1.0,
                                           const std::vector<dptrain::IndexRange>& biases = {}) {
  constexpr int slots = O::state_slots;
  const auto n = static_cast<Index>(theta0.size());
  if (bounds.empty()) bounds = {0, n};
  OptimizerState<Scalar, slots> s;
  s.theta = to_scalar<Scalar>(theta0);
  for (auto& v : s.state) v.assign(theta0.size(), Scalar(0));
  Index step = 0;
  for (const std::vector<double>& g : grads) {
    ++step;
    const std::vector<Scalar> grad = to_scalar<Scalar>(g);
    const dptrain::StepInfo info{.step = step, .lr = lr > 0 ? lr : opt.lr};
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
      const std::vector<dptrain::IndexRange> within = biases_within(biases, bounds[i], bounds[i + 1]);
      opt.update(make_slice(s, grad, bounds[i], bounds[i + 1] - bounds[i],
                            std::make_index_sequence<static_cast<std::size_t>(slots)>{}, within),
                 info);
    }
  }
  return s;
}

/// θ0 = [1, −2, 0.5], the starting point of every hand-computed case.
inline const std::vector<double> hand_theta0{1.0, -2.0, 0.5};

/// g1, g2, g3: the gradients of steps 1, 2 and 3 of every hand-computed case.
inline const std::vector<std::vector<double>> hand_grads{{0.5, -1.0, 2.0}, {-0.5, 0.25, 1.0}, {1.0, 0.5, -0.25}};

/// The first `steps` of hand_grads.
inline std::vector<std::vector<double>> first_grads(std::size_t steps) {
  return {hand_grads.begin(), hand_grads.begin() + static_cast<std::ptrdiff_t>(steps)};
}

/// Checks every element of `got` against `expected` within UpdateTolerance<Scalar>.
template <class Scalar>
void check_close(const std::vector<Scalar>& got, std::initializer_list<double> expected) {
  REQUIRE(got.size() == expected.size());
  std::size_t i = 0;
  for (const double e : expected) {
    INFO("element " << i);
    CHECK_THAT(static_cast<double>(got[i]), Catch::Matchers::WithinAbs(e, UpdateTolerance<Scalar>::abs));
    ++i;
  }
}

/// Deterministic pseudo-random vector in [−scale, scale].
inline std::vector<double> random_vector(std::size_t n, unsigned seed, double scale = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

/// True when a and b hold the same bits (no NaNs are involved, so == is bitwise here).
template <class Scalar, int Slots>
bool same_bits(const OptimizerState<Scalar, Slots>& a, const OptimizerState<Scalar, Slots>& b) {
  if (a.theta != b.theta) return false;
  for (std::size_t k = 0; k < a.state.size(); ++k) {
    if (a.state[k] != b.state[k]) return false;
  }
  return true;
}

/**
 * Four steps on 37 pseudo-random parameters: the whole vector in one update must give
 * bitwise the same θ and state as the same steps applied slice by slice, for slicings
 * that cut through SIMD packets and that include empty slices (as the trainer's trailing
 * shards may be). θ starts small (|θ| ≤ 0.02, about the size of a step) so that a last-bit
 * difference in a step is not rounded away when it is subtracted from θ.
 */
template <class Scalar, dptrain::Optimizer O>
void check_slicing_invariance(const O& opt) {
  constexpr Index n = 37;
  const std::vector<double> theta0 = random_vector(n, 1, 0.02);
  const std::vector<std::vector<double>> grads{random_vector(n, 2), random_vector(n, 3), random_vector(n, 4),
                                               random_vector(n, 5)};
  const auto whole = run<Scalar>(opt, theta0, grads);
  const std::vector<std::vector<Index>> slicings{{0, 5, 17, n}, {0, 16, 32, n}, {0, 1, 36, n}, {0, 0, 19, n, n}};
  for (const std::vector<Index>& bounds : slicings) {
    INFO("slice boundaries " << ::Catch::Detail::stringify(bounds));
    CHECK(same_bits(run<Scalar>(opt, theta0, grads, bounds), whole));
  }
}

/**
 * With decay_biases = false, four steps on 37 pseudo-random parameters whose biases are [10, 14)
 * and [33, 37): every weight must take bitwise the steps of `opt` with decay_biases = true, and
 * every bias those of `opt` with weight_decay = 0 (the rules are elementwise), for slicings whose
 * boundaries fall inside a bias range, on its edges, around it, and for empty slices. Also checks
 * that the decay changes the biases at all, so that the comparison can fail.
 */
template <class Scalar, dptrain::Optimizer O>
void check_biases_not_decayed(O opt) {
  constexpr Index n = 37;
  const std::vector<dptrain::IndexRange> biases{{10, 4}, {33, 4}};
  const auto is_bias = [&](std::size_t i) {
    const auto k = static_cast<Index>(i);
    return (k >= 10 && k < 14) || k >= 33;
  };
  const std::vector<double> theta0 = random_vector(n, 6, 1.0);
  const std::vector<std::vector<double>> grads{random_vector(n, 7), random_vector(n, 8), random_vector(n, 9),
                                               random_vector(n, 10)};
  O decayed = opt, undecayed = opt;
  decayed.decay_biases = true;
  undecayed.weight_decay = 0.0;
  opt.decay_biases = false;
  REQUIRE(opt.weight_decay > 0.0);
  const auto all = run<Scalar>(decayed, theta0, grads);
  const auto none = run<Scalar>(undecayed, theta0, grads);
  for (std::size_t i = 0; i < theta0.size(); ++i)
    if (is_bias(i)) REQUIRE(all.theta[i] != none.theta[i]);  // else the check below could not fail
  // With decay_biases = true the biases are decayed as before, whatever the slice says.
  CHECK(same_bits(run<Scalar>(decayed, theta0, grads, {0, 12, n}, -1.0, biases), all));
  const std::vector<std::vector<Index>> slicings{{0, n},         {0, 5, 17, n},     {0, 10, 14, n},   {0, 12, n},
                                                 {0, 11, 13, n}, {0, 9, 15, 33, n}, {0, 0, 34, n, n}, {0, 14, 33, n}};
  for (const std::vector<Index>& bounds : slicings) {
    INFO("slice boundaries " << ::Catch::Detail::stringify(bounds));
    const auto got = run<Scalar>(opt, theta0, grads, bounds, -1.0, biases);
    for (std::size_t i = 0; i < theta0.size(); ++i) {
      INFO("element " << i << (is_bias(i) ? " (bias)" : " (weight)"));
      const auto& expected = is_bias(i) ? none : all;
      CHECK(got.theta[i] == expected.theta[i]);
      for (std::size_t k = 0; k < got.state.size(); ++k) CHECK(got.state[k][i] == expected.state[k][i]);
    }
  }
}

/// The message of the dptrain::invalid_argument that v.validate() throws, or "(no exception)".
template <class V>
std::string validation_error(const V& v) {
  try {
    v.validate();
  } catch (const dptrain::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace dptrain_test
