// SPDX-License-Identifier: MIT
// Shared by the MPI benchmark programs (mpi_allreduce, mpi_overlap): their arguments and the
// median of the rounds. Google Benchmark cannot time across ranks, so these run their own loops.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

/// A positive whole number written as 1000 or 1e3, the value of `option` of `program`.
/// @throws std::invalid_argument naming the program, the option and the text otherwise.
inline long long count_argument(const std::string& program, const std::string& option, const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value >= 1) || value > std::numeric_limits<int>::max() ||
      value != static_cast<double>(static_cast<long long>(value)))
    throw std::invalid_argument(program + ": " + option + " takes a whole number from 1 to 2^31-1, got '" + text + "'");
  return static_cast<long long>(value);
}

/// "n1,n2,…": count_argument() of each.
inline std::vector<long long> count_list(const std::string& program, const std::string& option,
                                         const std::string& text) {
  std::vector<long long> values;
  for (std::size_t begin = 0; begin <= text.size();) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    values.push_back(count_argument(program, option, text.substr(begin, end - begin)));
    begin = end + 1;
  }
  return values;
}

/// The median (the mean of the middle two of an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t half = values.size() / 2;
  return values.size() % 2 == 1 ? values[half] : (values[half - 1] + values[half]) / 2;
}

}  // namespace bench
