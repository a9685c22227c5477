#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hogwild!'s sparse updates (issue 32): examples/sync_vs_async on a sparse LIBSVM problem, two
# builds of it side by side in ABBA rounds (the VM drifts by more than some differences measured).
# Each line: build, mode, seconds of the whole fit (10 epochs, 2 threads).
#   benchmarks/sparse_libsvm.py /tmp/sparse.libsvm
#   benchmarks/hogwild_sparse_rounds.sh BEFORE/sync_vs_async AFTER/sync_vs_async /tmp/sparse.libsvm [rounds]
set -euo pipefail
before=$1 after=$2 data=$3 rounds=${4:-5}
csv=$(mktemp -d)
trap 'rm -rf "$csv"' EXIT
run() {
  "$2" --libsvm "$data" --modes sync hogwild hogwild-atomic --slowdowns 0 --busy false --epochs 10 --threads 2 \
    --csv "$csv/run" >/dev/null
  awk -F, -v build="$1" 'NR > 1 { print build, $2, $7 }' "$csv/run.csv"
}
for ((r = 0; r < rounds; r++)); do
  run before "$before"
  run after "$after"
  run after "$after"
  run before "$before"
done
