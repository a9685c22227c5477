// SPDX-License-Identifier: MIT
#include <zlib.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "dptrain/io/idx_reader.hpp"
#include "support/huge_pages.hpp"
#include "support/temp_dir.hpp"

using dptrain::Index;
using Bytes = std::vector<unsigned char>;

namespace {

void put_u32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>((v >> shift) & 0xffU));
}

// An IDX image file: n images of rows × cols, pixel k (over the whole file) = (7k + 3) mod 256.
Bytes images_file(std::uint32_t n, std::uint32_t rows, std::uint32_t cols) {
  Bytes out;
  put_u32(out, 0x00000803);
  put_u32(out, n);
  put_u32(out, rows);
  put_u32(out, cols);
  for (std::uint64_t k = 0; k < std::uint64_t{n} * rows * cols; ++k)
    out.push_back(static_cast<unsigned char>((7 * k + 3) % 256));
  return out;
}

// An IDX label file: label i = i mod 10.
Bytes labels_file(std::uint32_t n) {
  Bytes out;
  put_u32(out, 0x00000801);
  put_u32(out, n);
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(static_cast<unsigned char>(i % 10));
  return out;
}

std::string write_plain(const test::TempDir& dir, const std::string& name, const Bytes& bytes) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string write_gzip(const test::TempDir& dir, const std::string& name, const Bytes& bytes) {
  const std::string path = dir.file(name);
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  if (!bytes.empty())
    REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(file) == Z_OK);
  return path;
}

std::string write_file(const test::TempDir& dir, const std::string& name, const Bytes& bytes, bool gzip) {
  return gzip ? write_gzip(dir, name + ".gz", bytes) : write_plain(dir, name, bytes);
}

}  // namespace

TEMPLATE_TEST_CASE("read_idx_images: plain and gzipped files read back exactly as pixel / 255, one image per row",
                   "[io]", float, double) {
  const bool gzip = GENERATE(false, true);
  test::TempDir dir("idx");
  const std::string path = write_file(dir, "images", images_file(3, 2, 5), gzip);
  const dptrain::RowMatrix<TestType> x = dptrain::read_idx_images<TestType>(path);
  REQUIRE(x.rows() == 3);
  REQUIRE(x.cols() == 10);
  for (Index i = 0; i < 3; ++i)
    for (Index j = 0; j < 10; ++j) {
      const auto k = static_cast<unsigned>(i * 10 + j);
      CHECK(x(i, j) == static_cast<TestType>((7 * k + 3) % 256) / TestType(255));
    }
  CHECK(x.minCoeff() >= TestType(0));
  CHECK(x.maxCoeff() <= TestType(1));
}

TEST_CASE("read_idx_images: a large image set is read into 2 MiB pages where Linux offers them", "[io][huge_pages]") {
  // 2600 images of 28 × 28: 8 MB of floats, with at least 3 aligned 2 MiB pages wholly inside.
  test::TempDir dir("idx");
  const std::string path = write_plain(dir, "images", images_file(2600, 28, 28));
  const dptrain::RowMatrix<float> x = dptrain::read_idx_images<float>(path);
  REQUIRE(x.rows() == 2600);
  CHECK(x(2599, 783) == static_cast<float>((7 * (2600u * 784 - 1) + 3) % 256) / 255.0f);
  if (test::transparent_huge_pages_available())
    CHECK(test::huge_page_kib(x.data() + x.size() / 2) > 0);
  else
    WARN("transparent huge pages are off on this system: only the values are checked");
}

TEST_CASE("read_idx_labels: plain and gzipped files read back exactly", "[io]") {
  const bool gzip = GENERATE(false, true);
  test::TempDir dir("idx");
  const std::string path = write_file(dir, "labels", labels_file(23), gzip);
  const dptrain::Vector<dptrain::Label> y = dptrain::read_idx_labels(path);
  REQUIRE(y.size() == 23);
  for (Index i = 0; i < 23; ++i) CHECK(y[i] == i % 10);
}

TEST_CASE("read_idx_labels: bytes up to 255 are labels, not negative", "[io]") {
  test::TempDir dir("idx");
  Bytes bytes;
  put_u32(bytes, 0x00000801);
  put_u32(bytes, 2);
  bytes.push_back(255);
  bytes.push_back(128);
  const dptrain::Vector<dptrain::Label> y = dptrain::read_idx_labels(write_plain(dir, "labels", bytes));
  CHECK(y[0] == 255);
  CHECK(y[1] == 128);
}

TEST_CASE("read_idx: images and labels form one data set", "[io]") {
  test::TempDir dir("idx");
  const std::string images = write_gzip(dir, "images.gz", images_file(4, 3, 3));
  const std::string labels = write_plain(dir, "labels", labels_file(4));
  const dptrain::DenseDataset<float, dptrain::Label> data = dptrain::read_idx<float>(images, labels);
  CHECK(data.size() == 4);
  CHECK(data.dim() == 9);
  CHECK(data.targets[3] == 3);
  CHECK(data.features(0, 0) == 3.0F / 255.0F);
  CHECK_NOTHROW(data.validate());
}

TEST_CASE("read_idx_bytes: the pixels stay bytes and read as p times 1/255, within an ulp of read_idx's p / 255",
          "[io][byte_dataset]") {
  test::TempDir dir("idx");
  const std::string images = write_gzip(dir, "images.gz", images_file(40, 10, 10));
  const std::string labels = write_plain(dir, "labels", labels_file(40));
  const dptrain::ByteDataset<float, dptrain::Label> bytes = dptrain::read_idx_bytes<float>(images, labels);
  const dptrain::DenseDataset<float, dptrain::Label> floats = dptrain::read_idx<float>(images, labels);
  REQUIRE(bytes.size() == 40);
  REQUIRE(bytes.dim() == 100);
  CHECK_NOTHROW(bytes.validate());
  CHECK(bytes.targets == floats.targets);
  CHECK(bytes.bytes(0, 0) == 3);
  CHECK(bytes.bytes(39, 99) == (7 * 3999 + 3) % 256);
  auto buffer = bytes.make_buffer(40);
  const auto all = bytes.rows(0, 40, buffer);
  for (Index i = 0; i < 40; ++i)
    for (Index j = 0; j < 100; ++j) {
      const float expected = floats.features(i, j);
      INFO("row " << i << ", pixel " << j << ": byte " << int{bytes.bytes(i, j)});
      CHECK(std::abs(all.features(i, j) - expected) <= std::numeric_limits<float>::epsilon() * expected);
    }
  CHECK(all.features.minCoeff() == 0.0F);
  CHECK(all.features.maxCoeff() == 1.0F);
}

TEST_CASE("read_idx_bytes: a label count that differs from the image count is a parse_error naming the label file",
          "[io][byte_dataset]") {
  test::TempDir dir("idx");
  const std::string images = write_plain(dir, "images", images_file(4, 2, 2));
  const std::string labels = write_plain(dir, "labels", labels_file(5));
  CHECK_THROWS_WITH(dptrain::read_idx_bytes<float>(images, labels),
                    Catch::StartsWith("dptrain::read_idx_bytes: " + labels + ", byte 4") &&
                        Catch::Contains("expected 4 labels") && Catch::Contains("found 5"));
}

TEST_CASE("read_idx: a label count that differs from the image count is a parse_error naming the label file", "[io]") {
  test::TempDir dir("idx");
  const std::string images = write_plain(dir, "images", images_file(4, 2, 2));
  const std::string labels = write_plain(dir, "labels", labels_file(3));
  CHECK_THROWS_AS(dptrain::read_idx<double>(images, labels), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx<double>(images, labels),
                    Catch::StartsWith("dptrain::read_idx: " + labels + ", byte 4") &&
                        Catch::Contains("expected 4 labels") && Catch::Contains("found 3"));
}

TEST_CASE("read_idx_images: a missing file is a parse_error naming it", "[io]") {
  test::TempDir dir("idx");
  const std::string path = dir.file("no-such-file.gz");
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(path),
                    Catch::StartsWith("dptrain::read_idx_images: " + path + ", byte 0") &&
                        Catch::Contains("cannot open") && Catch::Contains("No such file"));
  CHECK_THROWS_AS(dptrain::read_idx_labels(path), dptrain::parse_error);
}

TEST_CASE("read_idx_images: a directory is unreadable and a parse_error", "[io]") {
  test::TempDir dir("idx");
  const std::string path = dir.path().string();
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(path), Catch::Contains(path + ", byte 0"));
}

TEST_CASE("read_idx_images: a wrong magic number is reported with the expected and found values in hex", "[io]") {
  const bool gzip = GENERATE(false, true);
  test::TempDir dir("idx");
  const std::string labels = write_file(dir, "labels", labels_file(5), gzip);
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(labels), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(labels),
                    Catch::Contains(labels + ", byte 0") && Catch::Contains("expected the magic number 0x00000803") &&
                        Catch::Contains("found 0x00000801 (IDX labels)"));
  const std::string images = write_file(dir, "images", images_file(1, 1, 1), gzip);
  CHECK_THROWS_WITH(dptrain::read_idx_labels(images), Catch::Contains(images + ", byte 0") &&
                                                          Catch::Contains("expected the magic number 0x00000801") &&
                                                          Catch::Contains("found 0x00000803"));
  const std::string text = write_plain(dir, "text.csv", Bytes{'a', ',', 'b', '\n', '1', ',', '2', '\n'});
  CHECK_THROWS_WITH(dptrain::read_idx_labels(text), Catch::Contains("found 0x612c620a (not an IDX file)"));
}

TEST_CASE("read_idx_images: a truncated header is a parse_error at the missing field", "[io]") {
  const bool gzip = GENERATE(false, true);
  test::TempDir dir("idx");
  Bytes bytes = images_file(2, 2, 2);
  bytes.resize(10);  // magic, count, half of the row count
  const std::string path = write_file(dir, "images", bytes, gzip);
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(path), Catch::Contains(path + ", byte 8") &&
                                                               Catch::Contains("expected the row count") &&
                                                               Catch::Contains("file ends after 10 bytes"));
  const std::string empty = write_file(dir, "empty", Bytes{}, gzip);
  CHECK_THROWS_WITH(dptrain::read_idx_labels(empty), Catch::Contains(empty + ", byte 0") &&
                                                         Catch::Contains("expected the magic number") &&
                                                         Catch::Contains("file ends after 0 bytes"));
}

TEST_CASE("read_idx_images: truncated pixel data names the expected size and where the file ends", "[io]") {
  test::TempDir dir("idx");
  Bytes bytes = images_file(0, 28, 28);
  bytes[7] = 0x10;  // the header now promises 16 images: 12544 bytes of pixels
  for (int i = 0; i < 1000; ++i) bytes.push_back(1);
  const std::string plain = write_plain(dir, "images", bytes);
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(plain), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(plain),
                    Catch::Contains(plain + ", byte 1016:") && Catch::Contains("expected 12544 bytes of pixels") &&
                        Catch::Contains("starting at byte 16") && Catch::Contains("file ends after 1000"));
  const std::string gzip = write_gzip(dir, "images.gz", bytes);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(gzip),
                    Catch::Contains(gzip + ", byte 1016 of the decompressed data") &&
                        Catch::Contains("expected 12544 bytes of pixels") && Catch::Contains("file ends after 1000"));
}

TEST_CASE("read_idx_labels: truncated labels are a parse_error", "[io]") {
  test::TempDir dir("idx");
  Bytes bytes = labels_file(10);
  bytes.resize(8 + 4);
  const std::string path = write_plain(dir, "labels", bytes);
  CHECK_THROWS_AS(dptrain::read_idx_labels(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_labels(path), Catch::Contains(path + ", byte 12") &&
                                                        Catch::Contains("expected 10 bytes of labels") &&
                                                        Catch::Contains("file ends after 4"));
}

TEST_CASE("read_idx_images: bytes after the data are rejected", "[io]") {
  const bool gzip = GENERATE(false, true);
  test::TempDir dir("idx");
  Bytes bytes = images_file(2, 2, 2);
  bytes.push_back(0);
  const std::string path = write_file(dir, "images", bytes, gzip);
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(path),
                    Catch::Contains(path + ", byte 24") && Catch::Contains("expected the end of the file"));
  Bytes labels = labels_file(3);
  labels.push_back(0);
  const std::string label_path = write_file(dir, "labels", labels, gzip);
  CHECK_THROWS_WITH(dptrain::read_idx_labels(label_path), Catch::Contains(label_path + ", byte 11"));
}

TEST_CASE("read_idx_images: images without pixels are rejected", "[io]") {
  test::TempDir dir("idx");
  const std::string path = write_plain(dir, "images", images_file(3, 0, 28));
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(path),
                    Catch::Contains(path + ", byte 8") && Catch::Contains("found 0 × 28"));
}

TEST_CASE("read_idx_images: a gzip stream cut short or corrupted is a parse_error, never a partial load", "[io]") {
  test::TempDir dir("idx");
  const std::string whole = write_gzip(dir, "whole.gz", images_file(50, 8, 8));
  std::ifstream in(whole, std::ios::binary);
  std::string compressed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(compressed.size() > 40);

  const std::string cut = dir.write("cut.gz", compressed.substr(0, compressed.size() / 2));
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(cut), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(cut), Catch::Contains(cut + ", byte "));

  std::string flipped = compressed;
  flipped[flipped.size() - 6] = static_cast<char>(flipped[flipped.size() - 6] ^ 0x55);  // inside the CRC-32
  const std::string bad_crc = dir.write("crc.gz", flipped);
  CHECK_THROWS_AS(dptrain::read_idx_images<float>(bad_crc), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_idx_images<float>(bad_crc),
                    Catch::Contains(bad_crc + ", byte ") && Catch::Contains("cannot decompress"));
}

TEST_CASE("read_idx: the Fashion-MNIST test set reads as 10000 images of 784 pixels in 0 to 1, labels 0 to 9", "[io]") {
  const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir / "train-images-idx3-ubyte.gz")) {
    WARN("Fashion-MNIST is not installed in " << dir << " (Debian package dataset-fashion-mnist): skipped");
    return;
  }
  const dptrain::DenseDataset<float, dptrain::Label> test = dptrain::read_idx<float>(
      (dir / "t10k-images-idx3-ubyte.gz").string(), (dir / "t10k-labels-idx1-ubyte.gz").string());
  CHECK(test.size() == 10000);
  CHECK(test.dim() == 784);
  CHECK(test.features.minCoeff() == 0.0F);
  CHECK(test.features.maxCoeff() == 1.0F);
  CHECK(test.targets.minCoeff() == 0);
  CHECK(test.targets.maxCoeff() == 9);
  for (dptrain::Label c = 0; c < 10; ++c) CHECK((test.targets.array() == c).count() == 1000);
}

TEST_CASE("read_idx_images: zero images of an enormous size are refused, not overflowed", "[io]") {
  const test::TempDir dir("idx");
  for (const std::uint32_t side : {0xFFFFFFFFU, 0x7FFFFFFFU}) {
    Bytes bytes;
    put_u32(bytes, 0x00000803);
    put_u32(bytes, 0);
    put_u32(bytes, side);
    put_u32(bytes, side);
    const std::string path = write_plain(dir, "images", bytes);
    CHECK_THROWS_WITH(dptrain::read_idx_images<float>(path), Catch::Contains("dimensions are too large"));
  }
}

TEST_CASE("read_idx_labels: gzip data without its CRC trailer is a parse_error", "[io]") {
  const test::TempDir dir("idx");
  const std::string whole = write_gzip(dir, "labels.gz", labels_file(12));
  std::ifstream in(whole, std::ios::binary);
  Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.resize(bytes.size() - 8);  // the CRC-32 and the length
  const std::string cut = write_plain(dir, "cut.gz", bytes);
  CHECK_THROWS_WITH(dptrain::read_idx_labels(cut), Catch::Contains("CRC-32 and length trailer are missing"));
}
