// SPDX-License-Identifier: MIT
// save_checkpoint, load_checkpoint: θ and the training state in one versioned, checksummed file.
#pragma once

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "dptrain/concepts.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/training_state.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/**
 * @brief The architecture a checkpoint records: the model's `shape()` when it has one (every
 * built-in model: e.g. "mlp 784-256-10"), else its parameter count ("parameters 7850").
 */
template <class M>
[[nodiscard]] std::string model_shape(const M& model) {
  if constexpr (requires {
                  { model.shape() } -> std::convertible_to<std::string>;
                })
    return model.shape();
  else
    return "parameters " + std::to_string(model.num_parameters());
}

namespace detail::checkpoint {

/// "DPTRNCKP": the first 8 bytes of every checkpoint.
inline constexpr std::string_view magic = "DPTRNCKP";
/// The format written; load_checkpoint reads it and version 1 (which has no RunSetup).
inline constexpr std::uint32_t version = 2;

// Fixed-width little-endian integers, appended to a byte string.
class Writer {
 public:
  template <class T>
  void integer(T value) {
    using U = std::make_unsigned_t<T>;
    auto bits = static_cast<U>(value);
    for (std::size_t i = 0; i < sizeof(U); ++i, bits = static_cast<U>(bits >> 8))
      bytes_.push_back(static_cast<unsigned char>(bits & 0xFFU));
  }
  template <class Scalar>
  void scalars(const Scalar* values, Index count) {
    using Bits = std::conditional_t<sizeof(Scalar) == 4, std::uint32_t, std::uint64_t>;
    for (Index i = 0; i < count; ++i) integer(std::bit_cast<Bits>(values[i]));
  }
  void text(std::string_view s) {
    integer(static_cast<std::uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void raw(std::string_view s) { bytes_.insert(bytes_.end(), s.begin(), s.end()); }
  [[nodiscard]] std::vector<unsigned char>& bytes() noexcept { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

// The reverse of Writer, over a whole file in memory; every read is bounds-checked and a short
// read names the byte offset and what it expected.
class Reader {
 public:
  Reader(const std::string& path, const std::vector<unsigned char>& bytes, std::size_t end)
      : path_(path), bytes_(bytes), end_(end) {}

  template <class T>
  T integer(const char* what) {
    using U = std::make_unsigned_t<T>;
    need(sizeof(U), what);
    U bits = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) bits = static_cast<U>(bits | U(bytes_[at_ + i]) << (8 * i));
    at_ += sizeof(U);
    return static_cast<T>(bits);
  }
  template <class Scalar>
  void scalars(Scalar* values, Index count, const char* what) {
    using Bits = std::conditional_t<sizeof(Scalar) == 4, std::uint32_t, std::uint64_t>;
    need(static_cast<std::size_t>(count) * sizeof(Scalar), what);
    for (Index i = 0; i < count; ++i) values[i] = std::bit_cast<Scalar>(integer<Bits>(what));
  }
  std::string text(const char* what) {
    const auto size = integer<std::uint32_t>(what);
    need(size, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return s;
  }
  bool flag(const char* what) {
    const std::size_t at = at_;
    const auto value = integer<std::uint8_t>(what);
    if (value > 1)
      throw parse_error("dptrain::load_checkpoint", path_, "byte " + std::to_string(at),
                        std::string("expected ") + what);
    return value == 1;
  }
  void skip(std::size_t count) {
    need(count, "more bytes");
    at_ += count;
  }
  [[nodiscard]] std::size_t offset() const noexcept { return at_; }
  [[nodiscard]] std::size_t left() const noexcept { return end_ - at_; }

 private:
  void need(std::size_t count, const char* what) const {
    if (count > end_ - at_)
      throw parse_error("dptrain::load_checkpoint", path_, "byte " + std::to_string(at_),
                        std::string("expected ") + what + " (" + std::to_string(count) + " bytes), but only " +
                            std::to_string(end_ - at_) + " bytes are left: the file is truncated");
  }

  const std::string& path_;
  const std::vector<unsigned char>& bytes_;
  std::size_t end_, at_ = 0;
};

[[nodiscard]] inline std::uint32_t crc32_of(const unsigned char* data, std::size_t size) noexcept {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  while (size > 0) {  // zlib takes uInt lengths
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, std::numeric_limits<uInt>::max()));
    crc = ::crc32(crc, data, chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

[[noreturn]] inline void fail_system(const std::string& what, const std::string& path) {
  throw error("dptrain::save_checkpoint: " + what + " " + path + ": " + std::generic_category().message(errno));
}

// Writes `bytes` to `path` so that a crash at any moment leaves either the old file or the new
// one: a temporary file in the same folder, fsync, rename over the old one, fsync the folder.
inline void write_atomically(const std::string& path, const std::vector<unsigned char>& bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_system("cannot create", temporary);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ::ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      errno = saved;
      fail_system("cannot write", temporary);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail_system("cannot flush", temporary);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail_system("cannot rename " + temporary + " to", path);
  }
  // The rename itself is durable once the folder's entry is on disk.
  const std::size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

[[nodiscard]] inline std::vector<unsigned char> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("dptrain::load_checkpoint: cannot open checkpoint " + path);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw error("dptrain::load_checkpoint: cannot read checkpoint " + path);
  return bytes;
}

/// The bytes of a checkpoint (format: see save_checkpoint); θ and the buffers have the model's
/// length. `format` 1 leaves out state.made_by (the fuzz test re-encodes version-1 files).
template <class M>
[[nodiscard]] std::vector<unsigned char> encode(const M& model, ConstVectorRef<typename M::scalar_type> theta,
                                                const TrainingState<typename M::scalar_type>& state,
                                                std::uint32_t format = version) {
  using Scalar = typename M::scalar_type;
  const Index n = model.num_parameters();
  detail::checkpoint::Writer out;
  out.raw(detail::checkpoint::magic);
  out.integer(format);
  out.integer(static_cast<std::uint32_t>(sizeof(Scalar)));
  out.integer(static_cast<std::uint64_t>(n));
  out.text(model_shape(model));
  out.integer(static_cast<std::int64_t>(state.step));
  out.integer(static_cast<std::int64_t>(state.epoch));
  out.integer(static_cast<std::int64_t>(state.epoch_step));
  out.integer(static_cast<std::int64_t>(state.plan.samples));
  out.integer(static_cast<std::int64_t>(state.plan.batch_size));
  out.integer(static_cast<std::int64_t>(state.plan.accumulation_steps));
  out.integer(static_cast<std::uint8_t>(state.plan.drop_last ? 1 : 0));
  out.integer(static_cast<std::uint8_t>(state.plan.shuffle ? 1 : 0));
  out.integer(state.plan.seed);
  if (format >= 2) {
    const RunSetup& run = state.made_by;
    out.integer(static_cast<std::int64_t>(run.threads));
    out.integer(static_cast<std::int64_t>(run.ranks));
    out.integer(static_cast<std::int64_t>(run.shards));
    for (const PolicySetup* policy : {&run.synchronizer, &run.optimizer}) {
      out.text(policy->name);
      out.integer(static_cast<std::uint32_t>(policy->settings.size()));
      for (const Setting& setting : policy->settings) {
        out.text(setting.name);
        out.scalars(&setting.value, 1);
      }
    }
  }
  out.integer(static_cast<std::uint32_t>(state.optimizer_state.size()));
  out.scalars(theta.data(), n);
  for (const AlignedBuffer<Scalar>& buffer : state.optimizer_state) out.scalars(buffer.data(), n);
  out.integer(detail::checkpoint::crc32_of(out.bytes().data(), out.bytes().size()));
  return std::move(out.bytes());
}

}  // namespace detail::checkpoint

/**
 * @brief Writes θ and the training state to `path`, atomically: a crash during the write leaves
 * the previous file at `path` intact.
 *
 * Format (version 2, all integers little-endian, floats as their IEEE-754 bits):
 * "DPTRNCKP", u32 version, u32 scalar size (4: float, 8: double), u64 parameter count n,
 * the model's shape as u32 length + text, i64 step, epoch, epoch_step, the sampling plan
 * (i64 samples, batch_size, accumulation_steps, u8 drop_last, u8 shuffle, u64 seed), the run
 * that made it (state.made_by: i64 threads, ranks, shards, then the synchronizer and the
 * optimizer, each a text name, u32 settings and per setting a text name and an f64 value),
 * u32 optimizer buffers k, then θ and the k buffers (n scalars each), and last a u32 CRC-32
 * (zlib's) of every byte before it. Texts are a u32 length and the bytes. Version 1 is the same
 * without the run. docs/checkpoints.md has the table.
 *
 * @param path  the file; its folder must exist. A temporary `path.tmp.<pid>` is written first.
 * @param model the model θ belongs to (for its shape)
 * @param theta the parameters, of length model.num_parameters()
 * @param state ctx.state in a hook, or the state load_checkpoint returned
 * @throws dptrain::invalid_argument when θ or the optimizer buffers have the wrong length
 * @throws dptrain::error when the file cannot be written (the message names it and the reason)
 */
template <Model M>
void save_checkpoint(const std::string& path, const M& model, ConstVectorRef<typename M::scalar_type> theta,
                     const TrainingState<typename M::scalar_type>& state) {
  using Scalar = typename M::scalar_type;
  const Index n = model.num_parameters();
  if (theta.size() != n)
    throw invalid_argument("dptrain::save_checkpoint: theta has " + std::to_string(theta.size()) +
                           " values but the model has " + std::to_string(n) + " parameters");
  for (const AlignedBuffer<Scalar>& buffer : state.optimizer_state)
    if (buffer.size() != n)
      throw invalid_argument("dptrain::save_checkpoint: an optimizer buffer has " + std::to_string(buffer.size()) +
                             " values but the model has " + std::to_string(n) + " parameters");
  detail::checkpoint::write_atomically(path, detail::checkpoint::encode(model, theta, state));
}

/**
 * @brief Reads a checkpoint written by save_checkpoint: writes θ and returns the training state,
 * ready for DataParallelTrainer::resume.
 *
 * Reads format versions 1 and 2; a version-1 file gives a state whose `made_by` is unknown
 * (resume() then says that it could not compare the runs). Everything is checked before θ is
 * touched: on any exception θ keeps its value.
 *
 * @param theta receives the parameters; must have model.num_parameters() values
 * @throws dptrain::parse_error naming the file and byte offset for a file that is not a
 *         checkpoint, a truncated file, trailing bytes, a checksum mismatch (any flipped bit),
 *         a format version other than 1 and 2, or a scalar type, parameter count or model shape that differ
 *         from `model`'s
 * @throws dptrain::invalid_argument when θ has the wrong length
 * @throws dptrain::error when the file cannot be opened or read
 */
template <Model M>
[[nodiscard]] TrainingState<typename M::scalar_type> load_checkpoint(const std::string& path, const M& model,
                                                                     VectorRef<typename M::scalar_type> theta) {
  using Scalar = typename M::scalar_type;
  const Index n = model.num_parameters();
  if (theta.size() != n)
    throw invalid_argument("dptrain::load_checkpoint: theta has " + std::to_string(theta.size()) +
                           " values but the model has " + std::to_string(n) + " parameters");
  const std::vector<unsigned char> bytes = detail::checkpoint::read_whole_file(path);
  const auto fail = [&](std::size_t at, const std::string& problem) {
    throw parse_error("dptrain::load_checkpoint", path, "byte " + std::to_string(at), problem);
  };

  // Magic, version, checksum: in this order, so that another kind of file, another format and a
  // damaged file are each named as such, before any field is believed.
  const std::string_view magic = detail::checkpoint::magic;
  if (bytes.size() < magic.size() || !std::equal(magic.begin(), magic.end(), bytes.begin()))
    fail(0, "expected the checkpoint magic \"DPTRNCKP\": this is not a dptrain checkpoint");
  if (bytes.size() < magic.size() + 8) fail(bytes.size(), "the file ends inside the header: it is truncated");
  detail::checkpoint::Reader in(path, bytes, bytes.size() - 4);
  in.skip(magic.size());
  const auto version = in.integer<std::uint32_t>("the format version");
  static_assert(detail::checkpoint::version == 2, "the versions read are named below");
  if (version != 1 && version != 2)
    fail(magic.size(), "format version " + std::to_string(version) + ", but this dptrain reads versions 1 and 2");
  detail::checkpoint::Reader crc_field(path, bytes, bytes.size());
  crc_field.skip(bytes.size() - 4);
  const auto stored = crc_field.integer<std::uint32_t>("the checksum");
  const std::uint32_t computed = detail::checkpoint::crc32_of(bytes.data(), bytes.size() - 4);
  if (stored != computed)
    fail(bytes.size() - 4, "checksum mismatch (stored " + std::to_string(stored) + ", computed " +
                               std::to_string(computed) + "): the file is damaged or truncated");

  // The header, checked against the model.
  std::size_t at = in.offset();
  const auto scalar_size = in.integer<std::uint32_t>("the scalar size");
  if (scalar_size != sizeof(Scalar))
    fail(at, "the checkpoint holds " +
                 std::string(scalar_size == 4   ? "float"
                             : scalar_size == 8 ? "double"
                                                : "unknown") +
                 " parameters, but the model's scalar type is " + (sizeof(Scalar) == 4 ? "float" : "double"));
  at = in.offset();
  const auto count = in.integer<std::uint64_t>("the parameter count");
  if (count != static_cast<std::uint64_t>(n))
    fail(at, "the checkpoint holds " + std::to_string(count) + " parameters, but the model has " + std::to_string(n));
  at = in.offset();
  const std::string shape = in.text("the model shape");
  if (shape != model_shape(model))
    fail(at, "the checkpoint is of a model \"" + shape + "\", but this model is \"" + model_shape(model) + "\"");
  TrainingState<Scalar> state;
  state.step = static_cast<Index>(in.integer<std::int64_t>("the step"));
  state.epoch = static_cast<Index>(in.integer<std::int64_t>("the epoch"));
  state.epoch_step = static_cast<Index>(in.integer<std::int64_t>("the step within the epoch"));
  state.plan.samples = static_cast<Index>(in.integer<std::int64_t>("the number of samples"));
  state.plan.batch_size = static_cast<Index>(in.integer<std::int64_t>("the batch size"));
  state.plan.accumulation_steps = static_cast<Index>(in.integer<std::int64_t>("the accumulation steps"));
  state.plan.drop_last = in.flag("drop_last (0 or 1)");
  state.plan.shuffle = in.flag("shuffle (0 or 1)");
  state.plan.seed = in.integer<std::uint64_t>("the seed");
  if (version == 2) {
    RunSetup& run = state.made_by;
    run.threads = static_cast<Index>(in.integer<std::int64_t>("the thread count"));
    run.ranks = static_cast<Index>(in.integer<std::int64_t>("the rank count"));
    run.shards = static_cast<Index>(in.integer<std::int64_t>("the shard count"));
    for (PolicySetup* policy : {&run.synchronizer, &run.optimizer}) {
      policy->name = in.text("a policy's name");
      at = in.offset();
      const auto settings = in.integer<std::uint32_t>("a policy's number of settings");
      if (settings > 256) fail(at, std::to_string(settings) + " settings for " + policy->name + ": at most 256");
      policy->settings.resize(settings);
      for (Setting& setting : policy->settings) {
        setting.name = in.text("a setting's name");
        in.scalars(&setting.value, 1, "a setting's value");
      }
    }
  }
  at = in.offset();
  const auto buffers = in.integer<std::uint32_t>("the number of optimizer buffers");
  // What is left must be exactly θ and the buffers.
  const std::uint64_t payload = (std::uint64_t{buffers} + 1) * count * sizeof(Scalar);
  if (buffers > 64 || payload != in.left())
    fail(at, std::to_string(buffers) + " optimizer buffers and theta need " + std::to_string(payload) +
                 " bytes after the header, but the file has " + std::to_string(in.left()));

  Vector<Scalar> values(n);
  in.scalars(values.data(), n, "theta");
  state.optimizer_state.assign(buffers, AlignedBuffer<Scalar>(n));
  for (AlignedBuffer<Scalar>& buffer : state.optimizer_state) in.scalars(buffer.data(), n, "an optimizer buffer");
  theta = values;  // nothing can fail any more
  return state;
}

}  // namespace dptrain
