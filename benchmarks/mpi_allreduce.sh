#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mpi_allreduce for a few ranks x threads on this machine's shared memory, unbound (rank 0's
# in-process rows run ranks x threads threads). Default: 2x1, and 2x2 and 4x1 with 4 CPUs or more.
#   benchmarks/mpi_allreduce.sh build/bench/benchmarks/mpi_allreduce [RxT ...] [-- mpi_allreduce options]
set -euo pipefail
binary=$1
shift
configs=()
while (($# > 0)) && [[ $1 != -- ]]; do
  configs+=("$1")
  shift
done
if (($# > 0)); then shift; fi  # the --
if ((${#configs[@]} == 0)); then
  configs=(2x1)
  if (($(nproc) >= 4)); then configs+=(2x2 4x1); fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for config in "${configs[@]}"; do
  ranks=${config%x*} threads=${config#*x}
  mpiexec --oversubscribe --bind-to none --mca btl self,vader -np "$ranks" "$binary" --threads "$threads" "$@"
  echo
done
