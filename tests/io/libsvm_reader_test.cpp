// SPDX-License-Identifier: MIT
// Tests of read_libsvm: good files in every label mode, and each malformed input with its line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dptrain/io/libsvm_reader.hpp"
#include "support/temp_dir.hpp"

namespace {

using dptrain::Index;
using dptrain::Label;
using dptrain::LabelMode;
using dptrain::RowMatrix;

// A file in a folder of its own: ctest runs the test cases as parallel processes.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) : path_(dir_.write(name, text)) {}
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  test::TempDir dir_{"libsvm"};
  std::string path_;
};

template <class Scalar = double, class Target = Label>
dptrain::LibsvmData<Scalar, Target> read(const std::string& text, const dptrain::LibsvmOptions& options = {}) {
  const TempFile file("read.svm", text);
  return dptrain::read_libsvm<Scalar, Target>(file.path(), options);
}

}  // namespace

TEMPLATE_TEST_CASE("read_libsvm: reads regression targets as they are", "[io]", float, double) {
  const auto file = read<TestType, TestType>(
      "# a header comment\n"
      "1.5 1:0.5 3:-2 # trailing comment\n"
      "\n"
      "-2e-1\t2:1e3  4:+7\r\n"
      "   \n"
      "+3 \n"  // a row with no features
      "0 1:.25 4:0\n");
  const auto& data = file.data;
  data.validate();
  CHECK(file.classes.empty());
  REQUIRE(data.size() == 4);
  REQUIRE(data.dim() == 4);
  CHECK(data.features.isCompressed());
  CHECK(data.nonzeros() == 6);  // the explicit 4:0 is kept
  RowMatrix<TestType> expected(4, 4);
  expected << TestType(0.5), 0, -2, 0,  //
      0, 1000, 0, 7,                    //
      0, 0, 0, 0,                       //
      TestType(0.25), 0, 0, 0;
  CHECK(RowMatrix<TestType>(data.features.toDense()) == expected);
  CHECK(data.targets[0] == TestType(1.5));
  CHECK(data.targets[1] == TestType(-0.2));
  CHECK(data.targets[2] == TestType(3));
  CHECK(data.targets[3] == TestType(0));
}

TEST_CASE("read_libsvm: binary mode maps -1 and +1, or 0 and 1, to 0 and 1", "[io]") {
  const auto pm = read("+1 1:1\n-1 2:1\n-1 1:2\n1 3:1\n");
  CHECK(pm.data.targets == dptrain::Vector<Label>{{1, -1, -1, 1}}.eval());  // as_is with Label: integers as they are
  const auto plus_minus = read("+1 1:1\n-1 2:1\n-1 1:2\n1 3:1\n", {.labels = LabelMode::binary});
  CHECK(plus_minus.data.targets == dptrain::Vector<Label>{{1, 0, 0, 1}}.eval());
  CHECK(plus_minus.classes == std::vector<double>{-1, 1});
  const auto zero_one = read("0 1:1\n1 2:1\n1.0 1:2\n", {.labels = LabelMode::binary});
  CHECK(zero_one.data.targets == dptrain::Vector<Label>{{0, 1, 1}}.eval());
  CHECK(zero_one.classes == std::vector<double>{0, 1});
  const auto positive_only = read("1 1:1\n", {.labels = LabelMode::binary});
  CHECK(positive_only.data.targets[0] == 1);
  CHECK(positive_only.classes == std::vector<double>{-1, 1});
}

TEST_CASE("read_libsvm: multiclass mode maps labels to 0 to k-1 in sorted order", "[io]") {
  const std::string text = "7 1:1\n-3 2:1\n2 3:1\n7 1:1 2:2\n2 # comment\n";
  const auto file = read(text, {.labels = LabelMode::multiclass});
  CHECK(file.classes == std::vector<double>{-3, 2, 7});
  CHECK(file.data.targets == dptrain::Vector<Label>{{2, 0, 1, 2, 1}}.eval());
  CHECK(file.data.dim() == 3);

  // Given classes (e.g. from a training file) keep their order and reject unknown labels.
  const auto given = read(text, {.labels = LabelMode::multiclass, .classes = {7, 2, -3, 11}});
  CHECK(given.classes == std::vector<double>{7, 2, -3, 11});
  CHECK(given.data.targets == dptrain::Vector<Label>{{0, 2, 1, 0, 1}}.eval());
  CHECK_THROWS_AS(read(text, {.labels = LabelMode::multiclass, .classes = {7, 2}}), dptrain::parse_error);
  CHECK_THROWS_WITH(read(text, {.labels = LabelMode::multiclass, .classes = {7, 2}}),
                    Catch::Contains("line 2") && Catch::Contains("label -3 is not one of options.classes"));
  CHECK_THROWS_AS(read(text, {.labels = LabelMode::multiclass, .classes = {1, 1}}), dptrain::invalid_argument);
}

TEST_CASE("read_libsvm: options.features sets the dimension and qid is skipped", "[io]") {
  const auto file = read("1 qid:3 2:1 5:2\n0 qid:4\n", {.features = 10});
  CHECK(file.data.dim() == 10);
  CHECK(file.data.nonzeros() == 2);
  CHECK(file.data.features.coeff(0, 4) == 2.0);
  CHECK(read("1 5:1\n", {.features = 5}).data.dim() == 5);
  CHECK_THROWS_AS(read("1 1:1\n", {.features = -1}), dptrain::invalid_argument);
}

TEST_CASE("read_libsvm: malformed input throws parse_error naming the line and what was expected", "[io]") {
  struct Case {
    std::string text;
    Index features;  // the options, as two fields: GCC 12 warns falsely on a vector inside this table
    LabelMode labels;
    std::string line;
    std::string message;
  };
  const std::vector<Case> cases{
      {"1 1:1\n# c\nabc 1:2\n", 0, LabelMode::as_is, "line 3", "expected a numeric label, found 'abc'"},
      {"1 1:1\n\nnan 1:2\n", 0, LabelMode::as_is, "line 3", "expected a numeric label"},
      {"1 1:x\n", 0, LabelMode::as_is, "line 1", "expected a numeric value in <index>:<value>, found '1:x'"},
      {"1 1:1\n1 2:inf\n", 0, LabelMode::as_is, "line 2", "is not a finite"},
      {"1 1:1e39\n", 0, LabelMode::as_is, "line 1", "is not a finite"},  // read as float below
      {"1 1:1\n1 2:1 3\n", 0, LabelMode::as_is, "line 2", "expected <index>:<value>, found '3'"},
      {"1 1:1\n1 :1\n", 0, LabelMode::as_is, "line 2", "expected <index>:<value>, found ':1'"},
      {"1 1:1\n1 2:\n", 0, LabelMode::as_is, "line 2", "expected <index>:<value>, found '2:'"},
      {"1 a:1\n", 0, LabelMode::as_is, "line 1", "expected an integer feature index"},
      {"1 1.5:1\n", 0, LabelMode::as_is, "line 1", "expected an integer feature index"},
      {"1 2:1 qid:3\n", 0, LabelMode::as_is, "line 1",
       "expected an integer feature index in <index>:<value>, found 'qid:3'"},
      {"1 qid:x 1:1\n", 0, LabelMode::as_is, "line 1", "expected qid:<integer>"},
      {"1 1:1\n1 2:1\n1 0:1\n", 0, LabelMode::as_is, "line 3", "feature index 0 is not positive"},
      {"1 -2:1\n", 0, LabelMode::as_is, "line 1", "feature index -2 is not positive"},
      {"1 1:1\n1 3:1 2:1\n", 0, LabelMode::as_is, "line 2",
       "feature index 2 after 3: indices must be strictly increasing"},
      {"1 1:1\n1 3:1 3:1\n", 0, LabelMode::as_is, "line 2", "feature index 3 after 3"},
      {"1 1:1\n1 2:1\n1 11:1\n", 10, LabelMode::as_is, "line 3", "feature index 11 is above options.features = 10"},
      {"1 1:1\n1.5 1:1\n", 0, LabelMode::binary, "line 2", "expected an integer label, found '1.5'"},
      {"1 1:1\n0 1:1\n2.5 1:1\n", 0, LabelMode::multiclass, "line 3", "expected an integer label"},
      {"1 1:1\n1.5 1:1\n", 0, LabelMode::as_is, "line 2", "expected an integer label"},  // as_is with a Label target
      {"1 1:1\n-1 1:1\n0 1:1\n", 0, LabelMode::binary, "line 3",
       "more than two distinct labels in binary mode: label 0, but line 2 has label -1"},
      {"0 1:1\n1 1:1\n-1 1:1\n", 0, LabelMode::binary, "line 3", "more than two distinct labels"},
      {"1 1:1\n2 1:1\n", 0, LabelMode::binary, "line 2", "expected a binary label -1, 0 or +1, found 2"},
      {"", 0, LabelMode::as_is, "line 1", "the file has none"},
      {"# only\n\n# comments\n", 0, LabelMode::as_is, "line 4", "the file has none"},
  };
  for (const Case& c : cases) {
    INFO("file: " << c.text);
    const TempFile file("bad.svm", c.text);
    const dptrain::LibsvmOptions options{.features = c.features, .labels = c.labels};
    const auto call = [&] { return dptrain::read_libsvm<float, Label>(file.path(), options); };
    CHECK_THROWS_AS(call(), dptrain::parse_error);
    CHECK_THROWS_WITH(call(), Catch::StartsWith("dptrain::read_libsvm: " + file.path() + ", " + c.line + ": ") &&
                                  Catch::Contains(c.message));
    try {
      static_cast<void>(call());
    } catch (const dptrain::parse_error& e) {
      CHECK(e.file() == file.path());
      CHECK(e.location() == c.line);
    }
  }
}

TEST_CASE("read_libsvm: a missing file throws dptrain::error", "[io]") {
  CHECK_THROWS_AS(dptrain::read_libsvm<double>("/nonexistent/dptrain/file.svm"), dptrain::error);
  CHECK_THROWS_WITH(dptrain::read_libsvm<double>("/nonexistent/dptrain/file.svm"),
                    Catch::Contains("dptrain::read_libsvm: cannot open"));
}

TEST_CASE("read_libsvm: a label beyond the target type's range is a parse_error, not inf", "[io]") {
  const TempFile file("big.svm", "1 1:1\n1e39 1:2\n");  // fine as a double, too large for a float
  CHECK_THROWS_WITH((dptrain::read_libsvm<float, float>(file.path())),
                    Catch::Contains("line 2: label 1e39 does not fit the target type"));
  CHECK(dptrain::read_libsvm<double, double>(file.path()).data.targets[1] == 1e39);
}
