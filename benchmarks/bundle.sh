#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packs dptrain_benchmarks into a folder that runs on another x86-64 Linux machine with nothing
# installed (no Eigen, Google Benchmark or OpenMP runtime there, any glibc): for a thread-scaling
# run on a larger machine that is lent, not administered.
#
#   benchmarks/bundle.sh build/bundle             # here: builds the binaries and copies their libraries
#   build/bundle/run.sh results/                  # there: the scaling subset at 1, 2, 4, … all cores
#   build/bundle/run.sh results/ scaling          # there: thread_scaling at 1 … all threads per batch size
#   python3 benchmarks/tables.py results/dptrain-scaling.json   # here again: the tables
#
# Two builds, AVX-512 (x86-64-v4) and AVX2 + FMA (x86-64-v3), each of dptrain_benchmarks and the
# thread_scaling example (without MPI, whose run-time plugins would not travel); run.sh picks the
# widest the CPU has.
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
    -DDPTRAIN_BUILD_TESTS=OFF -DDPTRAIN_BUILD_EXAMPLES=ON -DDPTRAIN_BUILD_BENCHMARKS=ON -DDPTRAIN_MPI=OFF >/dev/null
  cmake --build "$build" --target dptrain_benchmarks thread_scaling
  cp "$build/benchmarks/dptrain_benchmarks" "$out/dptrain_benchmarks-$isa"
  cp "$build/examples/thread_scaling" "$out/thread_scaling-$isa"
done

# The libraries (and the loader) the binaries were linked against, from ldd's "=> path" and
# loader lines.
ldd "$out/dptrain_benchmarks-x86-64-v4" "$out/thread_scaling-x86-64-v4" | awk '/=> \// { print $3 } /^[ \t]*\/.*ld-linux/ { print $1 }' |
  sort -u | while read -r lib; do cp -L "$lib" "$out/lib/"; done

cat >"$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# run.sh OUTPUT_DIR [benchmarks|scaling]. Threads pinned one per core.
#   benchmarks (default): the scaling subset of dptrain_benchmarks, 3 repetitions in random order,
#     to OUTPUT_DIR/dptrain-scaling.json (FILTER, REPETITIONS, MIN_TIME override). It includes
#     BM_ShuffledRows, whose `asks` sweep shows how many coming rows the gather should ask for on
#     that machine's CPU, and asks:0 (counter rows_ahead) how many its timing chose (GatherAsks).
#   scaling: the thread_scaling example (1 … all threads, where the time goes) for both models at
#     each batch size of BATCHES (default "256 1024 4096": the linear scaling rule's larger global
#     batches), to OUTPUT_DIR/thread-scaling.txt.
# Both write OUTPUT_DIR/machine.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "${1:?usage: run.sh OUTPUT_DIR [benchmarks|scaling]}" && cd "$1" && pwd)"
mode="${2:-benchmarks}"
isa=x86-64-v3
if grep -q avx512f /proc/cpuinfo; then isa=x86-64-v4; fi
{ echo "binaries: *-$isa"; nproc; lscpu 2>/dev/null || grep -m1 'model name' /proc/cpuinfo; } \
  >"$out/machine.txt"
export OMP_PROC_BIND=close OMP_PLACES=cores
run() { "$here/lib/"ld-linux-x86-64.so.* --library-path "$here/lib" "$@"; }
case "$mode" in
benchmarks)
  filter="${FILTER:-FmaPeak|Gradient<.*>/rows:(16|32|64|128|256)\$|TrainerEpoch<(Softmax|Mlp)>/|TrainerStepExchange|Independent|ReferenceOmp|StreamRead|TeamBarrier|ShuffledRows}"
  run "$here/dptrain_benchmarks-$isa" --benchmark_filter="$filter" \
    --benchmark_repetitions="${REPETITIONS:-3}" --benchmark_enable_random_interleaving=true \
    --benchmark_min_time="${MIN_TIME:-0.5}" --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/dptrain-scaling.json" --benchmark_out_format=json
  ;;
scaling)
  for batch in ${BATCHES:-256 1024 4096}; do
    for model in mlp softmax; do
      run "$here/thread_scaling-$isa" --model "$model" --batch "$batch" --epochs "${EPOCHS:-1}"
    done
  done | tee "$out/thread-scaling.txt"
  ;;
*) echo "run.sh: unknown mode $mode (benchmarks or scaling)" >&2; exit 2 ;;
esac
EOF
chmod +x "$out/run.sh"
du -sh "$out"
