// SPDX-License-Identifier: MIT
// libFuzzer target for read_libsvm, over its options (label mode, feature count, classes, types).
//
// Input layout: byte 0 holds flags, byte 1 the feature count, byte 2 a class mask; the file follows.
//   bits 0-1  LabelMode: as_is, binary, multiclass, multiclass
//   bit 2     Scalar = double rather than float
//   bit 3     Target = Label rather than Scalar
//   bit 4     options.features = byte 1 (255: -1, an invalid_argument)
//   bit 5     options.classes = the labels {3, -1, 1, 0, 10, 2, 7, 4} whose bit is set in byte 2,
//             in that order (not sorted, so the caller's class order is exercised)
//   bit 6     append 0.5 to options.classes (not an integer: an invalid_argument)
//   bit 7     append options.classes' first label again (a duplicate: an invalid_argument)
// A read that returns must give one row per line holding a label, as many stored entries in each
// row as that line has <index>:<value> pairs, compressed CSR with strictly increasing columns
// below dim(), finite values and targets, and targets and classes that match the label mode.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dptrain/io/libsvm_reader.hpp"
#include "fuzz_support.hpp"

namespace {

using dptrain::Index;
using dptrain::LabelMode;
using fuzz::Outcome;

[[nodiscard]] bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// The number of <index>:<value> pairs on each line that holds a sample, counted independently
// of the reader: tokens before any '#', less the label and a qid:<n> right after it.
[[nodiscard]] std::vector<Index> count_pairs(std::string_view text) {
  std::vector<Index> pairs;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    line = line.substr(0, line.find('#'));
    Index tokens = 0;
    bool qid = false;
    for (std::size_t i = 0; i < line.size();) {
      if (is_space(line[i])) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < line.size() && !is_space(line[j])) ++j;
      if (tokens == 1 && line.substr(i, 4) == "qid:") qid = true;
      ++tokens;
      i = j;
    }
    if (tokens > 0) pairs.push_back(tokens - 1 - (qid ? 1 : 0));
  }
  return pairs;
}

template <class Scalar, class Target>
void fuzz_one(const std::string& path, std::string_view text, const dptrain::LibsvmOptions& options) {
  std::optional<dptrain::LibsvmData<Scalar, Target>> result;
  const Outcome outcome =
      fuzz::run_read([&] { result.emplace(dptrain::read_libsvm<Scalar, Target>(path, options)); }, {path});

  std::vector<double> given = options.classes;
  std::sort(given.begin(), given.end());
  bool bad_classes = false;
  for (std::size_t c = 0; c < given.size(); ++c)
    bad_classes = bad_classes || given[c] != std::floor(given[c]) || (c > 0 && given[c] == given[c - 1]);
  if (options.features < 0 || bad_classes) {
    DPTRAIN_FUZZ_CHECK_OUTCOME(outcome, Outcome::invalid_argument);
    return;
  }
  // dptrain::error without parse_error means the file could not be opened or read: never here.
  DPTRAIN_FUZZ_CHECK_MSG(outcome == Outcome::returned || outcome == Outcome::parse_error, fuzz::name(outcome));
  if (!result) return;

  const auto& x = result->data.features;
  const auto& y = result->data.targets;
  const std::vector<Index> pairs = count_pairs(text);
  const auto rows = static_cast<Index>(pairs.size());
  DPTRAIN_FUZZ_CHECK(rows >= 1);
  DPTRAIN_FUZZ_CHECK(x.rows() == rows);
  DPTRAIN_FUZZ_CHECK(y.size() == rows);
  DPTRAIN_FUZZ_CHECK(x.isCompressed());
  if (options.features > 0) DPTRAIN_FUZZ_CHECK(x.cols() == options.features);
  DPTRAIN_FUZZ_CHECK(x.outerIndexPtr()[0] == 0);
  DPTRAIN_FUZZ_CHECK(x.outerIndexPtr()[rows] == x.nonZeros());
  Index widest = 0;  // the largest column + 1
  for (Index i = 0; i < rows; ++i) {
    const Index begin = x.outerIndexPtr()[i], end = x.outerIndexPtr()[i + 1];
    DPTRAIN_FUZZ_CHECK(end - begin == pairs[static_cast<std::size_t>(i)]);
    for (Index k = begin; k < end; ++k) {
      const Index column = x.innerIndexPtr()[k];
      DPTRAIN_FUZZ_CHECK(column >= 0 && column < x.cols());
      DPTRAIN_FUZZ_CHECK(k == begin || column > x.innerIndexPtr()[k - 1]);
      DPTRAIN_FUZZ_CHECK(std::isfinite(x.valuePtr()[k]));
      widest = std::max(widest, column + 1);
    }
  }
  if (options.features == 0) DPTRAIN_FUZZ_CHECK(x.cols() == widest);
  for (Index i = 0; i < rows; ++i)
    DPTRAIN_FUZZ_CHECK_MSG(fuzz::finite(y[i]), "target " + std::to_string(static_cast<double>(y[i])) + " of row " +
                                                   std::to_string(i + 1) + " is not finite");

  const std::vector<double>& classes = result->classes;
  switch (options.labels) {
    case LabelMode::as_is:
      DPTRAIN_FUZZ_CHECK(classes.empty());
      break;
    case LabelMode::binary:
      DPTRAIN_FUZZ_CHECK(classes.size() == 2 && (classes[0] == -1 || classes[0] == 0) && classes[1] == 1);
      for (Index i = 0; i < rows; ++i) DPTRAIN_FUZZ_CHECK(y[i] == Target(0) || y[i] == Target(1));
      break;
    case LabelMode::multiclass:
      if (options.classes.empty()) {
        DPTRAIN_FUZZ_CHECK(!classes.empty() &&
                           std::adjacent_find(classes.begin(), classes.end(),
                                              [](double a, double b) { return a >= b; }) == classes.end());
      } else {
        DPTRAIN_FUZZ_CHECK(classes == options.classes);
      }
      for (Index i = 0; i < rows; ++i)
        DPTRAIN_FUZZ_CHECK(y[i] >= Target(0) && y[i] < static_cast<Target>(classes.size()) &&
                           static_cast<double>(y[i]) == std::floor(static_cast<double>(y[i])));
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const unsigned flags = data[0];
  dptrain::LibsvmOptions options;
  constexpr LabelMode modes[] = {LabelMode::as_is, LabelMode::binary, LabelMode::multiclass, LabelMode::multiclass};
  options.labels = modes[flags & 3U];
  if ((flags & 16U) != 0) options.features = data[1] == 255 ? -1 : static_cast<Index>(data[1]);
  if ((flags & 32U) != 0) {
    constexpr double labels[] = {3, -1, 1, 0, 10, 2, 7, 4};
    for (unsigned bit = 0; bit < 8; ++bit)
      if (((data[2] >> bit) & 1U) != 0) options.classes.push_back(labels[bit]);
  }
  if ((flags & 64U) != 0) options.classes.push_back(0.5);
  if ((flags & 128U) != 0 && !options.classes.empty()) options.classes.push_back(options.classes.front());

  static fuzz::InputFile file("libsvm");
  const std::string& path = file.write(data + 3, size - 3);
  const std::string_view text(reinterpret_cast<const char*>(data + 3), size - 3);
  const bool wide = (flags & 4U) != 0, labels = (flags & 8U) != 0;
  if (wide && labels)
    fuzz_one<double, dptrain::Label>(path, text, options);
  else if (wide)
    fuzz_one<double, double>(path, text, options);
  else if (labels)
    fuzz_one<float, dptrain::Label>(path, text, options);
  else
    fuzz_one<float, float>(path, text, options);
  return 0;
}
