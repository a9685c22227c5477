// SPDX-License-Identifier: MIT
// GradientTable: the table of per-sample gradients of SAG and SAGA, kept as one residual row per
// sample, and the Worker policy that reads and refreshes it.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "dptrain/concepts.hpp"
#include "dptrain/core/aligned_buffer.hpp"
#include "dptrain/core/batch.hpp"
#include "dptrain/core/context.hpp"
#include "dptrain/core/errors.hpp"
#include "dptrain/core/types.hpp"

namespace dptrain {

/// The table a GradientTable's workers share: row j holds rⱼ, the residuals of sample j at its
/// last visit (zero before it), so that its stored gradient is αⱼ = x̃ⱼ ⊗ rⱼ.
template <class Scalar>
struct ResidualTable {
  RowMatrix<Scalar> residuals;  ///< n × k: one row per sample of the data set, k = the model's residual_width()
};

/**
 * @brief The Worker policy of SAG and SAGA (made by GradientTable::worker()): a micro-batch adds
 * Σⱼ (∇ℓⱼ(θ) − αⱼ) = Σⱼ x̃ⱼ ⊗ (rⱼ(θ) − rⱼ_stored) to its gradient and stores rⱼ(θ) in sample j's
 * row. The model must have the ResidualGradient members, and the trainer gives each micro-batch
 * its rows' indices (IndexedWorkerState). Each state holds a gradient, a model workspace and
 * max_rows × k residuals, made with it: a step allocates nothing.
 *
 * Every sample is in one micro-batch of a step, so the workers write disjoint rows, and the
 * step's barriers order one step's writes before the next step's reads.
 */
template <class Scalar>
struct GradientTableWorker {
  std::shared_ptr<ResidualTable<Scalar>> table;  ///< the GradientTable's

  /// Its gradients are what Sag and Saga read (fit() pairs them).
  static constexpr bool fills_gradient_table = true;

  /// One worker's state.
  template <Model M>
  class State {
    using S = typename M::scalar_type;

   public:
    State(ResidualTable<S>* table, const M& model, Index max_rows)
        : table_(table),
          gradient_(model.num_parameters()),
          now_(std::max<Index>(max_rows, 1) * model.residual_width()),
          workspace_(model.make_workspace(max_rows)) {}

    void zero() {
      gradient_.map().setZero();
      loss_ = 0;
      samples_ = 0;
    }

    /// Adds Σⱼ (∇ℓⱼ(θ) − αⱼ) over the micro-batch's samples `ids`, and stores their residuals at θ.
    void accumulate(const M& model, ConstVectorRef<S> theta, const typename M::batch_type& batch, SampleIds ids) {
      const Index m = batch.size(), k = table_->residuals.cols();
      if (m == 0) return;
      RowMatrixMap<S> now(now_.data(), m, k);
      loss_ += static_cast<double>(model.loss_and_residuals(theta, batch, now, workspace_));
      for (Index i = 0; i < m; ++i) {
        auto stored = table_->residuals.row(ids[i]);
        for (Index c = 0; c < k; ++c) {
          const S r = now(i, c);
          now(i, c) = r - stored[c];
          stored[c] = r;
        }
      }
      model.add_residual_gradient(batch, ConstRowMatrixMap<S>(now_.data(), m, k), gradient_.map(), workspace_);
      samples_ += m;
    }

    [[nodiscard]] VectorMap<S> gradient() noexcept { return gradient_.map(); }
    [[nodiscard]] double loss() const noexcept { return loss_; }
    [[nodiscard]] Index samples() const noexcept { return samples_; }

   private:
    ResidualTable<S>* table_;
    AlignedBuffer<S> gradient_;
    AlignedBuffer<S> now_;  // the micro-batch's residuals at θ, then less the stored ones
    typename M::workspace_type workspace_;
    double loss_ = 0;
    Index samples_ = 0;
  };

  /// State `id` for micro-batches of up to `max_rows` samples.
  /// @throws dptrain::invalid_argument for a model of another scalar type or residual width than the table's
  template <Model M>
  [[nodiscard]] State<M> make(const M& model, Index /*id*/, Index max_rows) const {
    static_assert(ResidualGradient<M>,
                  "dptrain::GradientTableWorker needs a model with the ResidualGradient members (the linear models)");
    if constexpr (std::is_same_v<typename M::scalar_type, Scalar>) {
      if (table == nullptr)
        throw invalid_argument("dptrain::GradientTableWorker: no table (make it with GradientTable::worker())");
      if (table->residuals.cols() != model.residual_width())
        throw invalid_argument("dptrain::GradientTableWorker: the table has " +
                               std::to_string(table->residuals.cols()) + " residuals per sample, the model " +
                               std::to_string(model.residual_width()));
      return State<M>(table.get(), model, max_rows);
    } else {
      throw invalid_argument("dptrain::GradientTableWorker: the model's scalar type is not the table's");
    }
  }
};

/**
 * @brief The table of per-sample gradients of SAG and SAGA (Sag, Saga), data-parallel on the
 * trainer's threads: a Worker policy (worker()) and this callback, which starts the table at zero
 * at the start of every fit.
 *
 * For the linear models (LinearRegression, LogisticRegression, SoftmaxRegression and the sparse
 * ones: the ResidualGradient members) a sample's gradient is x̃ⱼ ⊗ rⱼ, with rⱼ the derivative of
 * its loss by its k linear outputs, so the table keeps rⱼ: n·k numbers (`bytes()`), not n·d.
 *
 * - The optimizer's state is ᾱ, the table's mean; both start at zero, and the tests check that
 *   ᾱ stays the mean of the stored gradients. A sample's first visit stores its gradient; until
 *   then it counts as zero (SAGA's estimate stays unbiased; SAG's first epoch takes shorter steps).
 * - Checkpoints store θ and ᾱ, not the table; resume() starts table and ᾱ again at zero from the
 *   resumed θ (and says so in FitReport::notes): a table of n·k numbers would outgrow θ for large
 *   data sets, and a table rebuilt at θ would not match the saved ᾱ.
 * - The synchronous step (EveryStepSynchronizer, Reproducible): a synchronizer that may compute
 *   a sample twice (BackupWorkers) or with replicas of θ and ᾱ (LocalSgd, BoundedStaleness,
 *   Hogwild) refuses Sag and Saga. Across processes the data must be sharded (MpiData::sharded):
 *   each process makes the table of its own shard and keeps its samples' rows; with the data
 *   replicated a sample's owner changes from epoch to epoch, and fit() refuses.
 *
 * @code
 * dptrain::GradientTable table(model, data);
 * dptrain::DataParallelTrainer trainer(options, dptrain::Saga{.lr = 0.1}, table.worker());
 * trainer.fit(model, theta, data, table);
 * @endcode
 */
template <ResidualGradient M, class D>
class GradientTable {
 public:
  using Scalar = typename M::scalar_type;

  /// A table of data.size() × model.residual_width() zeros. The model and data must outlive it.
  GradientTable(const M& model, const D& data) : table_(std::make_shared<ResidualTable<Scalar>>()) {
    table_->residuals = RowMatrix<Scalar>::Zero(data.size(), model.residual_width());
  }

  /// The Worker policy to give the trainer.
  [[nodiscard]] GradientTableWorker<Scalar> worker() const { return {table_}; }

  /// The residuals: one row per sample.
  [[nodiscard]] const RowMatrix<Scalar>& residuals() const noexcept { return table_->residuals; }
  /// The table's memory: n·k scalars.
  [[nodiscard]] Index bytes() const noexcept { return table_->residuals.size() * static_cast<Index>(sizeof(Scalar)); }

  /// Starts the table at zero, as the trainer starts ᾱ.
  void on_fit_begin(TrainContext<Scalar>& /*ctx*/) { table_->residuals.setZero(); }

 private:
  std::shared_ptr<ResidualTable<Scalar>> table_;
};

}  // namespace dptrain
