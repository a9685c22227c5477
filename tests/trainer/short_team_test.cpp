// SPDX-License-Identifier: MIT
// A team OpenMP cannot give (a thread limit, a region that may not nest) is refused before any hook.
#include <catch2/catch.hpp>

#include <string>

#include "dptrain/dptrain.hpp"
#include "support/data.hpp"

#if defined(_OPENMP)
#include <omp.h>

TEST_CASE("DataParallelTrainer: a fit() OpenMP cannot give its threads fails before on_fit_begin", "[trainer]") {
  struct Begun {
    bool called = false;
    void on_fit_begin(dptrain::TrainContext<double>&) { called = true; }
  } begun;
  const auto data = test::linear_data<double>(32, 3, 1);
  const dptrain::LinearRegression<double> model(3);
  dptrain::Vector<double> theta = model.init_parameters();
  dptrain::DataParallelTrainer trainer({.threads = 2, .batch_size = 8}, dptrain::Sgd{.lr = 0.01});
  // Inside an active region, with one active level allowed, a nested region gets one thread.
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  int outer = 0;
  std::string what;
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 0) {
      outer = omp_get_num_threads();
      try {
        trainer.fit(model, theta, data, begun);
      } catch (const std::exception& e) {
        what = e.what();
      }
    }
  }
  omp_set_max_active_levels(levels);
  if (outer < 2) return;  // OpenMP gave the outer region one thread: nothing to check here
  CHECK_THAT(what, Catch::Matchers::Contains("asked OpenMP for 2 threads but got 1"));
  CHECK_FALSE(begun.called);
}
#endif
