// SPDX-License-Identifier: MIT
// A model that throws on the minibatch holding a marked sample: a worker that fails at a known step.
#pragma once

#include <stdexcept>

#include "dptrain/models/linear_regression.hpp"

namespace test {

struct WorkerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws WorkerFailure(`message`) on a batch whose first feature holds marker() somewhere: mark
// row r of unshuffled data and the step whose minibatch holds r fails, whoever computes it.
struct ThrowsOnMarkedRow : dptrain::LinearRegression<double> {
  static constexpr double marker() { return 12345; }
  ThrowsOnMarkedRow(dptrain::Index inputs, const char* message) : LinearRegression(inputs), message(message) {}
  double loss_and_gradient(dptrain::ConstVectorRef<double> theta, const batch_type& batch,
                           dptrain::VectorRef<double> grad, workspace_type& ws) const {
    if ((batch.features.col(0).array() == marker()).any()) throw WorkerFailure(message);
    return LinearRegression::loss_and_gradient(theta, batch, grad, ws);
  }
  const char* message;
};

}  // namespace test
