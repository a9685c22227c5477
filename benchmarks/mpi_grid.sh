#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The MPI layouts of one machine side by side: the cross-rank all-reduce at 2 ranks x C/2 threads
# and at C ranks x 1 thread (C: the cores), then MLP epochs of 1 x C, 2 x C/2 (window funneled,
# window multiple, no window), 4 x C/4 (funneled, multiple) and C x 1 (window, no window), in
# alternating rounds. Ranks unbound, shared memory.
#   benchmarks/mpi_grid.sh BUILD_DIR [rounds]      # BUILD_DIR holds benchmarks/mpi_epoch and mpi_allreduce
# Where the sandbox has no cross-process memory calls (gVisor), also export
# OMPI_MCA_btl_vader_single_copy_mechanism=none.
set -euo pipefail
build=$1 rounds=${2:-2}
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpiexec --oversubscribe --bind-to none --mca btl self,vader)
epoch="$build/benchmarks/mpi_epoch"
grep -m1 'model name' /proc/cpuinfo
mpiexec --version | head -1
"$(dirname "$0")/mpi_allreduce.sh" "$build/benchmarks/mpi_allreduce" "2x$((cores / 2))" "${cores}x1" -- \
  --sizes 203530,1000000 --rounds 3 | grep -E '^\||^#'
for ((r = 1; r <= rounds; r++)); do
  echo "## round $r"
  "$epoch" single "$cores" mlp
  for run in "2 funneled $((cores / 2))" "2 multiple $((cores / 2))" "2 network $((cores / 2))" \
    "4 funneled $((cores / 4))" "4 multiple $((cores / 4))" "$cores funneled 1" "$cores network 1"; do
    read -r ranks mode threads <<<"$run"
    if ((threads > 0)); then "${mpi[@]}" -np "$ranks" "$epoch" "$mode" "$threads" mlp; fi
  done
done 2>&1 | grep -v -E 'Fashion-MNIST not found|using GENERATED'
