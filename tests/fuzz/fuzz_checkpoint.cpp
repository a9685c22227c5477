// SPDX-License-Identifier: MIT
// libFuzzer target for load_checkpoint, over three models and both scalar types.
//
// Input layout: byte 0 holds flags; the checkpoint file follows.
//   bits 0-1  the model: SoftmaxRegression<float>(3, 2), Mlp<double>({2, 3, 2}),
//             LinearRegression<float>(4), SoftmaxRegression<double>(3, 2)
//   bit 2     rewrite the file's last 4 bytes with the right CRC-32 first, so that inputs reach
//             the fields behind the checksum
// A load that returns must give optimizer buffers of θ's length and a file that save_checkpoint
// would write byte for byte (the encoding is canonical); a load that throws must leave θ as it was.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dptrain/io/checkpoint.hpp"
#include "dptrain/models/linear_regression.hpp"
#include "dptrain/models/mlp.hpp"
#include "dptrain/models/softmax_regression.hpp"
#include "fuzz_support.hpp"

namespace {

using fuzz::Outcome;

template <class M>
void load(const M& model, const std::vector<unsigned char>& file) {
  using Scalar = typename M::scalar_type;
  static fuzz::InputFile input("checkpoint");
  const std::string& path = input.write(file.data(), file.size());
  const dptrain::Vector<Scalar> before = dptrain::Vector<Scalar>::Constant(model.num_parameters(), Scalar(0.25));
  dptrain::Vector<Scalar> theta = before;
  dptrain::TrainingState<Scalar> state;
  const Outcome outcome = fuzz::run_read([&] { state = dptrain::load_checkpoint(path, model, theta); }, {path});
  if (outcome != Outcome::returned) {
    DPTRAIN_FUZZ_CHECK_OUTCOME(outcome, Outcome::parse_error);
    DPTRAIN_FUZZ_CHECK(std::equal(theta.data(), theta.data() + theta.size(), before.data(),
                                  [](Scalar a, Scalar b) { return std::memcmp(&a, &b, sizeof a) == 0; }));
    return;
  }
  for (const auto& buffer : state.optimizer_state) DPTRAIN_FUZZ_CHECK(buffer.size() == model.num_parameters());
  const std::uint32_t version = file[8];  // a load that returned read version 1 or 2 there
  DPTRAIN_FUZZ_CHECK(dptrain::detail::checkpoint::encode(model, theta, state, version) == file);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t flags = data[0];
  std::vector<unsigned char> file(data + 1, data + size);
  if ((flags & 4U) != 0 && file.size() >= 4) {
    const std::uint32_t crc = dptrain::detail::checkpoint::crc32_of(file.data(), file.size() - 4);
    for (std::size_t i = 0; i < 4; ++i) file[file.size() - 4 + i] = static_cast<unsigned char>(crc >> (8 * i));
  }
  switch (flags & 3U) {
    case 0:
      load(dptrain::SoftmaxRegression<float>(3, 2), file);
      break;
    case 1:
      load(dptrain::Mlp<double>({2, 3, 2}), file);
      break;
    case 2:
      load(dptrain::LinearRegression<float>(4), file);
      break;
    default:
      load(dptrain::SoftmaxRegression<double>(3, 2), file);
      break;
  }
  return 0;
}
