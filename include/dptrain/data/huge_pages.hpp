// SPDX-License-Identifier: MIT
// Large data sets on 2 MiB pages.
//
// Why: a shuffled batch reads rows scattered over the whole data set. With 4 KiB pages the TLB
// covers a few MiB, so nearly every row of a larger data set (Fashion-MNIST: 188 MB) costs a page
// walk, and a 3 KB row crosses a page boundary three times in four, where the hardware
// prefetcher stops. On 2 MiB pages the whole data set fits in the TLB. Linux backs anonymous
// memory with them ("transparent huge pages") where the program asks for it with madvise, the
// default of Debian's kernels, and only for memory not written yet: so the advice comes when the
// storage is allocated, before it is filled. (Collapsing filled memory, MADV_COLLAPSE, took 226 ms
// for Fashion-MNIST on an AMD EPYC Zen 2 VM: more than it saves in a short training run.)
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "dptrain/core/types.hpp"

namespace dptrain {

namespace detail {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

/// Advises Linux to back the 2 MiB pages that lie wholly inside [data, data + bytes) with huge
/// pages when they are first written. True when there was such a page and the kernel accepted the
/// advice (it may still use small pages: with transparent huge pages off, or no free 2 MiB page);
/// false on other systems and for a range without a whole 2 MiB page.
inline bool advise_huge_pages(void* data, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  const std::uintptr_t last = (begin + bytes) & ~(huge_page_bytes - 1);
  if (last <= first) return false;
  return madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) == 0;
#else
  static_cast<void>(data), static_cast<void>(bytes);
  return false;
#endif
}

}  // namespace detail

/**
 * @brief A rows × cols row-major matrix, not initialised, whose storage Linux backs with 2 MiB
 * pages as it is first written, where it can. For the features of a data set larger than a few
 * MiB, filled after this call: shuffled batches then read their rows without a page walk each.
 *
 * The readers (read_idx, read_csv) allocate their features this way. The values and the training
 * results are the same either way; only the gather of shuffled rows gets faster (Fashion-MNIST on
 * an AMD EPYC Zen 2 VM: 256 shuffled rows in 69 µs instead of 90, benchmarks/RESULTS.md). Elsewhere, or with
 * transparent huge pages turned off, it is a plain matrix.
 *
 * @code
 * dptrain::RowMatrix<float> x = dptrain::huge_page_matrix<float>(60000, 784);
 * for (dptrain::Index i = 0; i < x.rows(); ++i) x.row(i) = load_sample(i);  // first write: 2 MiB pages
 * dptrain::DenseDataset<float, dptrain::Label> data{.features = std::move(x), .targets = y};
 * @endcode
 */
template <class Scalar>
[[nodiscard]] RowMatrix<Scalar> huge_page_matrix(Index rows, Index cols) {
  RowMatrix<Scalar> matrix(rows, cols);
  detail::advise_huge_pages(matrix.data(), static_cast<std::size_t>(matrix.size()) * sizeof(Scalar));
  return matrix;
}

}  // namespace dptrain
