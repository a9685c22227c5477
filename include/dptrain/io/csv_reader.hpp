// SPDX-License-Identifier: MIT
// read_csv and CsvOptions: a numeric CSV file, plain or gzipped, into a DenseDataset, one column chosen as the target.
#pragma once

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/data/huge_pages.hpp"
#include "dptrain/detail/gzip_input.hpp"

namespace dptrain {

/**
 * @brief Options of read_csv(): the header, the target (label) column, the delimiter and the
 * lines to skip before the table.
 *
 * The label column is chosen by `label_column` (a header name) or else by `label_index`
 * (0-based; −1, the default, is the last column). Every other column is a feature, in file order.
 *
 * @code
 * dptrain::CsvOptions options{.label_column = "species"};
 * dptrain::CsvOptions no_header{.header = false, .label_index = 0, .delimiter = ';'};
 * // scikit-learn's iris.csv: a line of counts ("150,4,setosa,versicolor,virginica"), then rows
 * dptrain::CsvOptions sklearn{.header = false, .skip_lines = 1};
 * @endcode
 */
struct CsvOptions {
  bool header = true;          ///< the first non-blank line after the skipped ones names the columns
  std::string label_column{};  ///< the label column's name in the header; empty: use label_index
  Index label_index = -1;      ///< 0-based label column when label_column is empty; −1: the last column
  char delimiter = ',';        ///< field separator
  Index skip_lines = 0;        ///< lines dropped unread at the start of the file (blank or not), before the header
};

namespace detail::csv {

[[nodiscard]] inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Trims surrounding blanks and one pair of surrounding double quotes (as pandas and R write
// header names); quoted fields cannot contain the delimiter.
[[nodiscard]] inline std::string_view clean(std::string_view s) noexcept {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = trim(s.substr(1, s.size() - 2));
  return s;
}

inline void split(std::string_view line, char delimiter, std::vector<std::string_view>& fields) {
  fields.clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = line.find(delimiter, start);
    if (end == std::string_view::npos) {
      fields.push_back(clean(line.substr(start)));
      return;
    }
    fields.push_back(clean(line.substr(start, end - start)));
    start = end + 1;
  }
}

// Text from the file as an error message shows it: in double quotes, printable ASCII as it is,
// every other byte escaped as in C ("\t", "\x00", "\xff"; and "\\", "\"") so that a binary or
// mis-encoded file cannot put control bytes into a terminal or a log; cut to 40 characters.
[[nodiscard]] inline std::string quote(std::string_view text) {
  constexpr std::size_t longest = 40;  // characters between the quotes, escapes included
  constexpr char hex_digits[] = "0123456789abcdef";
  std::string quoted = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    std::string escaped;
    if (c == '\t')
      escaped = "\\t";
    else if (c == '\n')
      escaped = "\\n";
    else if (c == '\r')
      escaped = "\\r";
    else if (c == '"' || c == '\\')
      escaped = {'\\', c};
    else if (byte < 0x20 || byte > 0x7e)
      escaped = {'\\', 'x', hex_digits[byte >> 4], hex_digits[byte & 15U]};
    else
      escaped = {c};
    if (quoted.size() - 1 + escaped.size() > longest) {
      quoted += "...";
      break;
    }
    quoted += escaped;
  }
  return quoted + "\"";
}

// The byte-order mark that Excel and Notepad put before UTF-8 text.
inline constexpr std::string_view utf8_bom = "\xef\xbb\xbf";

// Parses a whole field as a finite floating-point number; on failure returns what was expected.
template <class T>
[[nodiscard]] std::string parse_real(std::string_view field, T& value) {
  std::string_view digits = field;
  if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);
  const char* const end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    // Too small or too large for T: a value within double's range is rounded (to 0 or ±inf).
    double wide = 0;
    const auto [wide_ptr, wide_ec] = std::from_chars(digits.data(), end, wide, std::chars_format::general);
    if (wide_ec == std::errc() && wide_ptr == end) {
      value = static_cast<T>(wide);
      ec = std::errc();
    }
  }
  if (ptr != end || ec == std::errc::invalid_argument) return "expected a number, found " + quote(field);
  if (ec != std::errc() || !std::isfinite(value))
    return "expected a finite number, found " + quote(field) + " (out of range or not finite)";
  return {};
}

// A header name that reads as a number means the line is data (or a line of counts), not names.
[[nodiscard]] inline bool is_number(std::string_view field) {
  double value = 0;
  return parse_real(field, value).empty();
}

// Parses a whole field as an integer that fits T.
template <class T>
[[nodiscard]] std::string parse_integer(std::string_view field, T& value) {
  std::string_view digits = field;
  if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);
  long long wide = 0;
  const char* const end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, wide);
  if (ptr != end || ec == std::errc::invalid_argument) return "expected an integer label, found " + quote(field);
  if (ec != std::errc() || wide < static_cast<long long>(std::numeric_limits<T>::min()) ||
      wide > static_cast<long long>(std::numeric_limits<T>::max()))
    return "expected an integer label, found " + quote(field) + " (out of range)";
  value = static_cast<T>(wide);
  return {};
}

}  // namespace detail::csv

/**
 * @brief Reads a CSV file of numbers, plain or gzipped, into a data set: one sample per line, one
 * column as the target, every other column a feature (in file order).
 *
 * A file that starts with the gzip magic bytes 1f 8b is decompressed on the fly by zlib, whatever
 * its name; any other file is read as it is. A UTF-8 byte-order mark at the start is dropped.
 * The first `options.skip_lines` lines are dropped unread (scikit-learn's CSV files start with a
 * line of counts); with `options.header` the next non-blank line names the columns, and a header
 * that holds a number is rejected, so that a line of counts or of data is never taken for names.
 * Fields are separated by `options.delimiter`; surrounding spaces and tabs and one pair of
 * surrounding double quotes are stripped (a quoted field cannot contain the delimiter). Blank
 * lines are skipped; `\r\n` line ends are accepted. Features (and a floating-point target) are
 * parsed with std::from_chars: decimal or scientific notation, an optional sign; `inf` and `nan`
 * are rejected, and so are empty fields (there are no missing values). An integral `Target`
 * (e.g. `Label`) requires integer text such as `3` (not `3.0`). Lines and columns in messages
 * count from 1, skipped and blank lines included; file content they quote is escaped ("\x00").
 *
 * @tparam Scalar float or double: the feature type.
 * @tparam Target the target type: `Scalar` (regression, the default) or an integer type such as
 *         `dptrain::Label` (classification).
 * @param path    the file's path.
 * @param options header, label column (by name or index), delimiter and lines to skip.
 * @return the features (rows × (columns − 1)) and the targets.
 * @throws dptrain::invalid_argument when `label_column` is set with `header = false`, when both
 *         `label_column` and a `label_index` other than −1 are set, or `label_index` < −1, or
 *         `skip_lines` < 0.
 * @throws dptrain::parse_error naming the file and "line N" or "line N, column M" when the file
 *         cannot be opened, is empty (no header or no data rows), has fewer than 2 columns, has a
 *         number in its header, names no column `label_column` (or names it twice), has fewer
 *         columns than `label_index` + 1, has a row with a different number of fields than the
 *         first line (ragged), or a field that is not a (finite) number, or not an integer for an
 *         integral `Target`; naming "byte N" when the file cannot be read or its gzip data is
 *         corrupt or cut short. When the first line of the table looks like a line to skip, the
 *         message suggests `skip_lines`.
 *
 * @code
 * // sepal_length,sepal_width,petal_length,petal_width,species
 * // 5.1,3.5,1.4,0.2,0
 * dptrain::DenseDataset<double, dptrain::Label> iris =
 *     dptrain::read_csv<double, dptrain::Label>("iris.csv", {.label_column = "species"});
 * // scikit-learn's boston_house_prices.csv: a line of counts, a header, then rows
 * dptrain::DenseDataset<double> boston =
 *     dptrain::read_csv<double>("boston_house_prices.csv", {.label_column = "MEDV", .skip_lines = 1});
 * @endcode
 */
template <class Scalar, class Target = Scalar>
[[nodiscard]] DenseDataset<Scalar, Target> read_csv(const std::string& path, const CsvOptions& options = {}) {
  static_assert(std::is_floating_point_v<Scalar>, "dptrain: read_csv needs a floating-point Scalar");
  static_assert(std::is_floating_point_v<Target> || (std::is_integral_v<Target> && !std::is_same_v<Target, bool>),
                "dptrain: read_csv needs a floating-point or integer Target");
  if (!options.label_column.empty() && !options.header)
    throw invalid_argument("dptrain::read_csv: CsvOptions::label_column needs header = true");
  if (!options.label_column.empty() && options.label_index != -1)
    throw invalid_argument("dptrain::read_csv: set CsvOptions::label_column or label_index, not both");
  if (options.label_index < -1)
    throw invalid_argument(
        "dptrain::read_csv: CsvOptions::label_index must be -1 (the last column) or a column index, got " +
        std::to_string(options.label_index));
  if (options.skip_lines < 0)
    throw invalid_argument("dptrain::read_csv: CsvOptions::skip_lines must be at least 0, got " +
                           std::to_string(options.skip_lines));

  const std::string text = detail::gzip::Input(path, "dptrain::read_csv", "line 1").read_all();
  std::string_view all(text);
  if (all.starts_with(detail::csv::utf8_bom)) all.remove_prefix(detail::csv::utf8_bom.size());
  std::vector<std::string_view> fields;
  std::vector<Scalar> features;
  std::vector<Target> targets;
  Index columns = -1, label = -1, line_number = 0;
  Index first_line = 0, table_lines = 0;  // the table's first line (it fixed the columns) and its lines so far
  const auto location = [&](std::size_t column) {
    return "line " + std::to_string(line_number) + ", column " + std::to_string(column + 1);
  };
  // A table whose first line does not fit is most often a file that starts with other lines
  // (scikit-learn's line of counts, a title): say how to drop them.
  const auto skip_hint = [&] {
    return "if line " + std::to_string(first_line) +
           " is not part of the table, skip it with CsvOptions::skip_lines = " + std::to_string(first_line);
  };

  bool header_pending = options.header;
  std::size_t pos = 0;
  while (pos < all.size()) {
    std::size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (line_number <= options.skip_lines || detail::csv::trim(line).empty()) continue;
    ++table_lines;
    detail::csv::split(line, options.delimiter, fields);
    const auto found = static_cast<Index>(fields.size());

    if (columns < 0) {  // the first non-blank line fixes the number of columns and the label
      columns = found;
      first_line = line_number;
      if (columns < 2)
        throw parse_error("dptrain::read_csv", path, "line " + std::to_string(line_number),
                          "expected at least 2 fields (features and a label), found 1; " + skip_hint());
      if (options.header) {
        for (Index c = 0; c < columns; ++c) {
          const std::string_view name = fields[static_cast<std::size_t>(c)];
          if (!detail::csv::is_number(name)) continue;
          throw parse_error("dptrain::read_csv", path, location(static_cast<std::size_t>(c)),
                            "expected a header of column names, found the number " + detail::csv::quote(name) +
                                "; if the file has no header, set CsvOptions::header = false; " + skip_hint() +
                                " (scikit-learn's CSV files start with a line of counts)");
        }
      }
      if (!options.label_column.empty()) {
        for (Index c = 0; c < columns; ++c) {
          if (fields[static_cast<std::size_t>(c)] != options.label_column) continue;
          if (label >= 0)
            throw parse_error(
                "dptrain::read_csv", path, location(static_cast<std::size_t>(c)),
                "the label column name " + detail::csv::quote(options.label_column) + " appears twice in the header");
          label = c;
        }
        if (label < 0) {
          constexpr std::size_t listed = 20;  // names shown; a binary "header" can hold thousands
          std::string names;
          for (std::size_t c = 0; c < fields.size() && c < listed; ++c)
            names += (c == 0 ? "" : ", ") + detail::csv::quote(fields[c]);
          if (fields.size() > listed) names += " and " + std::to_string(fields.size() - listed) + " more";
          throw parse_error(
              "dptrain::read_csv", path, "line " + std::to_string(line_number),
              "expected a column named " + detail::csv::quote(options.label_column) + " in the header, found " + names);
        }
      } else if (options.label_index == -1) {
        label = columns - 1;
      } else if (options.label_index >= columns) {
        throw parse_error("dptrain::read_csv", path, "line " + std::to_string(line_number),
                          "expected at least " + std::to_string(options.label_index + 1) + " columns for label_index " +
                              std::to_string(options.label_index) + ", found " + std::to_string(columns));
      } else {
        label = options.label_index;
      }
    } else if (found != columns) {
      // Only the table's second line can show that its first line is the odd one out.
      throw parse_error("dptrain::read_csv", path, "line " + std::to_string(line_number),
                        "expected " + std::to_string(columns) + " fields, found " + std::to_string(found) + " (line " +
                            std::to_string(first_line) + " has " + std::to_string(columns) + ")" +
                            (table_lines == 2 ? "; " + skip_hint() : std::string()));
    }
    if (header_pending) {
      header_pending = false;
      continue;
    }

    for (Index c = 0; c < columns; ++c) {
      const std::string_view field = fields[static_cast<std::size_t>(c)];
      std::string problem;
      if (c == label) {
        Target value{};
        if constexpr (std::is_integral_v<Target>)
          problem = detail::csv::parse_integer(field, value);
        else
          problem = detail::csv::parse_real(field, value);
        targets.push_back(value);
      } else {
        Scalar value{};
        problem = detail::csv::parse_real(field, value);
        features.push_back(value);
      }
      if (!problem.empty()) {
        // A bad field on the table's first line is often a header read as data, or a line to skip.
        if (!options.header && table_lines == 1)
          problem += "; if line " + std::to_string(line_number) +
                     " names the columns, set CsvOptions::header = true; " + skip_hint();
        throw parse_error("dptrain::read_csv", path, location(static_cast<std::size_t>(c)), problem);
      }
    }
  }

  if (columns < 0) {
    if (options.skip_lines > 0)
      throw parse_error("dptrain::read_csv", path, "line " + std::to_string(line_number + 1),
                        "expected " + std::string(options.header ? "a header line and data rows" : "data rows") +
                            " after line " + std::to_string(options.skip_lines) +
                            " (CsvOptions::skip_lines = " + std::to_string(options.skip_lines) + "), found none");
    throw parse_error(
        "dptrain::read_csv", path, "line 1",
        options.header ? "empty file: expected a header line and data rows" : "empty file: expected data rows");
  }
  if (targets.empty())
    throw parse_error("dptrain::read_csv", path, "line " + std::to_string(line_number + 1),
                      "expected data rows after the header, found none");

  const auto rows = static_cast<Index>(targets.size());
  DenseDataset<Scalar, Target> data{huge_page_matrix<Scalar>(rows, columns - 1),
                                    Eigen::Map<const Vector<Target>>(targets.data(), rows)};
  data.features = Eigen::Map<const RowMatrix<Scalar>>(features.data(), rows, columns - 1);
  return data;
}

}  // namespace dptrain
