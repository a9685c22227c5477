// SPDX-License-Identifier: MIT
// checksum(): every data set's hash changes with any value, target or feature scaling, and only then.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <vector>

#include "dptrain/detail/checksum.hpp"
#include "dptrain/dptrain.hpp"
#include "support/data.hpp"
#include "support/sparse_data.hpp"

using dptrain::Index;
using dptrain::Label;

TEST_CASE("checksum: every length, every byte and the seed count", "[data]") {
  std::vector<unsigned char> bytes(100);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
  std::set<std::uint64_t> seen;
  for (std::size_t size = 0; size <= bytes.size(); ++size) {  // the 32-byte body and every tail
    const std::uint64_t h = dptrain::detail::checksum(bytes.data(), size);
    CHECK(h == dptrain::detail::checksum(bytes.data(), size));
    seen.insert(h);
    for (std::size_t at = 0; at < size; ++at) {
      std::vector<unsigned char> changed(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
      changed[at] ^= 1U;
      seen.insert(dptrain::detail::checksum(changed.data(), size));
    }
  }
  CHECK(seen.size() == 1 + 100 + 100 * 101 / 2);  // all different
  CHECK(dptrain::detail::checksum(bytes.data(), 40, 1) != dptrain::detail::checksum(bytes.data(), 40, 2));
}

TEST_CASE("checksum: a data set's changes with any feature or target", "[data]") {
  SECTION("DenseDataset") {
    const auto data = test::cluster_data<float>(50, 4, 3, 1);
    auto other = data;
    CHECK(other.checksum() == data.checksum());
    other.features(49, 3) += 1e-6F;
    CHECK(other.checksum() != data.checksum());
    other = data;
    other.targets[0] = (other.targets[0] + 1) % 3;
    CHECK(other.checksum() != data.checksum());
    CHECK(test::cluster_data<float>(50, 4, 3, 2).checksum() != data.checksum());  // other draws, same shape
  }
  SECTION("SparseDataset") {
    const auto data = test::random_sparse<double>(40, 30, 0.2, 2, 3);
    auto other = data;
    CHECK(other.checksum() == data.checksum());
    other.features.valuePtr()[other.features.nonZeros() - 1] *= 2;
    CHECK(other.checksum() != data.checksum());
    other = data;
    other.features.innerIndexPtr()[0] = other.features.innerIndexPtr()[0] == 0 ? 1 : 0;  // the same value elsewhere
    CHECK(other.checksum() != data.checksum());
    other = data;
    other.targets[39] = other.targets[39] == 0 ? 1 : 0;
    CHECK(other.checksum() != data.checksum());
  }
  SECTION("ByteDataset") {
    dptrain::ByteDataset<float, Label> data{dptrain::ByteMatrix::Constant(20, 6, 7), dptrain::Vector<Label>::Zero(20),
                                            dptrain::Vector<float>::Constant(6, 1.0F / 255),
                                            dptrain::Vector<float>::Zero(6)};
    auto other = data;
    CHECK(other.checksum() == data.checksum());
    other.bytes(19, 5) = 8;
    CHECK(other.checksum() != data.checksum());
    other = data;
    other.offset[2] = 0.5F;
    CHECK(other.checksum() != data.checksum());
    other = data;
    other.scale[0] = 1.0F;
    CHECK(other.checksum() != data.checksum());
  }
}
