// SPDX-License-Identifier: MIT
// read_libsvm: LIBSVM / SVMlight text files (`<label> <index>:<value> ...`) into a SparseDataset.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/sparse_dataset.hpp"

namespace dptrain {

/// How read_libsvm() turns the labels of a LIBSVM file into targets.
enum class LabelMode {
  as_is,       ///< the label itself (regression; for an integer Target the labels must be integers)
  binary,      ///< −1 or 0 → 0 and +1 → 1 (files use −1/+1 or 0/1, not both −1 and 0)
  multiclass,  ///< integer labels → 0 … k−1 in increasing order of the label (or LibsvmOptions::classes)
};

/**
 * @brief Options of read_libsvm(), set with designated initialisers.
 *
 * @code
 * dptrain::LibsvmOptions options{.features = 47236, .labels = dptrain::LabelMode::binary};
 * @endcode
 */
struct LibsvmOptions {
  /// The number of features d: indices must be ≤ d. 0: the largest index in the file.
  Index features = 0;
  /// How labels become targets.
  LabelMode labels = LabelMode::as_is;
  /// multiclass only: the labels to expect, class c being classes[c] (e.g. the `classes` read
  /// from the training file, so a test file maps alike). Empty: the file's distinct labels.
  std::vector<double> classes = {};
};

/**
 * @brief What read_libsvm() returns: the data set and the original label of each class.
 *
 * `classes[c]` is the label in the file of target c: for LabelMode::binary {−1 or 0, +1} (−1
 * if the file has neither −1 nor 0), for LabelMode::multiclass the k labels in class order, for
 * LabelMode::as_is empty.
 */
template <class Scalar, class Target>
struct LibsvmData {
  SparseDataset<Scalar, Target> data;
  std::vector<double> classes;
};

namespace detail::libsvm {

inline bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/// The next whitespace-separated token of `rest`, which is advanced past it; empty at the end.
inline std::string_view next_token(std::string_view& rest) noexcept {
  std::size_t begin = 0;
  while (begin < rest.size() && is_space(rest[begin])) ++begin;
  std::size_t end = begin;
  while (end < rest.size() && !is_space(rest[end])) ++end;
  const std::string_view token = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return token;
}

/// Parses the whole of `text` as a number (a leading '+' is allowed); false if it is not one.
template <class T>
bool parse_number(std::string_view text, T& value) noexcept {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  if (text.empty()) return false;
  const std::from_chars_result r = std::from_chars(text.data(), text.data() + text.size(), value);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

inline bool is_integer(double x) noexcept {
  return std::isfinite(x) && std::floor(x) == x && std::abs(x) < 9.0e15;
}

inline std::string number_text(double x) {
  char buffer[64];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, r.ptr);
}

}  // namespace detail::libsvm

/**
 * @brief Reads a LIBSVM / SVMlight text file into a sparse data set.
 *
 * Format, one sample per line: `<label> [qid:<n>] <index>:<value> <index>:<value> ... [# comment]`.
 * Indices are 1-based and strictly increasing; feature `index` becomes column `index − 1`. A
 * row may have no features. Blank lines and lines holding only a comment are skipped. A
 * `qid:<integer>` token directly after the label (SVMlight ranking files) is accepted and
 * ignored. Tokens are separated by spaces or tabs; `\r\n` line ends are accepted. Numbers may
 * start with `+` (`+1`). Stored zeros are kept as entries.
 *
 * The matrix is returned compressed, with d = options.features columns, or the largest index in
 * the file when that is 0.
 *
 * @tparam Scalar float or double: the feature values.
 * @tparam Target the target type: `Scalar` for LabelMode::as_is regression, `Label` for
 *         binary and multiclass.
 * @param path the file to read.
 * @param options d, the label mode and, for multiclass, the classes to expect.
 * @return the data set and the original label of each class (see LibsvmData).
 * @throws dptrain::parse_error naming the file, "line N" and what was expected: a non-numeric
 *         label or value, a non-finite value, a pair that is not `<index>:<value>`, an index
 *         ≤ 0, indices not strictly increasing, an index above options.features when it is
 *         given, a non-integer label in binary or multiclass mode (or as_is with an integer
 *         Target), a binary label other than −1, 0, +1 or both −1 and 0 in one file (more
 *         than two distinct labels), a multiclass label not in options.classes, or a file
 *         with no sample at all.
 * @throws dptrain::error if the file cannot be opened or read.
 * @throws dptrain::invalid_argument if options.features < 0, or options.classes has
 *         duplicates or non-integers.
 *
 * @code
 * auto train = dptrain::read_libsvm<float, dptrain::Label>("train.svm", {.labels = dptrain::LabelMode::multiclass});
 * auto test = dptrain::read_libsvm<float, dptrain::Label>(
 *     "test.svm", {.features = train.data.dim(), .labels = dptrain::LabelMode::multiclass, .classes = train.classes});
 * dptrain::SparseSoftmaxRegression<float> model(train.data.dim(), static_cast<dptrain::Index>(train.classes.size()));
 * @endcode
 */
template <class Scalar, class Target = Scalar>
[[nodiscard]] LibsvmData<Scalar, Target> read_libsvm(const std::string& path, const LibsvmOptions& options = {}) {
  static_assert(std::is_floating_point_v<Scalar>, "dptrain: read_libsvm: Scalar must be float or double");
  static_assert(std::is_arithmetic_v<Target>, "dptrain: read_libsvm: Target must be a number type (Scalar or Label)");
  using detail::libsvm::number_text;
  if (options.features < 0)
    throw invalid_argument("dptrain::read_libsvm: options.features must be >= 0, got " +
                           std::to_string(options.features));
  std::vector<double> given = options.classes;
  std::sort(given.begin(), given.end());
  for (std::size_t c = 0; c < given.size(); ++c)
    if (!detail::libsvm::is_integer(given[c]) || (c > 0 && given[c] == given[c - 1]))
      throw invalid_argument("dptrain::read_libsvm: options.classes must be distinct integers, got " +
                             number_text(given[c]) + (c > 0 && given[c] == given[c - 1] ? " twice" : ""));

  std::ifstream in(path);
  if (!in) throw error("dptrain::read_libsvm: cannot open " + path);

  constexpr bool integer_target = std::is_integral_v<Target>;
  const bool integer_labels = options.labels != LabelMode::as_is || integer_target;
  std::vector<Index> outer{0};
  std::vector<Index> inner;
  std::vector<Scalar> values;
  std::vector<double> labels;
  Index max_index = 0;
  // binary mode: the line where −1 and 0 were first seen (0: not yet), for the error message.
  long long line_minus_one = 0, line_zero = 0;

  std::string line;
  long long line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = "line " + std::to_string(line_no);
    std::string_view rest(line);
    if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
    const std::string_view label_text = detail::libsvm::next_token(rest);
    if (label_text.empty()) continue;  // blank or comment-only line

    double label = 0;
    if (!detail::libsvm::parse_number(label_text, label) || !std::isfinite(label))
      throw parse_error("dptrain::read_libsvm", path, where,
                        "expected a numeric label, found '" + std::string(label_text) + "'");
    if (integer_labels && !detail::libsvm::is_integer(label))
      throw parse_error("dptrain::read_libsvm", path, where,
                        "expected an integer label, found '" + std::string(label_text) + "'");
    if (options.labels == LabelMode::as_is &&  // before the cast, which would be undefined (or inf)
        (label < static_cast<double>(std::numeric_limits<Target>::lowest()) ||
         label > static_cast<double>(std::numeric_limits<Target>::max())))
      throw parse_error("dptrain::read_libsvm", path, where,
                        "label " + std::string(label_text) + " does not fit the target type");
    if (options.labels == LabelMode::binary) {
      if (label != -1 && label != 0 && label != 1)
        throw parse_error("dptrain::read_libsvm", path, where,
                          "expected a binary label -1, 0 or +1, found " + number_text(label) +
                              " (use LabelMode::multiclass for other labels)");
      if (label == -1 && line_minus_one == 0) line_minus_one = line_no;
      if (label == 0 && line_zero == 0) line_zero = line_no;
      if (line_minus_one != 0 && line_zero != 0)
        throw parse_error("dptrain::read_libsvm", path, where,
                          "more than two distinct labels in binary mode: label " + number_text(label) + ", but line " +
                              std::to_string(label == 0 ? line_minus_one : line_zero) + " has label " +
                              (label == 0 ? "-1" : "0") + " (expected -1/+1 or 0/1)");
    }
    if (options.labels == LabelMode::multiclass && !given.empty() &&
        !std::binary_search(given.begin(), given.end(), label))
      throw parse_error("dptrain::read_libsvm", path, where,
                        "label " + number_text(label) + " is not one of options.classes");
    labels.push_back(label);

    Index previous = 0;
    bool first = true;
    for (std::string_view token = detail::libsvm::next_token(rest); !token.empty();
         token = detail::libsvm::next_token(rest), first = false) {
      if (first && token.substr(0, 4) == "qid:") {
        long long qid = 0;
        if (!detail::libsvm::parse_number(token.substr(4), qid))
          throw parse_error("dptrain::read_libsvm", path, where,
                            "expected qid:<integer>, found '" + std::string(token) + "'");
        continue;
      }
      const std::size_t colon = token.find(':');
      if (colon == std::string_view::npos || colon == 0 || colon + 1 == token.size())
        throw parse_error("dptrain::read_libsvm", path, where,
                          "expected <index>:<value>, found '" + std::string(token) + "'");
      const std::string_view index_text = token.substr(0, colon), value_text = token.substr(colon + 1);
      long long index = 0;
      if (!detail::libsvm::parse_number(index_text, index))
        throw parse_error("dptrain::read_libsvm", path, where,
                          "expected an integer feature index in <index>:<value>, found '" + std::string(token) + "'");
      if (index <= 0)
        throw parse_error("dptrain::read_libsvm", path, where,
                          "feature index " + std::to_string(index) + " is not positive (indices start at 1)");
      if (index <= previous)
        throw parse_error("dptrain::read_libsvm", path, where,
                          "feature index " + std::to_string(index) + " after " + std::to_string(previous) +
                              ": indices must be strictly increasing");
      if (options.features > 0 && index > options.features)
        throw parse_error("dptrain::read_libsvm", path, where,
                          "feature index " + std::to_string(index) +
                              " is above options.features = " + std::to_string(options.features));
      double value = 0;
      if (!detail::libsvm::parse_number(value_text, value))
        throw parse_error("dptrain::read_libsvm", path, where,
                          "expected a numeric value in <index>:<value>, found '" + std::string(token) + "'");
      if (!std::isfinite(value) || !std::isfinite(static_cast<Scalar>(value)))
        throw parse_error("dptrain::read_libsvm", path, where,
                          "value of feature " + std::to_string(index) + " is not a finite " +
                              (sizeof(Scalar) == sizeof(float) ? "float" : "double") + ": '" + std::string(value_text) +
                              "'");
      previous = static_cast<Index>(index);
      inner.push_back(static_cast<Index>(index - 1));
      values.push_back(static_cast<Scalar>(value));
    }
    max_index = std::max(max_index, previous);
    outer.push_back(static_cast<Index>(inner.size()));
  }
  if (in.bad()) throw error("dptrain::read_libsvm: cannot read " + path);
  if (labels.empty())
    throw parse_error("dptrain::read_libsvm", path, "line " + std::to_string(line_no + 1),
                      "expected a sample '<label> <index>:<value> ...', the file has none");

  LibsvmData<Scalar, Target> result;
  const auto rows = static_cast<Index>(labels.size());
  const Index dim = options.features > 0 ? options.features : max_index;
  SparseRowMatrix<Scalar>& x = result.data.features;
  x.resize(rows, dim);
  x.resizeNonZeros(static_cast<Index>(inner.size()));
  std::copy(outer.begin(), outer.end(), x.outerIndexPtr());
  std::copy(inner.begin(), inner.end(), x.innerIndexPtr());
  std::copy(values.begin(), values.end(), x.valuePtr());

  Vector<Target>& y = result.data.targets;
  y.resize(rows);
  switch (options.labels) {
    case LabelMode::as_is:
      for (Index i = 0; i < rows; ++i) y[i] = static_cast<Target>(labels[static_cast<std::size_t>(i)]);
      break;
    case LabelMode::binary:
      for (Index i = 0; i < rows; ++i) y[i] = static_cast<Target>(labels[static_cast<std::size_t>(i)] > 0 ? 1 : 0);
      result.classes = {line_zero != 0 ? 0.0 : -1.0, 1.0};
      break;
    case LabelMode::multiclass: {
      result.classes = options.classes;
      if (result.classes.empty()) {
        result.classes = labels;
        std::sort(result.classes.begin(), result.classes.end());
        result.classes.erase(std::unique(result.classes.begin(), result.classes.end()), result.classes.end());
      }
      // (label, class) sorted by label: class c is result.classes[c], in the caller's order if given.
      std::vector<std::pair<double, Index>> lookup;
      for (std::size_t c = 0; c < result.classes.size(); ++c)
        lookup.emplace_back(result.classes[c], static_cast<Index>(c));
      std::sort(lookup.begin(), lookup.end());
      for (Index i = 0; i < rows; ++i) {
        const auto at = std::lower_bound(lookup.begin(), lookup.end(),
                                         std::pair<double, Index>(labels[static_cast<std::size_t>(i)], Index{0}));
        y[i] = static_cast<Target>(at->second);
      }
      break;
    }
  }
  return result;
}

}  // namespace dptrain
