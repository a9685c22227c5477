// SPDX-License-Identifier: MIT
#include <zlib.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "dptrain/io/csv_reader.hpp"
#include "support/huge_pages.hpp"
#include "support/temp_dir.hpp"

using dptrain::CsvOptions;
using dptrain::Label;

namespace {

// The first 6 lines of scikit-learn's iris.csv (sklearn/datasets/data/): a line of counts
// (samples, features, class names), then rows without a header, the class index last.
const std::string csv_iris_head =
    "150,4,setosa,versicolor,virginica\n"
    "5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4,0.2,0\n4.7,3.2,1.3,0.2,0\n4.6,3.1,1.5,0.2,0\n5.0,3.6,1.4,0.2,0\n";

// The first 5 lines of scikit-learn's boston_house_prices.csv: a line of counts, a header of
// quoted names, then rows, the target MEDV last.
const std::string csv_boston_head =
    "506,13\n"
    "\"CRIM\",\"ZN\",\"INDUS\",\"CHAS\",\"NOX\",\"RM\",\"AGE\",\"DIS\",\"RAD\",\"TAX\",\"PTRATIO\",\"B\","
    "\"LSTAT\",\"MEDV\"\n"
    "0.00632,18,2.31,0,0.538,6.575,65.2,4.09,1,296,15.3,396.9,4.98,24\n"
    "0.02731,0,7.07,0,0.469,6.421,78.9,4.9671,2,242,17.8,396.9,9.14,21.6\n"
    "0.02729,0,7.07,0,0.469,7.185,61.1,4.9671,2,242,17.8,392.83,4.03,34.7\n";

// Writes `text` gzipped, as a user's `gzip file.csv` would, through zlib's own writer.
std::string csv_write_gzip(const std::string& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb9");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(file) == Z_OK);
  return path;
}

// True when every character is printable ASCII (a space to a tilde).
bool csv_printable_ascii(const std::string& text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("read_csv: the label column chosen by header name, the others are features in file order", "[io]",
                   float, double) {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "a,y,b\n1.5,10,-2\n0.25,20,3e2\n");
  const auto data = dptrain::read_csv<TestType>(path, {.label_column = "y"});
  REQUIRE(data.size() == 2);
  REQUIRE(data.dim() == 2);
  CHECK(data.features(0, 0) == TestType(1.5));
  CHECK(data.features(0, 1) == TestType(-2));
  CHECK(data.features(1, 0) == TestType(0.25));
  CHECK(data.features(1, 1) == TestType(300));
  CHECK(data.targets[0] == TestType(10));
  CHECK(data.targets[1] == TestType(20));
}

TEST_CASE("read_csv: the label column chosen by index, without a header", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "7,1,2\n8,3,4\n9,5,6\n");
  const auto data = dptrain::read_csv<double>(path, {.header = false, .label_index = 0});
  REQUIRE(data.size() == 3);
  REQUIRE(data.dim() == 2);
  CHECK(data.targets[0] == 7.0);
  CHECK(data.targets[2] == 9.0);
  CHECK(data.features(1, 0) == 3.0);
  CHECK(data.features(2, 1) == 6.0);
}

TEST_CASE("read_csv: by default the header is read and the last column is the label", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "x1,x2,target\n1,2,3\n4,5,6\n");
  const auto data = dptrain::read_csv<double>(path);
  REQUIRE(data.size() == 2);
  REQUIRE(data.dim() == 2);
  CHECK(data.targets[0] == 3.0);
  CHECK(data.targets[1] == 6.0);
  CHECK(data.features(1, 1) == 5.0);
}

TEST_CASE("read_csv: spaces, quoted header names, CRLF line ends, blank lines and other delimiters", "[io]") {
  test::TempDir dir("csv");
  const std::string path =
      dir.write("data.csv", " \"sepal length\" ; \"label\" \r\n\r\n  +1.25 ;  2 \r\n\t-0.5\t;3\r\n\n");
  const auto data = dptrain::read_csv<float, Label>(path, {.label_column = "label", .delimiter = ';'});
  REQUIRE(data.size() == 2);
  REQUIRE(data.dim() == 1);
  CHECK(data.features(0, 0) == 1.25F);
  CHECK(data.features(1, 0) == -0.5F);
  CHECK(data.targets[0] == 2);
  CHECK(data.targets[1] == 3);
}

TEST_CASE("read_csv: integral labels read exactly, negative and large ones included", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "f,label\n0.1,0\n0.2,-4\n0.3,2147483647\n");
  const auto data = (dptrain::read_csv<double, Label>(path));
  REQUIRE(data.size() == 3);
  CHECK(data.targets[0] == 0);
  CHECK(data.targets[1] == -4);
  CHECK(data.targets[2] == 2147483647);
  CHECK(data.features(2, 0) == 0.3);
}

TEST_CASE("read_csv: a float value beyond float's range but within double's is rounded, not rejected", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "f,y\n1e-50,1\n");
  const auto data = dptrain::read_csv<float>(path);
  CHECK(data.features(0, 0) == 0.0F);
}

TEST_CASE("read_csv: a non-numeric field is a parse_error quoting it with its line and column", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "a,b,y\n1,2,3\n4,abc,6\n");
  CHECK_THROWS_AS(dptrain::read_csv<double>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path),
                    Catch::StartsWith("dptrain::read_csv: " + path + ", line 3, column 2") &&
                        Catch::Contains("expected a number, found \"abc\""));
  const std::string empty_field = dir.write("empty.csv", "a,b,y\n1,,3\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(empty_field),
                    Catch::Contains(empty_field + ", line 2, column 2") && Catch::Contains("found \"\""));
  const std::string trailing = dir.write("trailing.csv", "a,y\n1.5x,3\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(trailing),
                    Catch::Contains("line 2, column 1") && Catch::Contains("\"1.5x\""));
}

TEST_CASE("read_csv: nan, inf and out-of-range numbers are rejected", "[io]") {
  test::TempDir dir("csv");
  const std::string nan = dir.write("nan.csv", "a,y\nnan,1\n");
  CHECK_THROWS_AS(dptrain::read_csv<double>(nan), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(nan), Catch::Contains("line 2, column 1") && Catch::Contains("finite"));
  const std::string huge = dir.write("huge.csv", "a,y\n1,1e39\n");
  CHECK_THROWS_WITH(dptrain::read_csv<float>(huge), Catch::Contains("line 2, column 2") && Catch::Contains("\"1e39\""));
}

TEST_CASE("read_csv: a ragged row is a parse_error with the expected and found field counts", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "a,b,y\n1,2,3\n4,5\n");
  CHECK_THROWS_AS(dptrain::read_csv<double>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path),
                    Catch::Contains(path + ", line 3") && Catch::Contains("expected 3 fields, found 2"));
  const std::string longer = dir.write("longer.csv", "1,2\n3,4,5\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(longer, {.header = false}),
                    Catch::Contains(longer + ", line 2") && Catch::Contains("expected 2 fields, found 3"));
}

TEST_CASE("read_csv: a label that is not an integer is a parse_error for an integral Target", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "a,label\n1,2\n3,2.5\n");
  CHECK_NOTHROW(dptrain::read_csv<double>(path));
  CHECK_THROWS_AS((dptrain::read_csv<double, Label>(path)), dptrain::parse_error);
  CHECK_THROWS_WITH(
      (dptrain::read_csv<double, Label>(path)),
      Catch::Contains(path + ", line 3, column 2") && Catch::Contains("expected an integer label, found \"2.5\""));
  const std::string word = dir.write("word.csv", "a,label\n1,cat\n");
  CHECK_THROWS_WITH((dptrain::read_csv<double, Label>(word)),
                    Catch::Contains("line 2, column 2") && Catch::Contains("\"cat\""));
  const std::string big = dir.write("big.csv", "a,label\n1,3000000000\n");
  CHECK_THROWS_WITH((dptrain::read_csv<double, Label>(big)),
                    Catch::Contains("line 2, column 2") && Catch::Contains("out of range"));
}

TEST_CASE("read_csv: an unknown label column name is a parse_error listing the columns", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "a,b,y\n1,2,3\n");
  CHECK_THROWS_AS(dptrain::read_csv<double>(path, {.label_column = "label"}), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path, {.label_column = "label"}),
                    Catch::Contains(path + ", line 1") && Catch::Contains("expected a column named \"label\"") &&
                        Catch::Contains("\"a\", \"b\", \"y\""));
  const std::string twice = dir.write("twice.csv", "y,b,y\n1,2,3\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(twice, {.label_column = "y"}),
                    Catch::Contains("line 1, column 3") && Catch::Contains("appears twice"));
}

TEST_CASE("read_csv: an empty file or one with only a header is a parse_error", "[io]") {
  test::TempDir dir("csv");
  const std::string empty = dir.write("empty.csv", "");
  CHECK_THROWS_AS(dptrain::read_csv<double>(empty), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(empty),
                    Catch::Contains(empty + ", line 1") && Catch::Contains("empty file"));
  const std::string blank = dir.write("blank.csv", "\n  \n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(blank, {.header = false}), Catch::Contains("empty file"));
  const std::string header_only = dir.write("header.csv", "a,y\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(header_only), Catch::Contains(header_only + ", line 2") &&
                                                                Catch::Contains("expected data rows after the header"));
}

TEST_CASE("read_csv: a file with one column or a label index beyond the columns is a parse_error", "[io]") {
  test::TempDir dir("csv");
  const std::string one = dir.write("one.csv", "y\n1\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(one),
                    Catch::Contains(one + ", line 1") && Catch::Contains("at least 2 fields"));
  const std::string path = dir.write("data.csv", "a,y\n1,2\n");
  CHECK_THROWS_AS(dptrain::read_csv<double>(path, {.label_index = 2}), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path, {.label_index = 2}),
                    Catch::Contains(path + ", line 1") && Catch::Contains("expected at least 3 columns"));
}

TEST_CASE("read_csv: a missing file is a parse_error naming it", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.file("missing.csv");
  CHECK_THROWS_AS(dptrain::read_csv<double>(path), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path),
                    Catch::Contains(path + ", line 1") && Catch::Contains("No such file"));
  CHECK_THROWS_AS(dptrain::read_csv<double>(dir.path().string()), dptrain::parse_error);
}

TEST_CASE("read_csv: contradictory options are an invalid_argument", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "a,y\n1,2\n");
  CHECK_THROWS_AS(dptrain::read_csv<double>(path, {.header = false, .label_column = "y"}), dptrain::invalid_argument);
  CHECK_THROWS_AS(dptrain::read_csv<double>(path, {.label_column = "y", .label_index = 0}), dptrain::invalid_argument);
  CHECK_THROWS_AS(dptrain::read_csv<double>(path, {.label_index = -2}), dptrain::invalid_argument);
}

TEST_CASE("read_csv: skip_lines drops the line of counts that starts scikit-learn's iris.csv", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("iris.csv", csv_iris_head);
  const auto data = dptrain::read_csv<double, Label>(path, {.header = false, .skip_lines = 1});
  REQUIRE(data.size() == 5);
  REQUIRE(data.dim() == 4);
  CHECK(data.targets == dptrain::Vector<Label>::Zero(5));
  CHECK(data.features(0, 0) == 5.1);
  CHECK(data.features(0, 3) == 0.2);
  CHECK(data.features(1, 1) == 3.0);
  CHECK(data.features(4, 0) == 5.0);
  CHECK(data.features(4, 2) == 1.4);
}

TEST_CASE("read_csv: a line of counts is never silently taken for a header, and the error suggests skip_lines",
          "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("iris.csv", csv_iris_head);
  // The line of counts has as many fields as the rows: only its numbers give it away.
  for (const CsvOptions& options : {CsvOptions{}, CsvOptions{.label_column = "virginica"}}) {
    CHECK_THROWS_AS((dptrain::read_csv<double, Label>(path, options)), dptrain::parse_error);
    CHECK_THROWS_WITH((dptrain::read_csv<double, Label>(path, options)),
                      Catch::StartsWith("dptrain::read_csv: " + path + ", line 1, column 1: ") &&
                          Catch::Contains("expected a header of column names, found the number \"150\"") &&
                          Catch::Contains("header = false") && Catch::Contains("CsvOptions::skip_lines = 1"));
  }
  // Read as data, its words are the error, with the same advice.
  CHECK_THROWS_WITH((dptrain::read_csv<double, Label>(path, {.header = false})),
                    Catch::Contains(path + ", line 1, column 3") && Catch::Contains("found \"setosa\"") &&
                        Catch::Contains("CsvOptions::skip_lines = 1"));
  // A numeric line cannot be a header even when it is all numbers: a file without a header.
  const std::string numbers = dir.write("numbers.csv", "7,1,2\n8,3,4\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(numbers), Catch::Contains(numbers + ", line 1, column 1") &&
                                                            Catch::Contains("found the number \"7\"") &&
                                                            Catch::Contains("header = false"));
  const std::string quoted = dir.write("quoted.csv", "\"x\",\" 2.5 \"\n1,2\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(quoted),
                    Catch::Contains(quoted + ", line 1, column 2") && Catch::Contains("found the number \"2.5\""));
}

TEST_CASE("read_csv: skip_lines then a header, as in scikit-learn's boston_house_prices.csv", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("boston.csv", csv_boston_head);
  const auto data = dptrain::read_csv<double>(path, {.label_column = "MEDV", .skip_lines = 1});
  REQUIRE(data.size() == 3);
  REQUIRE(data.dim() == 13);
  CHECK(data.targets[0] == 24.0);
  CHECK(data.targets[1] == 21.6);
  CHECK(data.targets[2] == 34.7);
  CHECK(data.features(0, 0) == 0.00632);
  CHECK(data.features(2, 12) == 4.03);
  CHECK(data.features(1, 7) == 4.9671);
  const auto by_index = dptrain::read_csv<double>(path, {.label_index = 2, .skip_lines = 1});
  CHECK(by_index.targets[1] == 7.07);
  CHECK(by_index.features(1, 2) == 0.0);  // CHAS, after INDUS was taken out

  // Without skip_lines, the line of counts is rejected as a header, or as the table's first line.
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path, {.label_column = "MEDV"}),
                    Catch::Contains(path + ", line 1, column 1") && Catch::Contains("CsvOptions::skip_lines = 1"));
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path, {.header = false}),
                    Catch::Contains(path + ", line 2: expected 2 fields, found 14 (line 1 has 2)") &&
                        Catch::Contains("if line 1 is not part of the table, skip it with CsvOptions::skip_lines = 1"));
}

TEST_CASE("read_csv: with skip_lines, messages keep the file's line numbers", "[io]") {
  test::TempDir dir("csv");
  // Skipped lines are not read (the second is not even CSV), blank or not; blank lines count too.
  const std::string path = dir.write("data.csv", "title\n\x01\x02 junk;;;\n\na,y\n1,2\n3,x\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path, {.skip_lines = 2}),
                    Catch::StartsWith("dptrain::read_csv: " + path + ", line 6, column 2: expected a number"));
  const std::string ragged = dir.write("ragged.csv", "# made by hand\na,b,y\n1,2,3\n\n4,5\n");
  CHECK_THROWS_WITH(dptrain::read_csv<double>(ragged, {.skip_lines = 1}),
                    Catch::Contains(ragged + ", line 5: expected 3 fields, found 2 (line 2 has 3)"));
  const std::string good = dir.write("good.csv", "\n\na,y\n1,2\n");
  CHECK(dptrain::read_csv<double>(good, {.skip_lines = 2}).targets[0] == 2.0);
  // skip_lines counts blank lines: skipping one of the two leaves a blank line, then the header.
  CHECK(dptrain::read_csv<double>(good, {.skip_lines = 1}).targets[0] == 2.0);
}

TEST_CASE("read_csv: skipping every line is a parse_error, a negative skip_lines an invalid_argument", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("data.csv", "150,4\n\n");
  CHECK_THROWS_WITH(
      dptrain::read_csv<double>(path, {.skip_lines = 1}),
      Catch::Contains(path + ", line 3") &&
          Catch::Contains("expected a header line and data rows after line 1 (CsvOptions::skip_lines = 1)"));
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path, {.header = false, .skip_lines = 5}),
                    Catch::Contains("expected data rows after line 5"));
  CHECK_THROWS_AS(dptrain::read_csv<double>(path, {.skip_lines = -1}), dptrain::invalid_argument);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path, {.skip_lines = -1}),
                    "dptrain::read_csv: CsvOptions::skip_lines must be at least 0, got -1");
}

TEST_CASE("read_csv: a gzipped file reads as the plain one, found by its magic bytes, not its name", "[io]") {
  test::TempDir dir("csv");
  // Enough rows for several blocks of compressed input and of decompressed text.
  std::string text = "# generated\n\"x\",\"w\",\"label\"\n";
  for (int i = 0; i < 40000; ++i)
    text += std::to_string(i) + "," + std::to_string(i % 97) + ".25," + std::to_string(i % 3) + "\n";
  const std::string plain = dir.write("plain.csv.gz", text);               // misleading name, plain text
  const std::string gzipped = csv_write_gzip(dir.file("data.csv"), text);  // no .gz, gzip data
  const CsvOptions options{.label_column = "label", .skip_lines = 1};
  const auto expected = dptrain::read_csv<float, Label>(plain, options);
  const auto got = dptrain::read_csv<float, Label>(gzipped, options);
  REQUIRE(expected.size() == 40000);
  CHECK(expected.features(39999, 0) == 39999.0F);
  CHECK(expected.features(39999, 1) == 35.25F);  // 39999 = 412 * 97 + 35
  CHECK(expected.targets[39999] == 0);
  REQUIRE(got.size() == expected.size());
  REQUIRE(got.dim() == expected.dim());
  CHECK(got.features == expected.features);
  CHECK(got.targets == expected.targets);
}

TEST_CASE("read_csv: gzip errors and the lines of a gzipped file", "[io]") {
  test::TempDir dir("csv");
  const std::string text = "a,y\n1,2\n3,x\n";
  const std::string path = csv_write_gzip(dir.file("bad.csv.gz"), text);
  // Line numbers count lines of the decompressed text.
  CHECK_THROWS_WITH(dptrain::read_csv<double>(path),
                    Catch::StartsWith("dptrain::read_csv: " + path + ", line 3, column 2: expected a number"));

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  REQUIRE(bytes.size() > 18);
  const std::string cut = dir.write("cut.csv.gz", bytes.substr(0, bytes.size() - 8));  // without the trailer
  CHECK_THROWS_AS(dptrain::read_csv<double>(cut), dptrain::parse_error);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(cut), Catch::Contains(cut + ", byte ") &&
                                                        Catch::Contains("of the decompressed data") &&
                                                        Catch::Contains("the gzip data is cut short"));
  std::string corrupt = bytes;
  corrupt[corrupt.size() - 6] = static_cast<char>(corrupt[corrupt.size() - 6] ^ 0xff);  // the CRC-32
  const std::string bad_crc = dir.write("crc.csv.gz", corrupt);
  CHECK_THROWS_WITH(dptrain::read_csv<double>(bad_crc),
                    Catch::Contains(bad_crc + ", byte ") && Catch::Contains("cannot decompress the gzip data"));
}

TEST_CASE("read_csv: a UTF-8 byte-order mark before the header is dropped", "[io]") {
  test::TempDir dir("csv");
  const std::string path = dir.write("excel.csv", "\xef\xbb\xbfsize,price\r\n1.5,10\r\n");
  const auto data = dptrain::read_csv<double>(path, {.label_column = "price"});
  REQUIRE(data.size() == 1);
  CHECK(data.features(0, 0) == 1.5);
  CHECK(data.targets[0] == 10.0);
  const auto by_name = dptrain::read_csv<double>(path, {.label_column = "size"});
  CHECK(by_name.targets[0] == 1.5);
}

TEST_CASE("read_csv: messages escape the bytes of a binary file and stay short", "[io]") {
  test::TempDir dir("csv");
  std::string binary;
  for (int b = 0x00; b <= 0x1f; ++b) binary += static_cast<char>(b);
  for (int b = 0x80; b <= 0xff; ++b) binary += static_cast<char>(b);
  std::string no_newline = binary;
  no_newline.erase(no_newline.find('\n'), 1);
  // The bytes as a whole file, and where each message quotes them: a header name, a feature, a label.
  const std::vector<std::pair<std::string, CsvOptions>> cases = {
      {binary, {}},
      {binary, {.header = false}},
      {"a," + no_newline + ",y\n1,2,3\n", {.label_column = "z"}},
      {"a,y\n" + no_newline + ",1\n", {}},
      {"a,y\n1," + no_newline + "\n", {}},
      {"a,y\n1,2\n" + binary + "\n", {}},
  };
  for (const auto& [text, options] : cases) {
    const std::string path = dir.write("binary.csv", text);
    try {
      (void)dptrain::read_csv<double, Label>(path, options);
      FAIL("read_csv returned for a binary file");
    } catch (const dptrain::parse_error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(csv_printable_ascii(what));
      CHECK(what.size() < path.size() + 400);
    }
  }
  // Exactly how bytes are shown: C escapes, 40 characters at most between the quotes.
  const std::string two = dir.write("two.csv", "a,y\n1,\x01\xff\t\"\\\r\n");
  CHECK_THROWS_WITH((dptrain::read_csv<double, Label>(two)),
                    Catch::EndsWith("expected an integer label, found \"\\x01\\xff\\t\\\"\\\\\""));
  const std::string long_field = dir.write("long.csv", "a,y\n1," + std::string(100, '\x80') + "\n");
  std::string ten_bytes;
  for (int i = 0; i < 10; ++i) ten_bytes += "\\x80";
  CHECK_THROWS_WITH((dptrain::read_csv<double, Label>(long_field)), Catch::EndsWith("found \"" + ten_bytes + "...\""));
}

TEST_CASE("read_csv: a large data set's features are read into 2 MiB pages where Linux offers them",
          "[io][huge_pages]") {
  // 1000 rows of 1100 features: 4.4 MB of floats, with at least one aligned 2 MiB page wholly inside.
  constexpr int rows = 1000, features = 1100;
  std::string text;
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < features; ++j) text += std::to_string((i + j) % 10) + ",";
    text += std::to_string(i % 3) + "\n";
  }
  test::TempDir dir("csv");
  const auto data = dptrain::read_csv<float, Label>(dir.write("large.csv", text), {.header = false});
  REQUIRE(data.size() == rows);
  REQUIRE(data.dim() == features);
  CHECK(data.features(999, 1099) == static_cast<float>((999 + 1099) % 10));
  CHECK(data.targets[999] == 999 % 3);
  if (test::transparent_huge_pages_available())
    CHECK(test::huge_page_kib(data.features.data() + data.features.size() / 2) > 0);
  else
    WARN("transparent huge pages are off on this system: only the values are checked");
}
