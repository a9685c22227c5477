// SPDX-License-Identifier: MIT
#include "dptrain/data/huge_pages.hpp"

#include <catch2/catch.hpp>

#include <vector>

#include "support/huge_pages.hpp"

using dptrain::Index;

TEST_CASE("huge_page_matrix: a plain matrix of the asked shape, whatever its size", "[data][huge_pages]") {
  for (const auto& [rows, cols] : std::vector<std::pair<Index, Index>>{{0, 0}, {0, 5}, {3, 4}, {1000, 784}}) {
    dptrain::RowMatrix<float> x = dptrain::huge_page_matrix<float>(rows, cols);
    REQUIRE(x.rows() == rows);
    REQUIRE(x.cols() == cols);
    x.setConstant(0.5f);
    CHECK((x.array() == 0.5f).all());
  }
}

TEST_CASE("huge_page_matrix: a large matrix, once written, sits on 2 MiB pages where Linux offers them",
          "[data][huge_pages]") {
  // 64 MiB: wholly inside lie at least 31 aligned 2 MiB pages.
  dptrain::RowMatrix<double> x = dptrain::huge_page_matrix<double>(8192, 1024);
  x.setConstant(1.0);
  const double* middle = x.data() + x.size() / 2;
  if (!test::transparent_huge_pages_available()) {
    WARN("transparent huge pages are off on this system: only the values are checked");
  } else {
    // Not all of them: the kernel may fall back to small pages when memory is fragmented.
    CHECK(test::huge_page_kib(middle) > 0);
  }
  if (test::transparent_huge_pages_setting() == "madvise") {
    // The contrast: where only advised memory gets huge pages, a plain matrix gets none.
    dptrain::RowMatrix<double> plain(8192, 1024);
    plain.setConstant(1.0);
    CHECK(test::huge_page_kib(plain.data() + plain.size() / 2) == 0);
  }
  CHECK((x.array() == 1.0).all());
}

TEST_CASE("advise_huge_pages: nothing to advise below one whole aligned 2 MiB page", "[data][huge_pages]") {
  std::vector<char> small(1 << 20);
  CHECK_FALSE(dptrain::detail::advise_huge_pages(small.data(), small.size()));
  CHECK_FALSE(dptrain::detail::advise_huge_pages(nullptr, 0));
}
