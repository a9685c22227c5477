#!/bin/bash
# SPDX-License-Identifier: MIT
# The project's flags against the compiler's own tuning, on this machine (issue 15).
#
# Builds the benchmarks twice with -march=native: once as the compiler tunes for this CPU
# (DPTRAIN_TUNE=native, what a user's plain `-O3 -march=native` gets) and once with the project's
# flags (-mtune=generic), then runs both in alternating rounds (compare/ab.py) and prints the
# ratio tuned/default per benchmark: the trainer's own time per step (BM_TrainerOwnTime), the
# gradient kernels, the trainer's step and the one-thread references.
#
#   benchmarks/flags.sh [ROUNDS] [CXX]        # defaults: 5 rounds, g++
#
# Build directories: build/flags-<compiler>-{default,tuned}. Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cxx=${2:-g++}
filter='^BM_TrainerOwnTime|^BM_Gradient<(Softmax|Mlp)>/rows:256$|^BM_FmaPeak<Avx512>|^BM_TrainerStep<(Softmax|Mlp)>/threads:1/|^BM_ReferenceEigenEpoch'

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; $($cxx --version | head -1)"
echo "compiler's own tuning for -march=native: $($cxx -march=native -Q --help=target 2>/dev/null | sed -n 's/^ *-mtune= *//p' | head -1)"
for variant in default tuned; do
  dir=build/flags-$(basename "$cxx")-$variant
  tune=generic
  [ "$variant" = default ] && tune=native
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DDPTRAIN_TUNE=$tune \
    -DDPTRAIN_BUILD_TESTS=OFF -DDPTRAIN_BUILD_EXAMPLES=OFF -DDPTRAIN_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$dir" --target dptrain_benchmarks >/dev/null
done
echo "old = the compiler's tuning (DPTRAIN_TUNE=native), new = the project's (-mtune=generic); times are medians"
python3 benchmarks/compare/ab.py "build/flags-$(basename "$cxx")-default/benchmarks/dptrain_benchmarks" \
  "build/flags-$(basename "$cxx")-tuned/benchmarks/dptrain_benchmarks" --filter "$filter" --rounds "$rounds" --min-time 0.3
