// SPDX-License-Identifier: MIT
// AlignedBuffer: a zero-initialised, cache-line aligned array of scalars, padded to whole lines.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>

#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief Owns `size` scalars starting on a cache line and padded to a whole number of lines,
 * so buffers of different threads never share a line. Copying copies the values.
 */
template <class Scalar>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(Index size) : size_(size), data_(allocate(size)) {}
  AlignedBuffer(const AlignedBuffer& other) : AlignedBuffer(other.size_) {
    std::copy(other.data(), other.data() + size_, data());
  }
  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(const AlignedBuffer& other) {
    if (this != &other) *this = AlignedBuffer(other);
    return *this;
  }
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;
  ~AlignedBuffer() = default;

  [[nodiscard]] Index size() const noexcept { return size_; }
  [[nodiscard]] Scalar* data() noexcept { return data_.get(); }
  [[nodiscard]] const Scalar* data() const noexcept { return data_.get(); }
  [[nodiscard]] VectorMap<Scalar> map() noexcept { return {data_.get(), size_}; }
  [[nodiscard]] ConstVectorMap<Scalar> map() const noexcept { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(Scalar* p) const noexcept { ::operator delete[](p, std::align_val_t{cache_line_bytes}); }
  };

  static std::unique_ptr<Scalar[], Free> allocate(Index size) {
    constexpr auto line = static_cast<Index>(cache_line_bytes / sizeof(Scalar));
    const Index padded = std::max<Index>(line, (size + line - 1) / line * line);
    auto* p = static_cast<Scalar*>(
        ::operator new[](static_cast<std::size_t>(padded) * sizeof(Scalar), std::align_val_t{cache_line_bytes}));
    std::fill(p, p + padded, Scalar(0));
    return std::unique_ptr<Scalar[], Free>(p);
  }

  Index size_ = 0;
  std::unique_ptr<Scalar[], Free> data_;
};

}  // namespace dptrain
