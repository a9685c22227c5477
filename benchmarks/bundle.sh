#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packs dptrain_benchmarks into a folder that runs on another x86-64 Linux machine with nothing
# installed (no Eigen, Google Benchmark or OpenMP runtime there, any glibc): for a thread-scaling
# run on a larger machine that is lent, not administered.
#
#   benchmarks/bundle.sh build/bundle             # here: builds two binaries and copies their libraries
#   build/bundle/run.sh results/                  # there: the scaling subset at 1, 2, 4, … all cores
#   python3 benchmarks/tables.py results/dptrain-scaling.json   # here again: the tables
#
# Two builds, AVX-512 (x86-64-v4) and AVX2 + FMA (x86-64-v3); run.sh picks the widest the CPU has.
# Every shared library the binaries load, the C library and its loader included, is copied beside
# them and run.sh starts them through that loader, so the other machine's own libraries never
# mix in. Without Debian's dataset-fashion-mnist there, the benchmarks generate data of its shape.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:?usage: bundle.sh OUTPUT_DIR}" && cd "$1" && pwd)"
mkdir -p "$out/lib"

# -Wno-maybe-uninitialized: GCC 12's false warning inside its own avx512fintrin.h, as for the
# native build (CMakeLists.txt).
for isa in x86-64-v4 x86-64-v3; do
  build="$root/build/bundle-$isa"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPTRAIN_NATIVE=OFF \
    -DCMAKE_CXX_FLAGS="-march=$isa -mtune=generic -Wno-maybe-uninitialized" \
    -DDPTRAIN_BUILD_TESTS=OFF -DDPTRAIN_BUILD_EXAMPLES=OFF -DDPTRAIN_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$build" --target dptrain_benchmarks
  cp "$build/benchmarks/dptrain_benchmarks" "$out/dptrain_benchmarks-$isa"
done

# The libraries (and the loader) the binaries were linked against, from ldd's "=> path" and
# loader lines.
ldd "$out/dptrain_benchmarks-x86-64-v4" | awk '/=> \// { print $3 } /^[ \t]*\/.*ld-linux/ { print $1 }' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done

cat >"$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# Thread scaling with the bundled dptrain_benchmarks: writes OUTPUT_DIR/dptrain-scaling.json and
# OUTPUT_DIR/machine.txt. Threads pinned one per core; 3 repetitions in random order.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "${1:?usage: run.sh OUTPUT_DIR}" && cd "$1" && pwd)"
isa=x86-64-v3
if grep -q avx512f /proc/cpuinfo; then isa=x86-64-v4; fi
{ echo "binary: dptrain_benchmarks-$isa"; nproc; lscpu 2>/dev/null || grep -m1 'model name' /proc/cpuinfo; } \
  >"$out/machine.txt"
filter="${FILTER:-FmaPeak|Gradient<.*>/rows:(16|32|64|128|256)\$|TrainerEpoch<(Softmax|Mlp)>/|TrainerStepExchange|Independent|ReferenceOmp|StreamRead|TeamBarrier}"
OMP_PROC_BIND=close OMP_PLACES=cores "$here/lib/"ld-linux-x86-64.so.* --library-path "$here/lib" \
  "$here/dptrain_benchmarks-$isa" --benchmark_filter="$filter" \
  --benchmark_repetitions="${REPETITIONS:-3}" --benchmark_enable_random_interleaving=true \
  --benchmark_min_time="${MIN_TIME:-0.5}" --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/dptrain-scaling.json" --benchmark_out_format=json
EOF
chmod +x "$out/run.sh"
du -sh "$out"
