// SPDX-License-Identifier: MIT
// One core's matrix products: the seven of one gradient at 256 rows (MLP 784-256-10, softmax
// regression 784→10), each on Eigen's GEMM as the models call it (detail/gemm.hpp), on the narrow
// kernels for the 10-column ones (detail/narrow_product.hpp), and on two single-threaded BLAS
// from Debian: BLIS (libblis4-serial) and OpenBLAS (libopenblas0-serial). The BLAS are loaded at
// run time with dlopen, so they are optional packages and not build dependencies; without one,
// its benchmarks are skipped with an error that names the package. Each BLAS is also called from
// two threads at once, as two workers would call it; the label says how many of those products
// came out wrong (Debian 12's serial OpenBLAS gets some wrong: it is not safe for the workers).
#include <dptrain/core/types.hpp>
#include <dptrain/detail/gemm.hpp>
#include <dptrain/detail/narrow_product.hpp>

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <omp.h>

#include <array>
#include <random>
#include <string>
#include <utility>

#include "bench_common.hpp"

namespace bench {
namespace {

using Matrix = dptrain::RowMatrix<float>;

/// How a product reads its row-major operands: C += A·B, C += Aᵀ·B or C += A·Bᵀ.
enum class Op { nn, tn, nt };

/// One product C (m × n) += op(A) · op(B) of depth k, as a model's gradient computes it.
struct Shape {
  const char* name;
  Op op;
  Index m, n, k;
};

/// The columns of the narrow products (the 10 classes), a compile-time constant of the kernels.
constexpr int narrow_columns = 10;

// Models call these from mlp.hpp (loss_and_gradient: forward, weights, backward) and
// softmax_regression.hpp (scores and weights), at 256 rows.
constexpr std::array<Shape, 7> shapes{{
    {"mlp_forward1", Op::nn, 256, 256, 784},    // Z₁ (256 × 256) += X (256 × 784) · W₁ (784 × 256)
    {"mlp_weights1", Op::tn, 784, 256, 256},    // ∇W₁ (784 × 256) += Xᵀ · Δ₁ (256 × 256)
    {"mlp_backward2", Op::nt, 256, 256, 10},    // Δ₁ (256 × 256) += Δ₂ (256 × 10) · W₂ᵀ, W₂ 256 × 10
    {"mlp_forward2", Op::nn, 256, 10, 256},     // Z₂ (256 × 10) += H (256 × 256) · W₂ (256 × 10)
    {"mlp_weights2", Op::tn, 256, 10, 256},     // ∇W₂ (256 × 10) += Hᵀ · Δ₂ (256 × 10)
    {"softmax_scores", Op::nn, 256, 10, 784},   // Z (256 × 10) += X (256 × 784) · W (784 × 10)
    {"softmax_weights", Op::tn, 784, 10, 256},  // ∇W (784 × 10) += Xᵀ · D (256 × 10)
}};

/// A shape's operands, stored as the product reads them: A is m × k (k × m for Aᵀ·B), B is k × n
/// (n × k for A·Bᵀ); uniform in [0, 1) from a fixed seed.
struct Operands {
  Matrix a;
  Matrix b;
};

Matrix random_matrix(Index rows, Index cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  Matrix x(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) x(i, j) = uniform(rng);
  return x;
}

Operands random_operands(const Shape& s) {
  std::mt19937_64 rng(42);
  Matrix a = s.op == Op::tn ? random_matrix(s.k, s.m, rng) : random_matrix(s.m, s.k, rng);
  Matrix b = s.op == Op::nt ? random_matrix(s.n, s.k, rng) : random_matrix(s.k, s.n, rng);
  return {std::move(a), std::move(b)};
}

/// C += op(A) · op(B) on Eigen's GEMM, as the models call it; `plan` from buffers.reserve(m, n, k).
void eigen_product(const Shape& s, const Operands& x, Matrix& c, const dptrain::detail::gemm::Plan& plan,
                   dptrain::detail::gemm::Buffers<float>& buffers) {
  const Eigen::Map<Matrix> out(c.data(), c.rows(), c.cols());
  switch (s.op) {
    case Op::nn:
      dptrain::detail::gemm::add_product<float>(out, x.a, x.b, plan, buffers);
      break;
    case Op::tn:
      dptrain::detail::gemm::add_transposed_product<float>(out, x.a, x.b, plan, buffers);
      break;
    case Op::nt:
      dptrain::detail::gemm::add_product_transposed<float>(out, x.a, x.b, plan, buffers);
      break;
  }
}

/// The product into a fresh C, on Eigen's GEMM: what the other backends must reproduce.
Matrix eigen_reference(const Shape& s, const Operands& x) {
  dptrain::detail::gemm::Buffers<float> buffers;
  const dptrain::detail::gemm::Plan plan = buffers.reserve(s.m, s.n, s.k);
  Matrix c = Matrix::Zero(s.m, s.n);
  eigen_product(s, x, c, plan, buffers);
  return c;
}

/// Checks a backend's product of `s` (into a fresh C) against Eigen's: a relative max error
/// above 1e-4 means a wrong transposition or leading dimension, not rounding. Marks the
/// benchmark as failed and returns false then.
bool matches_eigen(benchmark::State& state, const Shape& s, const Operands& x, const Matrix& got) {
  const Matrix expected = eigen_reference(s, x);
  const double error =
      static_cast<double>((got - expected).cwiseAbs().maxCoeff()) / static_cast<double>(expected.cwiseAbs().maxCoeff());
  if (error < 1e-4) return true;
  state.SkipWithError(("the product differs from Eigen's: relative max error " + std::to_string(error) +
                       " (wrong transposition or leading dimension?)")
                          .c_str());
  return false;
}

/// GFLOP/s of one product per iteration: 2·m·n·k FLOPs (a multiply and an add per term).
void count_flops(benchmark::State& state, const Shape& s) {
  state.counters["GFLOPS"] =
      giga_per_second(2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k));
}

void BM_ProductEigen(benchmark::State& state, const Shape& s) {
  const Operands x = random_operands(s);
  dptrain::detail::gemm::Buffers<float> buffers;
  const dptrain::detail::gemm::Plan plan = buffers.reserve(s.m, s.n, s.k);
  // C accumulates over the iterations, as a gradient does over a step's products.
  Matrix c = Matrix::Zero(s.m, s.n);
  benchmark::DoNotOptimize(c.data());
  for (auto _ : state) {
    eigen_product(s, x, c, plan, buffers);
    benchmark::ClobberMemory();
  }
  count_flops(state, s);
}

// --- the narrow kernels (10 columns) --------------------------------------------------------------
// Their weights are class-major: the scores read Wᵀ (10 × k), turned once before the loop, and
// the weights' gradient is produced as Cᵀ (10 × m). The model converts each once per step
// (transpose_to_class_major, add_transposed); neither is timed here.

/// C += A·B with B (k × 10) given as Bᵀ (scores), or Cᵀ += (Aᵀ·B)ᵀ = Bᵀ·A (weights' gradient).
void narrow_product(const Shape& s, const Operands& x, const Matrix& bt, Matrix& out) {
  if (s.op == Op::nn) {
    dptrain::detail::narrow::add_scores<narrow_columns>(x.a.data(), s.k, s.m, s.k, bt.data(), s.k, out.data(),
                                                        narrow_columns);
  } else {
    dptrain::detail::narrow::add_gradient<narrow_columns>(x.a.data(), s.m, s.k, s.m, x.b.data(), narrow_columns,
                                                          out.data(), s.m);
  }
}

void BM_ProductNarrow(benchmark::State& state, const Shape& s) {
  const Operands x = random_operands(s);
  Matrix bt;
  if (s.op == Op::nn) {
    bt.resize(narrow_columns, s.k);
    dptrain::detail::narrow::transpose_to_class_major<narrow_columns>(x.b.data(), s.k, bt.data(), s.k);
  }
  // The output as the kernel writes it: C (m × 10) for the scores, Cᵀ (10 × m) for the gradient.
  const bool transposed = s.op == Op::tn;
  const auto fresh_output = [&] {
    return transposed ? Matrix::Zero(narrow_columns, s.m).eval() : Matrix::Zero(s.m, narrow_columns).eval();
  };
  Matrix check = fresh_output();
  narrow_product(s, x, bt, check);
  if (!matches_eigen(state, s, x, transposed ? Matrix(check.transpose()) : check)) return;

  Matrix c = fresh_output();
  benchmark::DoNotOptimize(c.data());
  for (auto _ : state) {
    narrow_product(s, x, bt, c);
    benchmark::ClobberMemory();
  }
  count_flops(state, s);
}

// --- BLAS through cblas_sgemm, loaded at run time ------------------------------------------------

// cblas.h's values, as the CBLAS standard numbers them, and cblas_sgemm's signature with 32-bit
// integers (Debian's libblis4 and libopenblas0; the 64-bit-integer builds are other packages).
// Declared here so that building needs no BLAS header.
constexpr int cblas_row_major = 101;
constexpr int cblas_no_trans = 111;
constexpr int cblas_trans = 112;
using CblasSgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, int ldb, float beta, float* c, int ldc);

/// A BLAS library to dlopen, and the Debian package that installs it.
struct BlasLibrary {
  const char* name;
  const char* path;
  const char* package;
};

constexpr BlasLibrary blis{"BLIS serial", "/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4", "libblis4-serial"};
constexpr BlasLibrary openblas{"OpenBLAS serial", "/usr/lib/x86_64-linux-gnu/openblas-serial/libopenblas.so.0",
                               "libopenblas0-serial"};

/// A loaded library's cblas_sgemm (null if it could not be loaded, and `error` says why), what
/// the library says about itself and how it fared when two threads called it at once: the
/// benchmarks' label.
struct LoadedBlas {
  CblasSgemm sgemm = nullptr;
  std::string error;
  std::string description;
  std::string concurrency;
};

/// What the library says about its version and the kernels it chose for this CPU, if it exports
/// the functions that tell (BLIS: bli_info_get_version_str, bli_arch_*; OpenBLAS:
/// openblas_get_config, which also says SINGLE_THREADED for the serial build).
std::string describe(void* handle) {
  using Text = const char* (*)();
  if (const auto config = reinterpret_cast<Text>(dlsym(handle, "openblas_get_config"))) return config();
  const auto version = reinterpret_cast<Text>(dlsym(handle, "bli_info_get_version_str"));
  const auto arch_id = reinterpret_cast<int (*)()>(dlsym(handle, "bli_arch_query_id"));
  const auto arch_name = reinterpret_cast<const char* (*)(int)>(dlsym(handle, "bli_arch_string"));
  std::string text;
  if (version != nullptr) text = std::string("BLIS ") + version();
  if (arch_id != nullptr && arch_name != nullptr) text += std::string(" ") + arch_name(arch_id());
  return text;
}

/// C += op(A) · op(B) through cblas_sgemm: row-major, alpha = beta = 1.
void blas_product(CblasSgemm sgemm, const Shape& s, const Operands& x, Matrix& c) {
  const int trans_a = s.op == Op::tn ? cblas_trans : cblas_no_trans;
  const int trans_b = s.op == Op::nt ? cblas_trans : cblas_no_trans;
  sgemm(cblas_row_major, trans_a, trans_b, static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0f,
        x.a.data(), static_cast<int>(x.a.cols()), x.b.data(), static_cast<int>(x.b.cols()), 1.0f, c.data(),
        static_cast<int>(c.cols()));
}

/// Two threads call the BLAS at once, as two workers would, each on its own operands (the second
/// thread's A doubled), in rounds that start together; a product counts as wrong when it differs
/// from the same call made alone by more than rounding. A library whose calls share packing
/// buffers without a lock (OpenBLAS built with USE_THREAD=0 and without USE_LOCKING) fails here.
std::string concurrent_calls(CblasSgemm sgemm) {
  constexpr int threads = 2;
  constexpr int rounds = 500;
  const Shape& s = shapes.front();  // the largest product, mlp_forward1
  std::array<Operands, threads> x{random_operands(s), random_operands(s)};
  x[1].a *= 2.0f;
  std::array<Matrix, threads> alone;
  for (int t = 0; t < threads; ++t) {
    alone[t] = Matrix::Zero(s.m, s.n);
    blas_product(sgemm, s, x[t], alone[t]);
  }
  int wrong = 0;
#pragma omp parallel num_threads(threads) reduction(+ : wrong)
  {
    const int t = omp_get_thread_num();
    Matrix c(s.m, s.n);
    for (int round = 0; round < rounds; ++round) {
      c.setZero();
#pragma omp barrier
      blas_product(sgemm, s, x[t], c);
      const float error = (c - alone[t]).cwiseAbs().maxCoeff() / alone[t].cwiseAbs().maxCoeff();
      if (!(error < 1e-4f)) ++wrong;
    }
  }
  return "from 2 threads at once: " + std::to_string(wrong) + " of " + std::to_string(threads * rounds) +
         " products wrong";
}

/// Opens the library once (kept open for the process's lifetime) and finds its cblas_sgemm.
LoadedBlas load(const BlasLibrary& library) {
  LoadedBlas loaded;
  void* handle = dlopen(library.path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    loaded.error =
        std::string(library.name) + " not installed: apt-get install " + library.package + " (" + dlerror() + ")";
    return loaded;
  }
  loaded.sgemm = reinterpret_cast<CblasSgemm>(dlsym(handle, "cblas_sgemm"));
  if (loaded.sgemm == nullptr) {
    loaded.error = std::string(library.name) + " (" + library.path + ") has no cblas_sgemm";
    return loaded;
  }
  loaded.description = describe(handle);
  loaded.concurrency = concurrent_calls(loaded.sgemm);
  return loaded;
}

template <const BlasLibrary& Library>
void BM_ProductBlas(benchmark::State& state, const Shape& s) {
  static const LoadedBlas blas = load(Library);
  if (blas.sgemm == nullptr) {
    state.SkipWithError(blas.error.c_str());
    return;
  }
  state.SetLabel(blas.description + "; " + blas.concurrency);
  const Operands x = random_operands(s);
  Matrix check = Matrix::Zero(s.m, s.n);
  blas_product(blas.sgemm, s, x, check);
  if (!matches_eigen(state, s, x, check)) return;

  Matrix c = Matrix::Zero(s.m, s.n);
  benchmark::DoNotOptimize(c.data());
  for (auto _ : state) {
    blas_product(blas.sgemm, s, x, c);
    benchmark::ClobberMemory();
  }
  count_flops(state, s);
}

// Registered shape by shape, so that the backends of one product are adjacent in the output:
// BM_Product<Eigen|Narrow|Blis|OpenBlas>/<shape>.
bool register_products() {
  using Function = void (*)(benchmark::State&, const Shape&);
  struct Backend {
    const char* name;
    Function run;
    bool narrow_only;
  };
  constexpr std::array<Backend, 4> backends{{
      {"Eigen", BM_ProductEigen, false},
      {"Narrow", BM_ProductNarrow, true},
      {"Blis", BM_ProductBlas<blis>, false},
      {"OpenBlas", BM_ProductBlas<openblas>, false},
  }};
  for (const Shape& shape : shapes) {
    const bool narrow =
        shape.n == narrow_columns && shape.op != Op::nt && narrow_columns <= dptrain::detail::narrow::max_columns;
    for (const Backend& backend : backends) {
      if (backend.narrow_only && !narrow) continue;
      const std::string name = std::string("BM_Product<") + backend.name + ">/" + shape.name;
      benchmark::RegisterBenchmark(name.c_str(), [run = backend.run, &shape](benchmark::State& state) {
        run(state, shape);
      })->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}

[[maybe_unused]] const bool products_registered = register_products();

}  // namespace
}  // namespace bench
