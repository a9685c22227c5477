// SPDX-License-Identifier: MIT
// libFuzzer target for read_csv, over its options (header, label column by index or name, delimiter,
// lines to skip, types), on plain and gzipped files.
//
// Input layout: byte 0 holds flags, byte 1 a parameter, byte 2 a delimiter, byte 3 the lines to
// skip; the file follows.
//   bit 0     header = true
//   bits 1-2  0: the default label column (the last); 1: label_index = parameter % 16 (255: -2,
//             an invalid_argument); 2: label_column = the next (parameter & 15) bytes of the
//             input; 3: as 2, and label_index = (parameter >> 4) - 1 (a contradiction unless -1)
//   bits 3-4  delimiter ',', ';', '\t', or byte 2
//   bits 5-7  <Scalar, Target>: <float, float>, <double, double>, <float, double>, <double, float>,
//             <float, Label>, <double, Label>, <float, int16_t>, <double, long long>
//   byte 3    skip_lines = byte % 4 (255: -1, an invalid_argument)
// A read that returns must give one row per non-blank line after the skipped lines and the
// header, one column per field of the first such line but the label's, and only finite values;
// the text is the file as zlib reads it (decompressed when it starts with the gzip magic), less
// a UTF-8 byte-order mark. A parse_error's message must be printable ASCII, whatever the bytes.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "dptrain/io/csv_reader.hpp"
#include "fuzz_support.hpp"

namespace {

using dptrain::Index;
using fuzz::Outcome;

// The shape a successful read must have, counted here independently of the reader.
struct Shape {
  Index nonblank_lines = 0;  // after the skipped lines
  Index fields = 0;          // of the first of them
};

[[nodiscard]] bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

[[nodiscard]] Shape count_shape(std::string_view text, char delimiter, Index skip_lines) {
  Shape shape;
  Index line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (++line_number <= skip_lines || blank(line)) continue;
    if (shape.nonblank_lines++ == 0)
      shape.fields = static_cast<Index>(std::count(line.begin(), line.end(), delimiter)) + 1;
  }
  return shape;
}

// The file's text as zlib reads it (the reader's decompression is zlib's, not under test here);
// nothing when zlib reports an error, a gzip stream cut short included.
[[nodiscard]] std::optional<std::string> zlib_text(const std::string& path) {
  const gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return std::nullopt;
  std::string text;
  char block[1 << 12];
  int got = 0;
  while ((got = gzread(file, block, sizeof block)) > 0) text.append(block, static_cast<std::size_t>(got));
  int code = Z_OK;
  gzerror(file, &code);
  gzclose(file);
  if (got < 0 || code != Z_OK) return std::nullopt;
  if (text.starts_with("\xef\xbb\xbf")) text.erase(0, 3);
  return text;
}

[[nodiscard]] bool printable_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

template <class Scalar, class Target>
void fuzz_one(const std::string& path, const dptrain::CsvOptions& options) {
  std::optional<dptrain::DenseDataset<Scalar, Target>> data;
  const Outcome outcome = fuzz::run_read(
      [&] {
        try {
          data.emplace(dptrain::read_csv<Scalar, Target>(path, options));
        } catch (const dptrain::parse_error& e) {
          DPTRAIN_FUZZ_CHECK_MSG(printable_ascii(e.what()), std::string(e.what()));
          throw;
        }
      },
      {path});

  const bool contradictory = (!options.label_column.empty() && (!options.header || options.label_index != -1)) ||
                             options.label_index < -1 || options.skip_lines < 0;
  if (contradictory) {
    DPTRAIN_FUZZ_CHECK_OUTCOME(outcome, Outcome::invalid_argument);
    return;
  }
  DPTRAIN_FUZZ_CHECK_MSG(outcome == Outcome::returned || outcome == Outcome::parse_error, fuzz::name(outcome));
  if (!data) return;

  const std::optional<std::string> text = zlib_text(path);
  DPTRAIN_FUZZ_CHECK_MSG(text.has_value(), "read_csv returned for a file that zlib cannot read");
  const Shape shape = count_shape(*text, options.delimiter, options.skip_lines);
  const Index rows = shape.nonblank_lines - (options.header ? 1 : 0);
  DPTRAIN_FUZZ_CHECK(rows >= 1);
  DPTRAIN_FUZZ_CHECK(data->features.rows() == rows);
  DPTRAIN_FUZZ_CHECK(data->targets.size() == rows);
  DPTRAIN_FUZZ_CHECK(data->features.cols() == shape.fields - 1);
  DPTRAIN_FUZZ_CHECK(data->features.cols() >= 1);
  DPTRAIN_FUZZ_CHECK(data->features.allFinite());
  for (Index i = 0; i < rows; ++i) DPTRAIN_FUZZ_CHECK(fuzz::finite(data->targets[i]));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const unsigned flags = data[0], parameter = data[1];
  std::size_t at = 4;

  dptrain::CsvOptions options;
  options.header = (flags & 1U) != 0;
  switch ((flags >> 1) & 3U) {
    case 0:
      break;
    case 1:
      options.label_index = parameter == 255 ? -2 : static_cast<Index>(parameter % 16);
      break;
    default: {
      const std::size_t length = std::min<std::size_t>(parameter & 15U, size - at);
      options.label_column.assign(reinterpret_cast<const char*>(data + at), length);
      at += length;
      if (((flags >> 1) & 3U) == 3) options.label_index = static_cast<Index>(parameter >> 4) - 1;
      break;
    }
  }
  constexpr char delimiters[] = {',', ';', '\t'};
  const unsigned delimiter = (flags >> 3) & 3U;
  options.delimiter = delimiter < 3 ? delimiters[delimiter] : static_cast<char>(data[2]);
  options.skip_lines = data[3] == 255 ? -1 : static_cast<Index>(data[3] % 4);

  static fuzz::InputFile file("csv");
  const std::string& path = file.write(data + at, size - at);
  switch ((flags >> 5) & 7U) {
    case 0:
      fuzz_one<float, float>(path, options);
      break;
    case 1:
      fuzz_one<double, double>(path, options);
      break;
    case 2:
      fuzz_one<float, double>(path, options);
      break;
    case 3:
      fuzz_one<double, float>(path, options);
      break;
    case 4:
      fuzz_one<float, dptrain::Label>(path, options);
      break;
    case 5:
      fuzz_one<double, dptrain::Label>(path, options);
      break;
    case 6:
      fuzz_one<float, std::int16_t>(path, options);
      break;
    default:
      fuzz_one<double, long long>(path, options);
      break;
  }
  return 0;
}
