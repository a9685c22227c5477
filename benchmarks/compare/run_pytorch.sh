#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs pytorch_fmnist.py for both models at 1, 2, 4, … all cores, in PyTorch's best CPU
# configuration on this machine, one JSON line per run (to stdout, or to the file given).
#
# Debian's python3-torch does its fp32 matrix products in whatever libblas.so.3 the process loads
# (BLAS_INFO=generic). The best one here is OpenBLAS built with OpenMP (libopenblas0-openmp):
# it shares PyTorch's libgomp thread pool, where the pthreads build would start a second pool and
# oversubscribe the cores. It is selected for these commands only, through LD_LIBRARY_PATH (no
# system-wide update-alternatives needed). OPENBLAS_CORETYPE=SkylakeX makes OpenBLAS 0.3.21 use
# its AVX-512 kernels also on AMD Zen 4/5, which it would otherwise run with its Haswell (AVX2)
# kernels; leave it out on CPUs without AVX-512. Threads are pinned as for dptrain's runs.
#
#   apt-get install -y python3-torch libopenblas0-openmp
#   benchmarks/compare/run_pytorch.sh results/pytorch.jsonl
#
# Environment: EPOCHS (default 5), THREADS ("1 2 4 …" by default), MODELS ("softmax mlp" by
# default), BYTES (set: the training pixels kept as uint8, --bytes), PRECISION (bf16: autocast, --precision), PYTHON (default /usr/bin/python3,
# Debian's, which has python3-torch; a pyenv or venv python3 first in PATH would not).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-/dev/stdout}"
python="${PYTHON:-/usr/bin/python3}"
epochs="${EPOCHS:-5}"
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp

if [ ! -e "$blas/libblas.so.3" ]; then
  echo "run_pytorch.sh: $blas not found: apt-get install libopenblas0-openmp" >&2
  exit 1
fi
coretype=""
if grep -q avx512f /proc/cpuinfo; then coretype=SkylakeX; fi

if [ -z "${THREADS:-}" ]; then
  procs="$(nproc)"
  THREADS=""
  for ((t = 1; t < procs; t *= 2)); do THREADS+="$t "; done
  THREADS+="$procs"
fi

: >"$out"
for model in ${MODELS:-softmax mlp}; do
  for threads in $THREADS; do
    echo "pytorch: $model, $threads threads" >&2
    env LD_LIBRARY_PATH="$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ${coretype:+OPENBLAS_CORETYPE=$coretype} \
      OMP_PROC_BIND=close OMP_PLACES=cores \
      "$python" "$here/pytorch_fmnist.py" --model "$model" --threads "$threads" --epochs "$epochs" ${BYTES:+--bytes} \
      ${PRECISION:+--precision "$PRECISION"} \
      --json >>"$out"
  done
done
