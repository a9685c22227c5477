// SPDX-License-Identifier: MIT
// libFuzzer target for read_idx, read_idx_images and read_idx_labels on plain and gzipped IDX files.
//
// Input layout: byte 0 holds flags (bit 0: double rather than float; bits 1-2: 1 reads the images
// part alone, 2 the labels part alone, 0 and 3 both with read_idx); bytes 1-2 give the images
// part's length, big-endian, clamped to the bytes that follow; then come the images part and, in
// the rest, the labels part. Each part is written to its own file. An independent decoder below
// (zlib's inflate for a gzipped part, then a parser of the IDX header) decides what the reader
// must do with each part: return exactly these values, or throw parse_error.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dptrain/io/idx_reader.hpp"
#include "fuzz_support.hpp"

namespace {

using Bytes = std::span<const std::uint8_t>;
using dptrain::Index;
using fuzz::Outcome;

[[nodiscard]] std::uint32_t u32(Bytes bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) | (std::uint32_t{bytes[at + 2]} << 8) |
         std::uint32_t{bytes[at + 3]};
}

// zlib's gzread decompresses a file that starts with 1f 8b and copies any other file unchanged.
[[nodiscard]] bool gzipped(Bytes bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

enum class Verdict { unknown, reject, accept };

// What the reader must do with one file; for `accept`, the header's count and items per entry,
// and the bytes the reader sees (the file, or its decompressed data).
struct Expected {
  Verdict verdict = Verdict::unknown;
  std::uint64_t count = 0, per_item = 0;
  std::vector<std::uint8_t> content;
};

// Decompressed data beyond this is not checked (libFuzzer's inputs stay far below it).
constexpr std::size_t most_decompressed = std::size_t{64} << 20;

// Decompresses a gzip file independently of the reader, as zlib's gzread reads it: gzip members
// one after another, bytes after a member that do not start another one ignored (zlib does not
// report them). Returns reject for a corrupt stream or one cut short, even when all the data came
// out before the cut: its CRC-32 was never checked.
[[nodiscard]] Expected gunzip(Bytes bytes) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return {};
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  Expected result;
  unsigned char block[1 << 14];
  for (;;) {
    stream.next_out = block;
    stream.avail_out = sizeof block;
    const int code = inflate(&stream, Z_NO_FLUSH);
    result.content.insert(result.content.end(), block, block + (sizeof block - stream.avail_out));
    if (result.content.size() > most_decompressed) break;  // unknown
    if (code == Z_OK) continue;
    if (code == Z_STREAM_END) {
      if (stream.avail_in >= 2 && stream.next_in[0] == 0x1f && stream.next_in[1] == 0x8b) {
        inflateReset(&stream);  // another member
        continue;
      }
      result.verdict = Verdict::accept;  // for now: the content decides
      break;
    }
    result.verdict = Verdict::reject;  // Z_BUF_ERROR: cut short; Z_DATA_ERROR: corrupt
    break;
  }
  inflateEnd(&stream);
  if (result.verdict != Verdict::accept) result.content.clear();
  return result;
}

// The file's content as the reader sees it, and whether it can be had: accept with the content,
// reject when a gzip stream is corrupt or cut short, unknown when it decompresses too far.
[[nodiscard]] Expected decode(Bytes bytes) {
  if (gzipped(bytes)) return gunzip(bytes);
  return {Verdict::accept, 0, 0, std::vector<std::uint8_t>(bytes.begin(), bytes.end())};
}

// The most elements the reader agrees to load (idx_reader.hpp, checked_count): Index max / 8.
constexpr auto loadable = static_cast<std::uint64_t>(std::numeric_limits<Index>::max() / 8);

[[nodiscard]] Expected expect_images(Bytes file) {
  Expected expected = decode(file);
  if (expected.verdict != Verdict::accept) return expected;
  const Bytes bytes(expected.content);
  expected.verdict = Verdict::reject;
  if (bytes.size() < 16 || u32(bytes, 0) != 0x00000803) return expected;
  const std::uint64_t n = u32(bytes, 4), rows = u32(bytes, 8), cols = u32(bytes, 12);
  const std::uint64_t per_image = rows * cols;  // < 2^64: each factor is < 2^32
  const std::uint64_t data = bytes.size() - 16;
  // An image of more pixels than the reader can load is rejected even when there are no images:
  // its column count would not fit (or would overflow) an Index.
  if (per_image == 0 || per_image > loadable) return expected;
  // Exactly n · per_image bytes must follow the header (per_image <= data keeps the product small).
  const bool exact = n == 0 ? data == 0 : per_image <= data && n * per_image == data;
  if (!exact) return expected;
  expected.verdict = Verdict::accept;
  expected.count = n;
  expected.per_item = per_image;
  return expected;
}

[[nodiscard]] Expected expect_labels(Bytes file) {
  Expected expected = decode(file);
  if (expected.verdict != Verdict::accept) return expected;
  const Bytes bytes(expected.content);
  expected.verdict = Verdict::reject;
  if (bytes.size() < 8 || u32(bytes, 0) != 0x00000801) return expected;
  const std::uint64_t n = u32(bytes, 4);
  if (bytes.size() - 8 != n) return expected;
  expected.verdict = Verdict::accept;
  expected.count = n;
  expected.per_item = 1;
  return expected;
}

template <class Scalar>
void check_images(const dptrain::RowMatrix<Scalar>& x, const Expected& expected) {
  DPTRAIN_FUZZ_CHECK(x.cols() >= 1);
  for (Index i = 0; i < x.rows(); ++i)
    for (Index j = 0; j < x.cols(); ++j) {
      // Every pixel is some byte / 255, hence in [0, 1].
      const Scalar v = x(i, j);
      DPTRAIN_FUZZ_CHECK(std::isfinite(v) && v >= Scalar(0) && v <= Scalar(1));
      const auto byte = static_cast<int>(std::lround(v * Scalar(255)));
      DPTRAIN_FUZZ_CHECK(v == static_cast<Scalar>(byte) / Scalar(255));
    }
  if (expected.verdict != Verdict::accept) return;
  DPTRAIN_FUZZ_CHECK(static_cast<std::uint64_t>(x.rows()) == expected.count);
  DPTRAIN_FUZZ_CHECK(static_cast<std::uint64_t>(x.cols()) == expected.per_item);
  for (Index i = 0; i < x.rows(); ++i)
    for (Index j = 0; j < x.cols(); ++j) {
      const std::uint8_t byte = expected.content[16 + static_cast<std::size_t>(i * x.cols() + j)];
      DPTRAIN_FUZZ_CHECK(x(i, j) == static_cast<Scalar>(byte) / Scalar(255));
    }
}

void check_labels(const dptrain::Vector<dptrain::Label>& y, const Expected& expected) {
  for (Index i = 0; i < y.size(); ++i) DPTRAIN_FUZZ_CHECK(y[i] >= 0 && y[i] <= 255);
  if (expected.verdict != Verdict::accept) return;
  DPTRAIN_FUZZ_CHECK(static_cast<std::uint64_t>(y.size()) == expected.count);
  for (Index i = 0; i < y.size(); ++i) DPTRAIN_FUZZ_CHECK(y[i] == expected.content[8 + static_cast<std::size_t>(i)]);
}

// A single file: accept → returned, reject → parse_error, unknown → either.
void check_outcome(Outcome outcome, const Expected& expected) {
  DPTRAIN_FUZZ_CHECK_MSG(outcome == Outcome::returned || outcome == Outcome::parse_error, fuzz::name(outcome));
  if (expected.verdict == Verdict::accept) DPTRAIN_FUZZ_CHECK_OUTCOME(outcome, Outcome::returned);
  if (expected.verdict == Verdict::reject) DPTRAIN_FUZZ_CHECK_OUTCOME(outcome, Outcome::parse_error);
}

template <class Scalar>
void fuzz_one(unsigned mode, Bytes images, Bytes labels) {
  static fuzz::InputFile image_file("idx_images"), label_file("idx_labels");
  const std::string& image_path = image_file.write(images.data(), images.size());
  const std::string& label_path = label_file.write(labels.data(), labels.size());
  const Expected expected_images = expect_images(images), expected_labels = expect_labels(labels);

  if (mode == 1) {
    std::optional<dptrain::RowMatrix<Scalar>> x;
    const Outcome outcome =
        fuzz::run_read([&] { x.emplace(dptrain::read_idx_images<Scalar>(image_path)); }, {image_path});
    check_outcome(outcome, expected_images);
    if (x) check_images(*x, expected_images);
    return;
  }
  if (mode == 2) {
    std::optional<dptrain::Vector<dptrain::Label>> y;
    const Outcome outcome = fuzz::run_read([&] { y.emplace(dptrain::read_idx_labels(label_path)); }, {label_path});
    check_outcome(outcome, expected_labels);
    if (y) check_labels(*y, expected_labels);
    return;
  }

  std::optional<dptrain::DenseDataset<Scalar, dptrain::Label>> data;
  const Outcome outcome = fuzz::run_read([&] { data.emplace(dptrain::read_idx<Scalar>(image_path, label_path)); },
                                         {image_path, label_path});
  DPTRAIN_FUZZ_CHECK_MSG(outcome == Outcome::returned || outcome == Outcome::parse_error, fuzz::name(outcome));
  if (expected_images.verdict == Verdict::reject || expected_labels.verdict == Verdict::reject) {
    DPTRAIN_FUZZ_CHECK_OUTCOME(outcome, Outcome::parse_error);
  } else if (expected_images.verdict == Verdict::accept && expected_labels.verdict == Verdict::accept) {
    // Both files are well formed: the data set is read exactly when the counts agree.
    DPTRAIN_FUZZ_CHECK_OUTCOME(
        outcome, expected_images.count == expected_labels.count ? Outcome::returned : Outcome::parse_error);
  }
  if (!data) return;
  DPTRAIN_FUZZ_CHECK(data->features.rows() == data->targets.size());
  check_images(data->features, expected_images);
  check_labels(data->targets, expected_labels);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const unsigned flags = data[0];
  const std::size_t rest = size - 3;
  const std::size_t split = std::min<std::size_t>((std::size_t{data[1]} << 8) | data[2], rest);
  const Bytes images(data + 3, split), labels(data + 3 + split, rest - split);
  const unsigned mode = (flags >> 1) & 3U;
  if ((flags & 1U) != 0)
    fuzz_one<double>(mode, images, labels);
  else
    fuzz_one<float>(mode, images, labels);
  return 0;
}
