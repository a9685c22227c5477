// SPDX-License-Identifier: MIT
// Contiguous rows of any data set: a view where it has one, else copied into a buffer.
#pragma once

#include <algorithm>
#include <string>

#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain::detail {

/// Whether D's contiguous rows are a view of its storage (DenseDataset, SparseDataset) rather than
/// copied into a buffer by rows(begin, count, buffer) (ByteDataset, whose bytes become Scalars).
template <class D>
inline constexpr bool views_rows = requires(const D& d, Index i) {
  d.rows(i, i);
};

/// What read_rows() needs to read up to `rows` contiguous rows of `data`: a buffer where they are
/// copied, nothing where they are a view (a data set with views needs no make_buffer()).
struct NoBuffer {};
template <class D>
[[nodiscard]] auto rows_buffer(const D& data, Index rows) {
  if constexpr (views_rows<D>)
    return NoBuffer{};
  else
    return data.make_buffer(rows);
}

/// Rows [begin, begin + count) of `data`: its view, or its copy into `buffer`.
template <class D, class Buffer>
[[nodiscard]] auto read_rows(const D& data, Index begin, Index count, Buffer& buffer) {
  if constexpr (views_rows<D>)
    return data.rows(begin, count);
  else
    return data.rows(begin, count, buffer);
}

/// model.validate() on every row of `data`: at once where the rows are a view, else in blocks of
/// `block` rows copied into one buffer (a block's error names the block, as the row a model's
/// message names counts from the block's first row).
template <class M, class D>
void validate_rows(const M& model, const D& data, Index block = 4096) {
  if constexpr (views_rows<D>) {
    model.validate(data.rows(0, data.size()));
  } else {
    const Index n = data.size();
    typename D::Buffer buffer = data.make_buffer(std::min(block, n));
    Index begin = 0;
    do {
      const Index count = std::min(block, n - begin);
      try {
        model.validate(data.rows(begin, count, buffer));
      } catch (const invalid_argument& e) {
        throw invalid_argument("dptrain: in rows " + std::to_string(begin) + " to " +
                               std::to_string(begin + count - 1) + " of the data set (the rows below count from " +
                               std::to_string(begin) + "): " + e.what());
      }
      begin += count;
    } while (begin < n);
  }
}

}  // namespace dptrain::detail
