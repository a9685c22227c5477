#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the reader fuzz targets (clang++, libFuzzer, ASan, UBSan) and fuzzes each for a bounded
# time on a scratch copy of its committed corpus, or (--replay) runs the committed corpus once.
#
# usage: tests/fuzz/run.sh [--replay] [SECONDS] [TARGET...]
#   SECONDS   fuzzing time per target (default: $FUZZ_SECONDS, else 30); ignored with --replay
#   TARGET    fuzz_idx, fuzz_libsvm, fuzz_csv, fuzz_checkpoint (default: all four)
# environment:
#   FUZZ_BUILD_DIR   build folder (default: build/fuzz), configured on first use
#   FUZZ_BUILD_JOBS  parallel compile jobs (default: 1)
#   FUZZ_JOBS        targets fuzzed at once, each on one core (default: 1)
#   FUZZ_WORK_DIR    scratch folder for corpora, logs and crash files (default: a new mktemp -d,
#                    removed when every target passed); the committed corpus is never written
#   CXX              the compiler to configure with (default: clang++)
# Exit status 0 when every target ran clean; 1 on any crash, leak, sanitizer report, broken
# invariant, timeout (-timeout=5 per input) or out-of-memory (-rss_limit_mb=2048); the log and
# the crash file are kept in the scratch folder. New inputs the fuzzer found stay there too; to
# add the useful ones to the committed corpus:
#   build/fuzz/fuzz_csv -merge=1 tests/fuzz/corpus/fuzz_csv <scratch>/fuzz_csv/corpus
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

replay=0
if [ "${1:-}" = "--replay" ]; then
  replay=1
  shift
fi
seconds="${FUZZ_SECONDS:-30}"
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_idx fuzz_libsvm fuzz_csv fuzz_checkpoint)
for target in "${targets[@]}"; do
  case "$target" in
    fuzz_idx | fuzz_libsvm | fuzz_csv | fuzz_checkpoint) ;;
    *) echo "run.sh: unknown target '$target' (fuzz_idx, fuzz_libsvm, fuzz_csv, fuzz_checkpoint)" >&2; exit 2 ;;
  esac
done

build="${FUZZ_BUILD_DIR:-build/fuzz}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}"
fi
cmake --build "$build" -j "${FUZZ_BUILD_JOBS:-1}" --target "${targets[@]}"

export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
common=(-timeout=5 -rss_limit_mb=2048)
# What a log holds when something went wrong, even if the exit status did not say so.
findings='ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|dptrain fuzz invariant broken|Assertion .* failed'

failed=()
if [ "$replay" = 1 ]; then
  for target in "${targets[@]}"; do
    seeds=("$here/corpus/$target"/*)
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/dptrain_fuzz.XXXXXX")"
    log="$scratch/log"
    # TMPDIR: the harness writes its input files there, so a crash leaves nothing behind.
    if TMPDIR="$scratch" "$build/$target" "${common[@]}" "${seeds[@]}" >"$log" 2>&1 && ! grep -qE "$findings" "$log"; then
      echo "== $target: ${#seeds[@]} corpus inputs replayed, all clean"
    else
      failed+=("$target")
      echo "== $target: FAILED; the inputs that fail, one process each:"
      for seed in "${seeds[@]}"; do
        if ! TMPDIR="$scratch" "$build/$target" "${common[@]}" "$seed" >"$log" 2>&1 ||
          grep -qE "$findings" "$log"; then
          echo "   ${seed#"$root"/}: $(grep -m1 -E "$findings" "$log" || echo "exit status non-zero")"
        fi
      done
    fi
    rm -rf "$scratch"
  done
else
  work="${FUZZ_WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dptrain_fuzz.XXXXXX")}"
  # Up to FUZZ_JOBS targets at once, each in its own folder; then the reports, in order.
  running=0
  for target in "${targets[@]}"; do
    dir="$work/$target"
    rm -rf "$dir"
    mkdir -p "$dir/corpus"
    cp "$here/corpus/$target"/* "$dir/corpus/"
    find "$dir/corpus" -type f | wc -l >"$dir/seeds"
    echo "== $target: fuzzing for ${seconds} s from $(cat "$dir/seeds") seeds in $dir"
    (
      status=0
      TMPDIR="$dir" "$build/$target" "${common[@]}" -max_total_time="$seconds" -print_final_stats=1 \
        -artifact_prefix="$dir/" -dict="$here/dict/$target.dict" "$dir/corpus" >"$dir/log" 2>&1 || status=$?
      echo "$status" >"$dir/status"
    ) &
    running=$((running + 1))
    if [ "$running" -ge "${FUZZ_JOBS:-1}" ]; then
      wait -n
      running=$((running - 1))
    fi
  done
  wait
  for target in "${targets[@]}"; do
    dir="$work/$target"
    count=$(cat "$dir/seeds")
    status=$(cat "$dir/status" 2>/dev/null || echo "?")
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$dir/log" | grep -oE '[0-9]+$' || echo "?")
    rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$dir/log" | grep -oE '[0-9]+$' || echo "?")
    found=$(($(find "$dir/corpus" -type f | wc -l) - count))
    if [ "$status" = 0 ] && ! grep -qE "$findings" "$dir/log"; then
      echo "== $target: clean: $runs executions, $rate per second, $found new corpus inputs"
    else
      failed+=("$target")
      echo "== $target: FAILED (exit status $status) after $runs executions; log $dir/log"
      grep -E "$findings|^SUMMARY|Test unit written to" "$dir/log" | head -n 8 | sed 's/^/   /' || true  # a log without such lines must not end the report
    fi
  done
  if [ ${#failed[@]} = 0 ] && [ -z "${FUZZ_WORK_DIR:-}" ]; then
    rm -rf "$work"
  else
    echo "== scratch folder kept: $work"
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "== failed: ${failed[*]}"
  exit 1
fi
echo "== all clean: ${targets[*]}"
