#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 2 ranks x 1 thread against 1 rank x 2 threads (the ranks summing in a shared-memory window,
# and without it, through MPI_Allreduce: "network"), and 2 x 2 funneled against multiple, in
# alternating rounds (the VM drifts by more than the differences measured).
#   benchmarks/mpi_rounds.sh build/release/benchmarks/mpi_epoch [rounds] [model]
set -euo pipefail
binary=$1 rounds=${2:-5} model=${3:-mlp}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpiexec --oversubscribe --bind-to none --mca btl self,vader)
for ((r = 0; r < rounds; r++)); do
  "$binary" single 2 "$model"
  "${mpi[@]}" -np 2 "$binary" funneled 1 "$model"
  "${mpi[@]}" -np 2 "$binary" network 1 "$model"
done
for ((r = 0; r < rounds; r++)); do
  "${mpi[@]}" -np 2 -x OMP_WAIT_POLICY=passive "$binary" funneled 2 "$model"
  "${mpi[@]}" -np 2 -x OMP_WAIT_POLICY=passive "$binary" multiple 2 "$model"
done
