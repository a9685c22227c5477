// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <string>

#include "dptrain/io/csv_reader.hpp"
#include "support/temp_dir.hpp"

using dptrain::CsvOptions;
using dptrain::Label;

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
