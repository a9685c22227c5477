#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The reproducible mode's cost (issue 33): the MLP epoch under Reproducible{.shards = S} against
# the synchronous step, at 1 rank x 2 threads and at 2 ranks x 1 thread, in ABBA rounds (the VM
# drifts by more than the differences measured). Each line: seconds per epoch and max RSS.
#   benchmarks/reproducible_rounds.sh build/release/benchmarks/mpi_epoch [rounds] [shards...]
set -euo pipefail
binary=$1 rounds=${2:-4}
shards=("${@:3}")
((${#shards[@]} > 0)) || shards=(2 8)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpiexec --oversubscribe --bind-to none --mca btl self,vader -np 2)
for ((r = 0; r < rounds; r++)); do
  for s in "${shards[@]}"; do
    # ABBA: default, reproducible, reproducible, default
    "$binary" single 2 mlp 0
    "$binary" single 2 mlp "$s"
    "$binary" single 2 mlp "$s"
    "$binary" single 2 mlp 0
    "${mpi[@]}" "$binary" funneled 1 mlp 0
    "${mpi[@]}" "$binary" funneled 1 mlp "$s"
    "${mpi[@]}" "$binary" funneled 1 mlp "$s"
    "${mpi[@]}" "$binary" funneled 1 mlp 0
  done
done
