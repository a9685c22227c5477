// SPDX-License-Identifier: MIT
// Mlp: a fully connected ReLU network with a softmax cross-entropy output, on dense samples.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/core/batch.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"
#include "dptrain/detail/bf16.hpp"
#include "dptrain/detail/gemm.hpp"
#include "dptrain/detail/model_support.hpp"
#include "dptrain/detail/narrow_product.hpp"
#include "dptrain/models/precision.hpp"

namespace dptrain {

/**
 * @brief A multilayer perceptron: fully connected layers with ReLU between them and a softmax
 * cross-entropy loss on the last, for classification into widths.back() classes.
 *
 * With widths n₀ … n_L (n₀ = features, n_L = classes, L ≥ 1 weight layers), a sample x
 * with label y ∈ [0, n_L) goes through
 * @f[ a_0 = x, \quad a_{l+1} = \mathrm{ReLU}(W_l^\top a_l + b_l) \ (l < L - 1), \quad
 *     z = W_{L-1}^\top a_{L-1} + b_{L-1}, \qquad \ell(x, y; \theta) = \log \textstyle\sum_c e^{z_c} - z_y. @f]
 * The gradient is by backpropagation, with ReLU'(0) = 0.
 *
 * θ layout (length Σ_l (n_l + 1)·n_{l+1}): the layers one after another, each as W_l
 * (n_l × n_{l+1}, row-major: `θ[weights_offset(l) + i·n_{l+1} + j]` = W_l(i, j), from unit i
 * of layer l to unit j of layer l + 1) followed by b_l (n_{l+1}, from bias_offset(l)).
 * `Mlp({d, k})` has no hidden layer and is exactly SoftmaxRegression(d, k), θ layout included.
 *
 * For a batch of m rows, each layer costs one matrix product forward and one or two backward
 * (the δ of the first layer's inputs is never formed), all into the workspace: the layer
 * outputs (m × n_l for l ≥ 1) and one scratch matrix (m × the widest hidden layer). The
 * products run on Eigen's GEMM, except the output layer's two with at most
 * detail::narrow::max_columns classes, which run on the register tiles of SoftmaxRegression
 * (Eigen's GEMM is at its slowest on 10 columns). All methods are const and thread-safe;
 * concurrent calls need distinct workspaces and gradient buffers.
 *
 * With Precision::bf16 (`Mlp<float>` only) the products of every layer that runs on GEMM take
 * their inputs rounded to bfloat16 and accumulate in fp32 (detail/bf16.hpp): on AVX512-BF16 about
 * twice the multiply-adds per cycle of fp32. The narrow output layer (at most
 * detail::narrow::max_columns classes: 16 with AVX-512, 12 with AVX) keeps fp32: its products are
 * about 1% of a 784-256-10 network's and run on their own tiles; so `Mlp({d, k})` with few classes
 * is all fp32 either way. θ, the gradient and everything the trainer does with them stay fp32
 * (docs/models.md, "Mixed precision").
 *
 * @tparam Scalar float or double.
 *
 * @code
 * dptrain::Mlp<float> model({784, 256, 10});                 // MNIST, one hidden layer of 256
 * dptrain::Mlp<float> mixed({784, 256, 10}, dptrain::Precision::bf16);  // bf16 products, fp32 θ
 * dptrain::DenseDataset<float, dptrain::Label> data{.features = X, .targets = labels};
 * model.validate(data.rows(0, data.size()));
 * dptrain::Vector<float> theta = model.init_parameters(42);  // He / Glorot, seeded
 * auto ws = model.make_workspace(128);
 * dptrain::Vector<float> grad = dptrain::Vector<float>::Zero(model.num_parameters());
 * float loss = model.loss_and_gradient(theta, data.rows(0, 128), grad, ws);  // summed
 * @endcode
 */
template <class Scalar>
class Mlp {
 public:
  using scalar_type = Scalar;
  using target_type = Label;
  using batch_type = DenseBatch<Scalar, target_type>;

  /// Scratch memory for batches of up to `scratch.rows()` rows; contents are unspecified.
  struct Workspace {
    /// activations[l]: layer l + 1's output, max_rows × n_{l+1} (the last holds the scores);
    /// overwritten by the backward pass with ∂ℓ/∂(layer l + 1's pre-activation).
    std::vector<RowMatrix<Scalar>> activations;
    RowMatrix<Scalar> scratch;           ///< max_rows × (widest hidden layer): δ before the ReLU mask
    RowMatrix<Scalar> top_weights_t;     ///< W_{L−1}ᵀ (n_L × n_{L−1}), class-major, for the narrow kernels
    RowMatrix<Scalar> top_gradient_t;    ///< the call's ∇W_{L−1}ᵀ (n_L × n_{L−1}), for the narrow kernels
    detail::gemm::Buffers<Scalar> gemm;  ///< packing buffers of all the matrix products
    /// Blocking of layer l's products: forward a_l W_l, weights a_lᵀ δ, backward δ W_lᵀ.
    struct LayerPlans {
      detail::gemm::Plan forward, weights, backward;
    };
    std::vector<LayerPlans> plans;
    detail::bf16::Operands bf16;  ///< packed operands of the bf16 products (Precision::bf16)
  };
  using workspace_type = Workspace;

  /**
   * @param widths n₀, n₁, …, n_L: features, hidden layer sizes, classes, e.g. {784, 256, 10}.
   * @param precision the number format of the products: Precision::bf16 rounds their inputs to
   * bfloat16 (float models only).
   * @throws dptrain::invalid_argument if there are fewer than 2 widths, a width is < 1, the
   * last width (the number of classes) is < 2, or bf16 is asked of an Mlp<double>.
   */
  explicit Mlp(std::vector<Index> widths, Precision precision = Precision::full)
      : widths_(std::move(widths)), precision_(precision) {
    if (precision_ == Precision::bf16 && !std::is_same_v<Scalar, float>)
      throw invalid_argument(
          "dptrain::Mlp: Precision::bf16 needs Mlp<float> (its products accumulate in fp32 and θ stays fp32)");
    if (widths_.size() < 2)
      throw invalid_argument("dptrain::Mlp: widths.size() must be at least 2 (features, ..., classes), got " +
                             std::to_string(widths_.size()));
    for (std::size_t l = 0; l < widths_.size(); ++l)
      if (widths_[l] < 1)
        throw invalid_argument("dptrain::Mlp: widths[" + std::to_string(l) +
                               "] must be at least 1 (every layer needs a unit), got " + std::to_string(widths_[l]));
    if (widths_.back() < 2)
      throw invalid_argument("dptrain::Mlp: the last width (the number of classes) must be at least 2, got " +
                             std::to_string(widths_.back()));
    offsets_.reserve(widths_.size());
    Index offset = 0;
    for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
      offsets_.push_back(offset);
      offset += (widths_[l] + 1) * widths_[l + 1];
      if (l > 0 && widths_[l] > widest_hidden_) widest_hidden_ = widths_[l];
    }
    offsets_.push_back(offset);
  }

  /// Σ_l (n_l + 1)·n_{l+1}.
  [[nodiscard]] Index num_parameters() const noexcept { return offsets_.back(); }
  /// n₀, the number of features per sample.
  [[nodiscard]] Index inputs() const noexcept { return widths_.front(); }
  /// n_L, the number of classes.
  [[nodiscard]] Index classes() const noexcept { return widths_.back(); }
  /// L, the number of weight layers (one more than the number of hidden layers).
  [[nodiscard]] Index layers() const noexcept { return static_cast<Index>(widths_.size()) - 1; }
  /// The number format of the products, as given to the constructor.
  [[nodiscard]] Precision precision() const noexcept { return precision_; }
  /// The widths given to the constructor.
  [[nodiscard]] const std::vector<Index>& widths() const noexcept { return widths_; }
  /// The architecture, for checkpoints: "mlp 784-256-10".
  [[nodiscard]] std::string shape() const { return detail::models::shape_text("mlp", widths_); }
  /// Where W_l starts in θ, 0 ≤ layer < layers().
  [[nodiscard]] Index weights_offset(Index layer) const { return offsets_[static_cast<std::size_t>(layer)]; }
  /// Where b_l starts in θ, 0 ≤ layer < layers().
  [[nodiscard]] Index bias_offset(Index layer) const { return weights_offset(layer) + width(layer) * width(layer + 1); }
  /// Every layer's b_l, {bias_offset(l), n_{l+1}}, for an optimizer's decay_biases = false (DeclaresBiases).
  [[nodiscard]] std::vector<IndexRange> bias_ranges() const {
    std::vector<IndexRange> ranges;
    ranges.reserve(static_cast<std::size_t>(layers()));
    for (Index l = 0; l < layers(); ++l) ranges.push_back({.begin = bias_offset(l), .size = width(l + 1)});
    return ranges;
  }
  /// Every layer's W_l and b_l, each a group of its own, in θ's order (DeclaresParameterGroups): the
  /// layers whose trust ratios Lars and Lamb take, tensor by tensor as PyTorch's parameters are.
  [[nodiscard]] std::vector<IndexRange> parameter_groups() const {
    std::vector<IndexRange> groups;
    groups.reserve(static_cast<std::size_t>(2 * layers()));
    for (Index l = 0; l < layers(); ++l) {
      groups.push_back({.begin = weights_offset(l), .size = width(l) * width(l + 1)});
      groups.push_back({.begin = bias_offset(l), .size = width(l + 1)});
    }
    return groups;
  }

  /// Scratch memory for batches of up to `max_rows` ≥ 0 samples (the only allocation).
  /// @throws dptrain::invalid_argument if max_rows < 0.
  [[nodiscard]] Workspace make_workspace(Index max_rows) const {
    detail::models::check_max_rows("Mlp", max_rows);
    Workspace ws;
    ws.activations.reserve(static_cast<std::size_t>(layers()));
    for (Index l = 1; l <= layers(); ++l) ws.activations.emplace_back(max_rows, width(l));
    ws.scratch.resize(max_rows, widest_hidden_);
    ws.plans.resize(static_cast<std::size_t>(layers()));
    for (Index l = 0; l < layers(); ++l) {
      const Index in = width(l), out = width(l + 1);
      typename Workspace::LayerPlans& plans = ws.plans[static_cast<std::size_t>(l)];
      // GEMM plans for bf16 layers too: a workspace serves this network in either precision.
      if (!narrow_layer(l)) {
        plans.forward = ws.gemm.reserve(max_rows, out, in);
        plans.weights = ws.gemm.reserve(in, out, max_rows);
      }
      if (l > 0) plans.backward = ws.gemm.reserve(max_rows, in, out);
      if (bf16_layer(l)) {
        ws.bf16.reserve(max_rows, out, in);             // forward: a_l W_l
        ws.bf16.reserve(in, out, max_rows);             // weights: a_lᵀ δ
        if (l > 0) ws.bf16.reserve(max_rows, in, out);  // backward: δ W_lᵀ
      }
    }
    if (narrow_layer(layers() - 1)) {
      ws.top_weights_t.resize(classes(), width(layers() - 1));
      ws.top_gradient_t.resize(classes(), width(layers() - 1));
    }
    return ws;
  }

  /**
   * @brief Adds Σᵢ ∇ℓ(xᵢ, yᵢ; θ) to `grad` and returns Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing.
   * An empty batch returns 0 and leaves `grad` unchanged. Labels must be in [0, n_L) (validate()).
   * @throws dptrain::invalid_argument on a θ or gradient of the wrong length, a batch with the
   * wrong feature count or more rows than the workspace was made for.
   */
  Scalar loss_and_gradient(ConstVectorRef<Scalar> theta, const batch_type& batch, VectorRef<Scalar> grad,
                           Workspace& ws) const {
    return backpropagate<false>(theta, batch, grad, ws);
  }

  /**
   * @brief As loss_and_gradient(), but **writes** Σᵢ ∇ℓ(xᵢ, yᵢ; θ) to `grad`, whatever it held
   * (0 for an empty batch). A worker calls it for its first micro-batch of a step instead of
   * zeroing its gradient first (OverwritesGradient): each block of ∇W is zeroed just before its
   * product adds into it, while in cache, which saves a pass over the whole gradient.
   */
  Scalar loss_and_gradient_overwrite(ConstVectorRef<Scalar> theta, const batch_type& batch, VectorRef<Scalar> grad,
                                     Workspace& ws) const {
    return backpropagate<true>(theta, batch, grad, ws);
  }

  /// Σᵢ ℓ(xᵢ, yᵢ; θ). Allocates nothing. @throws as loss_and_gradient().
  [[nodiscard]] Scalar loss(ConstVectorRef<Scalar> theta, const batch_type& batch, Workspace& ws) const {
    const Index m = batch.size();
    check(theta, num_parameters(), batch, ws);
    if (m == 0) return Scalar(0);
    forward(theta.data(), batch.features, m, ws);
    return detail::models::softmax_cross_entropy<false, Scalar>(output(ws, layers() - 1, m), batch.targets);
  }

  /**
   * @brief Writes the predicted class of each row into `out`: argmax_c z_c of the output
   * scores (the smallest c on ties). One forward pass; allocates nothing; the batch's targets
   * are not read.
   * @throws dptrain::invalid_argument on a θ of the wrong length, a batch with the wrong
   * feature count or more rows than the workspace was made for, or an `out` of another length.
   */
  void predict(ConstVectorRef<Scalar> theta, const batch_type& batch, Eigen::Ref<Vector<target_type>> out,
               Workspace& ws) const {
    const Index m = batch.size();
    const Index capacity = ws.activations.empty() ? 0 : ws.activations.front().rows();
    detail::models::check_call("Mlp", num_parameters(), theta.size(), num_parameters(), inputs(), m,
                               batch.features.cols(), m, capacity);
    detail::models::check_prediction_size("Mlp", m, out.size());
    check_workspace(ws);
    if (m == 0) return;
    forward(theta.data(), batch.features, m, ws);
    detail::models::argmax_rows<Scalar>(output(ws, layers() - 1, m), out);
  }

  /**
   * @brief Checks that `all` can be trained on.
   * @throws dptrain::invalid_argument naming the offending value: a feature count other than
   * inputs(), a target count other than the row count, a label outside [0, n_L), or a
   * non-finite feature.
   */
  void validate(const batch_type& all) const {
    detail::models::check_feature_count("Mlp", inputs(), all.features.cols());
    detail::models::check_target_count("Mlp", all.features.rows(), all.targets.size());
    detail::models::check_labels("Mlp", all.targets, classes());
    detail::models::check_finite_features<Scalar>("Mlp", all.features);
  }

  /**
   * @brief θ to start training from, the same for a given seed with any standard library.
   *
   * Weights of a layer followed by ReLU: He normal, N(0, 2/n_l) (He et al., 2015, "Delving
   * deep into rectifiers"). Weights of the output layer: Glorot uniform,
   * U(−√(6/(n_{L−1} + n_L)), +√(6/(n_{L−1} + n_L))) (Glorot & Bengio, 2010). Biases: 0.
   * The draws come from std::mt19937_64(seed), whose output the standard fixes, turned into
   * uniform and (Box–Muller) normal numbers here rather than by the standard library's
   * distributions, whose algorithms differ between implementations (only std::log, std::cos and
   * std::sin may differ in the last bit between math libraries). Layers are filled in θ order;
   * float θ is the double θ rounded.
   */
  [[nodiscard]] Vector<Scalar> init_parameters(std::uint64_t seed = 0) const {
    Vector<Scalar> theta = Vector<Scalar>::Zero(num_parameters());
    std::mt19937_64 engine(seed);
    const auto uniform = [&engine] { return static_cast<double>(engine() >> 11) * 0x1.0p-53; };  // [0, 1)
    for (Index l = 0; l < layers(); ++l) {
      const Index in = width(l), out = width(l + 1), count = in * out;
      Scalar* w = theta.data() + weights_offset(l);
      if (l + 1 < layers()) {
        const double stddev = std::sqrt(2.0 / static_cast<double>(in));
        for (Index i = 0; i < count; i += 2) {
          const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));  // 1 − u ∈ (0, 1]
          const double angle = 2.0 * std::numbers::pi * uniform();
          w[i] = static_cast<Scalar>(stddev * radius * std::cos(angle));
          if (i + 1 < count) w[i + 1] = static_cast<Scalar>(stddev * radius * std::sin(angle));
        }
      } else {
        const double limit = std::sqrt(6.0 / static_cast<double>(in + out));
        for (Index i = 0; i < count; ++i) w[i] = static_cast<Scalar>(limit * (2.0 * uniform() - 1.0));
      }
    }
    return theta;
  }

 private:
  using RowVector = Eigen::Matrix<Scalar, 1, Eigen::Dynamic>;

  [[nodiscard]] Index width(Index l) const { return widths_[static_cast<std::size_t>(l)]; }

  // The first m rows of layer l + 1's output buffer (contiguous: the buffer is row-major).
  [[nodiscard]] Eigen::Map<RowMatrix<Scalar>> output(Workspace& ws, Index l, Index m) const {
    return {ws.activations[static_cast<std::size_t>(l)].data(), m, width(l + 1)};
  }

  // Layer l's input, m rows: the batch's features x for the first layer, else layer l − 1's output.
  [[nodiscard]] Eigen::Ref<const RowMatrix<Scalar>> input(const Eigen::Ref<const RowMatrix<Scalar>>& x, Workspace& ws,
                                                          Index l, Index m) const {
    if (l == 0) return x;
    return output(ws, l - 1, m);
  }

  void check(const ConstVectorRef<Scalar>& theta, Index grad_size, const batch_type& batch, const Workspace& ws) const {
    const Index capacity = ws.activations.empty() ? 0 : ws.activations.front().rows();
    detail::models::check_call("Mlp", num_parameters(), theta.size(), grad_size, inputs(), batch.size(),
                               batch.features.cols(), batch.targets.size(), capacity);
    check_workspace(ws);
  }

  // The narrow kernels write ws.top_gradient_t through raw pointers: a workspace of another shape
  // would be overrun, not resized.
  void check_workspace(const Workspace& ws) const {
    const Index k = classes(), below = width(layers() - 1);
    bool widths_fit =
        ws.activations.size() == static_cast<std::size_t>(layers()) && ws.scratch.cols() >= widest_hidden_;
    for (std::size_t l = 0; widths_fit && l < ws.activations.size(); ++l)
      widths_fit = ws.activations[l].cols() == widths_[l + 1];
    const bool fits = widths_fit && (!narrow_layer(layers() - 1) ||
                                     (ws.top_weights_t.rows() == k && ws.top_weights_t.cols() == below &&
                                      ws.top_gradient_t.rows() == k && ws.top_gradient_t.cols() == below));
    const Index capacity = ws.activations.empty() ? 0 : ws.activations.front().rows();
    bool bf16_fits = true;  // a workspace of a full-precision Mlp has no bf16 buffers
    for (Index l = 0; l < layers(); ++l)
      if (bf16_layer(l))
        bf16_fits = bf16_fits && ws.bf16.fits(capacity, width(l + 1), width(l)) &&
                    ws.bf16.fits(width(l), width(l + 1), capacity) &&
                    (l == 0 || ws.bf16.fits(capacity, width(l), width(l + 1)));
    if (!fits || !bf16_fits)
      throw invalid_argument(
          "dptrain::Mlp: the workspace was made for another model; use this model's make_workspace()");
  }

  // Whether layer l's products run on the narrow kernels: the output layer, with few classes.
  [[nodiscard]] bool narrow_layer(Index l) const noexcept {
    return l + 1 == layers() && classes() <= detail::narrow::max_columns;
  }

  // Whether layer l's products are bf16: every GEMM layer under Precision::bf16.
  [[nodiscard]] bool bf16_layer(Index l) const noexcept {
    return std::is_same_v<Scalar, float> && precision_ == Precision::bf16 && !narrow_layer(l);
  }

  // Σ∇ℓ added to grad, or (Overwrite) written to it.
  template <bool Overwrite>
  Scalar backpropagate(ConstVectorRef<Scalar> theta, const batch_type& batch, VectorRef<Scalar> grad,
                       Workspace& ws) const {
    const Index m = batch.size();
    check(theta, grad.size(), batch, ws);
    if (m == 0) {
      if constexpr (Overwrite) grad.setZero();
      return Scalar(0);
    }
    forward(theta.data(), batch.features, m, ws);
    const Scalar loss = detail::models::softmax_cross_entropy<true, Scalar>(output(ws, layers() - 1, m), batch.targets);
    // Backward: output(ws, l, m) holds δ_{l+1} = ∂ℓ/∂z_{l+1}, the pre-activation of layer l + 1.
    for (Index l = layers() - 1; l >= 0; --l) {
      const Index in = width(l), out = width(l + 1);
      const Eigen::Map<RowMatrix<Scalar>> delta = output(ws, l, m);
      const typename Workspace::LayerPlans& plans = ws.plans[static_cast<std::size_t>(l)];
      Eigen::Map<RowMatrix<Scalar>> grad_w(grad.data() + weights_offset(l), in, out);
      Eigen::Map<RowVector> grad_b(grad.data() + bias_offset(l), out);
      if constexpr (Overwrite)
        grad_b = delta.colwise().sum();
      else
        grad_b += delta.colwise().sum();
      const Eigen::Ref<const RowMatrix<Scalar>> a_in = input(batch.features, ws, l, m);
      if (narrow_layer(l)) {
        ws.top_gradient_t.setZero();
        if constexpr (Overwrite) grad_w.setZero();  // n_{L−1} × n_L: small
        detail::narrow::with_columns(out, [&](auto k) {
          constexpr int K = decltype(k)::value;
          detail::narrow::add_gradient<K>(a_in.data(), a_in.outerStride(), m, in, delta.data(), K,
                                          ws.top_gradient_t.data(), in);
          detail::narrow::add_transposed<K>(ws.top_gradient_t.data(), in, in, grad_w.data());
        });
      } else if (bf16_layer(l)) {
        if constexpr (std::is_same_v<Scalar, float>)
          detail::bf16::transposed_product<!Overwrite>(grad_w, a_in, delta, ws.bf16);
      } else {
        if constexpr (Overwrite)
          detail::gemm::set_transposed_product<Scalar>(grad_w, a_in, delta, plans.weights, ws.gemm);
        else
          detail::gemm::add_transposed_product<Scalar>(grad_w, a_in, delta, plans.weights, ws.gemm);
      }
      if (l == 0) break;
      Eigen::Map<RowMatrix<Scalar>> a = output(ws, l - 1, m);  // ReLU output of layer l
      const Eigen::Map<const RowMatrix<Scalar>> w(theta.data() + weights_offset(l), in, out);
      Eigen::Map<RowMatrix<Scalar>> back(ws.scratch.data(), m, in);
      if (bf16_layer(l)) {
        if constexpr (std::is_same_v<Scalar, float>) detail::bf16::set_product_transposed(back, delta, w, ws.bf16);
      } else {
        back.setZero();
        detail::gemm::add_product_transposed<Scalar>(back, delta, w, plans.backward, ws.gemm);
      }
      // δ_l = (δ_{l+1} W_lᵀ) ⊙ 1[z_l > 0], and a_l > 0 exactly where z_l > 0: overwrite a_l.
      a = (a.array() > Scalar(0)).select(back, Scalar(0));
    }
    return loss;
  }

  // a_{l+1} = ReLU(a_l W_l + 1 b_lᵀ) for hidden layers, z = a_{L−1} W_{L−1} + 1 b_{L−1}ᵀ at the top.
  void forward(const Scalar* theta, const Eigen::Ref<const RowMatrix<Scalar>>& x, Index m, Workspace& ws) const {
    for (Index l = 0; l < layers(); ++l) {
      const Index in = width(l), out = width(l + 1);
      const Eigen::Map<const RowMatrix<Scalar>> w(theta + weights_offset(l), in, out);
      const Eigen::Map<const RowVector> b(theta + bias_offset(l), out);
      Eigen::Map<RowMatrix<Scalar>> z = output(ws, l, m);
      const detail::gemm::Plan& plan = ws.plans[static_cast<std::size_t>(l)].forward;
      z.rowwise() = b;  // the product accumulates onto the bias
      const Eigen::Ref<const RowMatrix<Scalar>> a_in = input(x, ws, l, m);
      if (narrow_layer(l)) {
        detail::narrow::with_columns(out, [&](auto k) {
          constexpr int K = decltype(k)::value;
          detail::narrow::transpose_to_class_major<K>(w.data(), in, ws.top_weights_t.data(), in);
          detail::narrow::add_scores<K>(a_in.data(), a_in.outerStride(), m, in, ws.top_weights_t.data(), in, z.data(),
                                        K);
        });
      } else if (bf16_layer(l)) {
        if constexpr (std::is_same_v<Scalar, float>) detail::bf16::add_product(z, a_in, w, ws.bf16);
      } else {
        detail::gemm::add_product<Scalar>(z, a_in, w, plan, ws.gemm);
      }
      if (l + 1 < layers()) z = z.cwiseMax(Scalar(0));
    }
  }

  std::vector<Index> widths_;
  Precision precision_ = Precision::full;
  std::vector<Index> offsets_;  // offsets_[l]: where W_l starts; offsets_.back(): num_parameters()
  Index widest_hidden_ = 0;
};

}  // namespace dptrain
