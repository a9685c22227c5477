// SPDX-License-Identifier: MIT
// fashion_mnist --bytes: the pixels kept as bytes (dptrain::ByteDataset), read as pixel · 1/255.
// Beside fashion_mnist.cpp so that the two forms compile in parallel (fashion_mnist.hpp).
#include "fashion_mnist.hpp"

int fashion_mnist::train_on_bytes(const Options& o, const examples::Processes& processes) {
  return train_on(examples::load_fashion_mnist_bytes(processes.lead()), o, processes);
}
