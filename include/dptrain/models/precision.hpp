// SPDX-License-Identifier: MIT
// Precision: the number format of a model's matrix products, and which bf16 kernel this CPU runs.
#pragma once

#include <string_view>

#include "dptrain/detail/bf16.hpp"

namespace dptrain {

/**
 * @brief The number format of a model's matrix products (an Mlp option).
 *
 * - `full`: the model's Scalar throughout (the default).
 * - `bf16`: mixed precision, as PyTorch's `torch.autocast("cpu", dtype=torch.bfloat16)`: each
 *   product's inputs are rounded to bfloat16 (to nearest even) and the products accumulate in
 *   fp32. θ, the gradient, the optimizer state, the reductions and checkpoints stay float: the
 *   model is `Mlp<float>` with the same θ layout. On a CPU with AVX512-BF16 (AMD Zen 4 and later;
 *   Intel Cooper Lake, Sapphire Rapids and later Xeons) the products run on `vdpbf16ps`, twice
 *   the multiply-adds per instruction of fp32 FMA; elsewhere on a portable kernel that gives the
 *   same bits, slower. bf16_kernel_name() says which runs.
 *
 * @code
 * dptrain::Mlp<float> model({784, 256, 10}, dptrain::Precision::bf16);
 * std::printf("bf16 products: %s\n", std::string(dptrain::bf16_kernel_name()).c_str());
 * @endcode
 */
enum class Precision { full, bf16 };

/**
 * @brief Which kernel runs Precision::bf16 products in this program on this CPU, for a startup
 * line. Thread-safe.
 * @return "AVX512-BF16 (vdpbf16ps)", or "portable (…)" with the reason: the CPU lacks the
 * instructions, the build is not for x86-64 with GCC or Clang, or DPTRAIN_PORTABLE_KERNELS forces it.
 */
[[nodiscard]] inline std::string_view bf16_kernel_name() {
#if DPTRAIN_DETAIL_BF16_NATIVE
  return detail::bf16::kernel() == detail::bf16::Kernel::avx512_bf16
             ? "AVX512-BF16 (vdpbf16ps)"
             : "portable (this CPU has no AVX512-BF16: same bits, slower)";
#elif defined(DPTRAIN_PORTABLE_KERNELS)
  return "portable (DPTRAIN_PORTABLE_KERNELS)";
#else
  return "portable (the AVX512-BF16 kernel needs GCC 11 or Clang 12 on x86-64)";
#endif
}

}  // namespace dptrain
