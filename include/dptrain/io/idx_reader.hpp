// SPDX-License-Identifier: MIT
// read_idx_images, read_idx_labels, read_idx: MNIST / Fashion-MNIST IDX files, plain or gzipped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/data/byte_dataset.hpp"
#include "dptrain/data/dense_dataset.hpp"
#include "dptrain/data/huge_pages.hpp"
#include "dptrain/detail/gzip_input.hpp"

namespace dptrain {

namespace detail::idx {

inline constexpr std::uint32_t images_magic = 0x00000803;  // unsigned bytes, 3 dimensions
inline constexpr std::uint32_t labels_magic = 0x00000801;  // unsigned bytes, 1 dimension

[[nodiscard]] inline std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(value));
  return text;
}

// What a magic number says, so that "found 0x00000801" also tells the user what they passed.
[[nodiscard]] inline std::string describe_magic(std::uint32_t magic) {
  if (magic == images_magic) return hex(magic) + " (IDX images)";
  if (magic == labels_magic) return hex(magic) + " (IDX labels)";
  if ((magic >> 16) == 0) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02x", static_cast<unsigned>((magic >> 8) & 0xffU));
    return hex(magic) + " (an IDX file of element type " + type + " with " + std::to_string(magic & 0xffU) +
           " dimensions)";
  }
  return hex(magic) + " (not an IDX file)";
}

// One IDX file, plain or gzipped (detail::gzip::Input), with the reads of the IDX layout.
// `owner` is the reader that opened it ("dptrain::read_idx_images"), for its error messages.
class Input : public gzip::Input {
 public:
  Input(const std::string& path, const char* owner) : gzip::Input(path, owner, "byte 0") {}

  // Reads a big-endian 32-bit field of the header.
  [[nodiscard]] std::uint32_t read_u32(const char* what) {
    unsigned char b[4];
    const std::uint64_t at = offset();
    const std::size_t got = read(b, 4);
    if (got < 4) {
      throw parse_error(owner(), path(), where(at),
                        std::string("expected the ") + what +
                            " (4 bytes, big-endian) in the IDX header, file ends after " + std::to_string(at + got) +
                            " bytes");
    }
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
  }

  // Reads exactly `count` bytes of data that start at the current offset. The buffer grows as
  // data arrives, so a header that promises more than the file holds is reported without first
  // allocating what it promises.
  [[nodiscard]] std::vector<unsigned char> read_data(std::uint64_t count, const std::string& what) {
    const std::uint64_t start = offset();
    constexpr std::uint64_t largest_block = std::uint64_t{16} << 20;
    std::uint64_t block = std::uint64_t{64} << 10;  // doubles up to largest_block
    std::vector<unsigned char> bytes;
    while (bytes.size() < count) {
      const std::size_t before = bytes.size();
      const auto request = static_cast<std::size_t>(std::min<std::uint64_t>(count - before, block));
      bytes.resize(before + request);
      const std::size_t got = read(bytes.data() + before, request);
      if (got < request) {
        const std::uint64_t have = before + got;
        throw parse_error(owner(), path(), where(start + have),
                          "expected " + std::to_string(count) + " bytes of " + what + " starting at byte " +
                              std::to_string(start) + ", file ends after " + std::to_string(have) + " of them");
      }
      block = std::min(block * 2, largest_block);
    }
    return bytes;
  }

  // Trailing bytes mean the header and the data disagree (or two files were concatenated).
  void expect_end() {
    unsigned char extra = 0;
    const std::uint64_t at = offset();
    if (read(&extra, 1) != 0) {
      throw parse_error(
          owner(), path(), where(at),
          "expected the end of the file after " + std::to_string(at) + " bytes (header and data), found more bytes");
    }
    expect_complete();
  }

  void expect_magic(std::uint32_t expected, const char* kind) {
    const std::uint32_t found = read_u32("magic number");
    if (found != expected) {
      throw parse_error(
          owner(), path(), "byte 0",
          "expected the magic number " + hex(expected) + " (IDX " + kind + "), found " + describe_magic(found));
    }
  }
};

[[nodiscard]] inline std::uint64_t checked_count(const Input& in, const std::string& path, std::uint64_t n,
                                                 std::uint64_t per_item) {
  constexpr auto limit = static_cast<std::uint64_t>(std::numeric_limits<Index>::max() / 8);
  if (per_item > limit || (per_item != 0 && n > limit / per_item))
    throw parse_error(in.owner(), path, in.where(4),
                      "the header's dimensions are too large to load (" + std::to_string(n) + " × " +
                          std::to_string(per_item) + " elements)");
  return n * per_item;
}

struct Images {
  std::vector<unsigned char> pixels;
  Index count = 0, pixels_per_image = 0;
};

[[nodiscard]] inline Images read_images_bytes(const std::string& path) {
  Input in(path, "dptrain::read_idx_images");
  in.expect_magic(images_magic, "images: unsigned bytes, 3 dimensions");
  const std::uint32_t n = in.read_u32("image count");
  const std::uint64_t at_rows = in.offset();
  const std::uint32_t rows = in.read_u32("row count");
  const std::uint32_t cols = in.read_u32("column count");
  if (rows == 0 || cols == 0)
    throw parse_error(
        in.owner(), path, in.where(at_rows),
        "expected images of at least 1 × 1 pixels, found " + std::to_string(rows) + " × " + std::to_string(cols));
  const std::uint64_t per_image = std::uint64_t{rows} * cols;
  const std::uint64_t total = checked_count(in, path, n, per_image);
  Images images;
  images.pixels = in.read_data(total, "pixels (" + std::to_string(n) + " images of " + std::to_string(rows) + " × " +
                                          std::to_string(cols) + ")");
  in.expect_end();
  images.count = static_cast<Index>(n);
  images.pixels_per_image = static_cast<Index>(per_image);
  return images;
}

}  // namespace detail::idx

/**
 * @brief Reads an IDX image file (MNIST, Fashion-MNIST), plain or gzipped, one image per row,
 * pixels scaled to [0, 1].
 *
 * The file is a big-endian header — magic number 0x00000803 (unsigned bytes, 3 dimensions),
 * image count n, rows, columns — followed by n·rows·columns unsigned bytes, image after image,
 * each row-major. Pixel p becomes p / 255 in row i, column r·columns + c. A gzip stream (magic
 * 1f 8b) is decompressed on the fly by zlib; any other file is read as it is. Bytes after the
 * data are rejected, so a header that disagrees with the data is never loaded halfway.
 *
 * @tparam Scalar float or double.
 * @param path the file's path, e.g. `train-images-idx3-ubyte.gz`.
 * @return an n × (rows·columns) matrix with values in [0, 1].
 * @throws dptrain::parse_error naming the file and byte offset (of the decompressed data for a
 *         gzipped file) when the file cannot be opened or read, the magic number is wrong (both
 *         values in hex), the header or pixel data is truncated, images have no pixels, or bytes
 *         follow the data; corrupt gzip data too.
 *
 * @code
 * dptrain::RowMatrix<float> x =
 *     dptrain::read_idx_images<float>("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
 * // x.rows() == 10000, x.cols() == 784
 * @endcode
 */
template <class Scalar>
[[nodiscard]] RowMatrix<Scalar> read_idx_images(const std::string& path) {
  static_assert(std::is_floating_point_v<Scalar>, "dptrain: read_idx_images needs a floating-point Scalar");
  const detail::idx::Images images = detail::idx::read_images_bytes(path);
  using Bytes = Eigen::Matrix<unsigned char, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Bytes> bytes(images.pixels.data(), images.count, images.pixels_per_image);
  RowMatrix<Scalar> features = huge_page_matrix<Scalar>(images.count, images.pixels_per_image);
  features = bytes.template cast<Scalar>() / Scalar(255);
  return features;
}

/**
 * @brief Reads an IDX label file (MNIST, Fashion-MNIST), plain or gzipped.
 *
 * The file is a big-endian header — magic number 0x00000801 (unsigned bytes, 1 dimension) and
 * the label count n — followed by n unsigned bytes. Bytes after the labels are rejected.
 *
 * @param path the file's path, e.g. `train-labels-idx1-ubyte.gz`.
 * @return n labels, each in [0, 255] (0..9 for MNIST and Fashion-MNIST).
 * @throws dptrain::parse_error naming the file and byte offset when the file cannot be opened or
 *         read, the magic number is wrong, the header or labels are truncated, or bytes follow
 *         the labels.
 *
 * @code
 * dptrain::Vector<dptrain::Label> y =
 *     dptrain::read_idx_labels("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
 * @endcode
 */
[[nodiscard]] inline Vector<Label> read_idx_labels(const std::string& path) {
  detail::idx::Input in(path, "dptrain::read_idx_labels");
  in.expect_magic(detail::idx::labels_magic, "labels: unsigned bytes, 1 dimension");
  const std::uint32_t n = in.read_u32("label count");
  const std::vector<unsigned char> bytes = in.read_data(n, "labels");
  in.expect_end();
  Vector<Label> labels(static_cast<Index>(n));
  for (Index i = 0; i < labels.size(); ++i) labels[i] = static_cast<Label>(bytes[static_cast<std::size_t>(i)]);
  return labels;
}

/**
 * @brief Reads an IDX image file and its label file into a classification data set.
 *
 * @tparam Scalar float or double.
 * @param images path of the image file (read_idx_images()).
 * @param labels path of the label file (read_idx_labels()).
 * @return the images as features (one per row, in [0, 1]) and the labels as targets.
 * @throws dptrain::parse_error as read_idx_images() and read_idx_labels() do, and naming the label
 *         file when the label count differs from the image count.
 *
 * @code
 * const std::string dir = "/usr/share/datasets/fashion-mnist/";
 * dptrain::DenseDataset<float, dptrain::Label> train = dptrain::read_idx<float>(
 *     dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz");
 * @endcode
 */
template <class Scalar>
[[nodiscard]] DenseDataset<Scalar, Label> read_idx(const std::string& images, const std::string& labels) {
  DenseDataset<Scalar, Label> data{read_idx_images<Scalar>(images), read_idx_labels(labels)};
  if (data.features.rows() != data.targets.size()) {
    throw parse_error("dptrain::read_idx", labels, "byte 4",
                      "expected " + std::to_string(data.features.rows()) + " labels, one per image in " + images +
                          ", found " + std::to_string(data.targets.size()));
  }
  return data;
}

/**
 * @brief Reads an IDX image file and its label file into a ByteDataset: the pixels stay bytes (a
 * quarter of the memory of read_idx()), read as `p · (1/255)`, in [0, 1].
 *
 * The same files, checks and errors as read_idx(). A pixel reads as p times the Scalar nearest
 * 1/255, which is within one unit in the last place of read_idx()'s p / 255 (a division per
 * pixel made the gather of 256 shuffled rows 10% slower on an AMD EPYC Zen 2 core).
 *
 * @code
 * const std::string dir = "/usr/share/datasets/fashion-mnist/";
 * dptrain::ByteDataset<float, dptrain::Label> train = dptrain::read_idx_bytes<float>(
 *     dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz");
 * @endcode
 */
template <class Scalar>
[[nodiscard]] ByteDataset<Scalar, Label> read_idx_bytes(const std::string& images, const std::string& labels) {
  const detail::idx::Images pixels = detail::idx::read_images_bytes(images);
  ByteDataset<Scalar, Label> data{.bytes = huge_page_matrix<std::uint8_t>(pixels.count, pixels.pixels_per_image),
                                  .targets = read_idx_labels(labels),
                                  .scale = Vector<Scalar>::Constant(pixels.pixels_per_image, Scalar(1) / Scalar(255)),
                                  .offset = Vector<Scalar>::Zero(pixels.pixels_per_image)};
  std::copy(pixels.pixels.begin(), pixels.pixels.end(), data.bytes.data());
  if (data.bytes.rows() != data.targets.size()) {
    throw parse_error("dptrain::read_idx_bytes", labels, "byte 4",
                      "expected " + std::to_string(data.bytes.rows()) + " labels, one per image in " + images +
                          ", found " + std::to_string(data.targets.size()));
  }
  return data;
}

}  // namespace dptrain
