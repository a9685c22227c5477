#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dptrain under mpiexec -np 2 (2 ranks x 1 thread, benchmarks/mpi_epoch) against PyTorch
# DistributedDataParallel over 2 processes x 1 thread (gloo; pytorch_fmnist.py --ddp 2), both
# 2 epochs of momentum 0.9, lr 0.05, batch 256, in alternating rounds. PyTorch gets the BLAS setup
# of run_pytorch.sh (OpenMP OpenBLAS, OPENBLAS_CORETYPE on AVX-512).
#   apt-get install -y python3-torch libopenblas0-openmp
#   benchmarks/compare/ddp_rounds.sh build/release/benchmarks/mpi_epoch [rounds] [models]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary=$1 rounds=${2:-3} models=${3:-softmax mlp}
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp
coretype=""
if grep -q avx512f /proc/cpuinfo; then coretype=SkylakeX; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for ((r = 0; r < rounds; r++)); do
  for model in $models; do
    mpiexec --oversubscribe --bind-to none --mca btl self,vader -np 2 "$binary" funneled 1 "$model"
    env LD_LIBRARY_PATH="$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ${coretype:+OPENBLAS_CORETYPE=$coretype} \
      /usr/bin/python3 "$here/pytorch_fmnist.py" --model "$model" --ddp 2 --threads 1 --epochs 2 --lr 0.05 |
      tail -n 1 | sed "s/^/pytorch ddp 2x1 $model: /"
  done
done
