// SPDX-License-Identifier: MIT
// fashion_mnist: softmax regression or an MLP on Fashion-MNIST, on every core, with a progress
// bar, validation accuracy per epoch and the final test accuracy. Under `mpirun` (examples built
// with the MPI component) every rank trains with its threads, one global step at a time. The
// flags are read here; the training is in fashion_mnist.hpp.
#include <dptrain/dptrain.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "common/machine.hpp"
#include "common/processes.hpp"
#include "fashion_mnist.hpp"

int fashion_mnist::train_on_floats(const Options& o, const examples::Processes& processes) {
  return train_on(examples::load_fashion_mnist(processes.lead()), o, processes);
}

int main(int argc, char** argv) {
  const examples::Processes processes(argc, argv);
  fashion_mnist::Options o;
  CLI::App app("Train on Fashion-MNIST (Debian's dataset-fashion-mnist) on every core");
  app.add_option("--model", o.model, "softmax or mlp (784-256-10)")->check(CLI::IsMember({"softmax", "mlp"}));
  app.add_option("--threads", o.threads,
                 "worker threads (per rank under mpirun; default: all cores, shared by the ranks)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "global minibatch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", o.epochs, "passes over the data (default: 15 mlp, 10 softmax)")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr", o.lr, "peak learning rate of the cosine schedule (default: per model and optimizer)")
      ->check(CLI::PositiveNumber);
  app.add_option("--optimizer", o.optimizer, "sgd, momentum, adam or adamw")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}));
  app.add_option("--aggregator", o.aggregator, "reduce-scatter, ring, tree or serial")
      ->check(CLI::IsMember({"reduce-scatter", "ring", "tree", "serial"}));
  app.add_option("--synchronizer", o.synchronizer,
                 "every-step (synchronous SGD), backup (the same steps with no barrier, for cores shared with "
                 "busy processes; one process) or reproducible (the same steps, theta the same bytes on any ranks x "
                 "threads: 8 shards per minibatch)")
      ->check(CLI::IsMember({"every-step", "backup", "reproducible"}));
  app.add_option("--seed", o.seed, "seed of the initialisation, the split and the shuffle");
  app.add_flag("--bytes", o.bytes,
               "keep the pixels as bytes, read as pixel · 1/255 (a quarter of the memory and of the bytes each "
               "shuffled batch reads)");
  app.add_option("--precision", o.precision,
                 "the MLP's matrix products: full (fp32) or bf16 (inputs rounded to bfloat16, fp32 accumulation, "
                 "fp32 weights; AVX512-BF16 where the CPU has it)")
      ->check(CLI::IsMember({"full", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  if (o.precision == "bf16" && o.model != "mlp") {
    if (processes.lead()) std::fprintf(stderr, "fashion_mnist: --precision bf16 is an option of --model mlp\n");
    return 2;
  }
  if (o.synchronizer == "backup" && processes.ranks() > 1) {
    if (processes.lead()) std::fprintf(stderr, "fashion_mnist: --synchronizer backup runs in one process\n");
    return 2;
  }

  const bool mlp = o.model == "mlp";
  if (o.epochs == 0) o.epochs = mlp ? 15 : 10;
  if (o.lr == 0) {
    const bool adaptive = o.optimizer == "adam" || o.optimizer == "adamw";
    o.lr = adaptive ? 1e-3 : o.optimizer == "sgd" ? (mlp ? 0.2 : 0.5) : (mlp ? 0.05 : 0.05);
  }

  const std::string workers = processes.describe(examples::threads_text(o.threads));
  if (processes.lead()) std::printf("%s\n", examples::machine_line(workers).c_str());
  if (processes.lead() && o.mlp_precision() == dptrain::Precision::bf16)
    std::printf("bf16 products: %s\n", std::string(dptrain::bf16_kernel_name()).c_str());
  return o.bytes ? fashion_mnist::train_on_bytes(o, processes) : fashion_mnist::train_on_floats(o, processes);
}
