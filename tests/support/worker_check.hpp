// SPDX-License-Identifier: MIT
// WorkerCheck: a Worker that counts the micro-batches run on a thread other than current_worker() names.
#pragma once

#include <omp.h>

#include <atomic>

#include "dptrain/core/team_member.hpp"
#include "dptrain/workers/gradient_worker.hpp"

namespace test {

/// Counts every micro-batch (`calls`) and those whose thread is not the worker
/// dptrain::current_worker() names, `first_worker` + the OpenMP thread (`elsewhere`).
struct WorkerCheck {
  static inline std::atomic<int> calls{0}, elsewhere{0};
  static inline dptrain::Index first_worker = 0;  ///< this process's first global worker

  static void reset(dptrain::Index first) {
    calls = 0;
    elsewhere = 0;
    first_worker = first;
  }

  template <class M>
  struct State {
    typename dptrain::GradientWorker::State<M> inner;
    void zero() { inner.zero(); }
    void accumulate(const M& model, dptrain::ConstVectorRef<typename M::scalar_type> theta,
                    const typename M::batch_type& batch) {
      ++calls;
      if (dptrain::current_worker() != first_worker + omp_get_thread_num()) ++elsewhere;
      inner.accumulate(model, theta, batch);
    }
    [[nodiscard]] auto gradient() { return inner.gradient(); }
    [[nodiscard]] double loss() const { return inner.loss(); }
    [[nodiscard]] dptrain::Index samples() const { return inner.samples(); }
  };
  template <class M>
  [[nodiscard]] State<M> make(const M& model, dptrain::Index id, dptrain::Index max_rows) const {
    return {dptrain::GradientWorker{}.make(model, id, max_rows)};
  }
};

}  // namespace test
