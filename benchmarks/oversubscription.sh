#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shared and oversubscribed machines: seconds per epoch under each wait policy, in alternating
# rounds (a shared machine drifts by more than the differences measured), medians of the rounds.
#   benchmarks/oversubscription.sh build/bench/benchmarks/oversubscription_epoch [rounds] [-- options...]
# The options after -- go to every run (e.g. -- --samples 20000 --partitioner balancing).
# Builds nothing. Scenarios, each with the three waits below:
#   quiet  1 vs 2 threads, nothing else running          target: 2 threads lose nothing to the new wait
#   busy   1 vs 2 threads beside one `yes > /dev/null`   target: 2 threads no slower than 1
#   over   cores vs 4 x cores threads                    target: 4 x cores at most 2x slower
# Waits: openmp (the `omp barrier`, runtime defaults), openmp with OMP_WAIT_POLICY=passive (the
# runtime's own sleeping barrier, a reference), spin-then-sleep (dptrain's TeamBarrier), and
# backup (spin-then-sleep's waits, steps with no barrier: dptrain::BackupWorkers). Each row's last
# column divides by spin-then-sleep's time on the few threads: the default one user starts from.
# Each scenario also prints the median of its runs' FitReport::other_load: the cores' worth of CPU
# time other work took (about 1 beside the `yes`, about 0 otherwise; coarse for short epochs).
# Leave the machine otherwise idle; OMP_PROC_BIND and friends are passed through as set.
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 path/to/oversubscription_epoch [rounds] [-- options...]" >&2
  exit 2
fi
binary=$1
shift
rounds=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  rounds=$1
  shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
extra=("$@")
cores=$(nproc) # the CPUs of this process's affinity mask, like dptrain::available_cores()

echo "CPU: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc --all) CPUs, $cores available)"
echo "rounds: $rounds (medians); options: ${extra[*]:-none}; $(uname -r)"

waits=("openmp" "openmp-passive" "spin-then-sleep" "backup")
declare -A times loads

# One epoch: prints its seconds per epoch and the report's other_load (other work's cores).
epoch() { # wait threads
  local wait=$1 threads=$2 env=()
  local sync=every-step
  [ "$wait" = openmp-passive ] && env=(OMP_WAIT_POLICY=passive) && wait=openmp
  [ "$wait" = backup ] && sync=backup && wait=spin-then-sleep
  env "${env[@]}" "$binary" --threads "$threads" --wait "$wait" --synchronizer "$sync" "${extra[@]}" |
    awk '$1 == "s/epoch" && $5 == "other-load" { print $2, $6; found = 1 } END { exit !found }'
}

median() { # values...
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Every configuration of a scenario once per round, in the same order, all waits interleaved.
measure() { # scenario threads...
  local scenario=$1
  shift
  for ((r = 0; r < rounds; r++)); do
    for threads in "$@"; do
      for wait in "${waits[@]}"; do
        read -r seconds load < <(epoch "$wait" "$threads")
        times[$scenario,$wait,$threads]+="$seconds "
        loads[$scenario]+="$load "
      done
    done
  done
}

# The table of a scenario: median s/epoch per wait and thread count, and slow / fast ratio.
# shellcheck disable=SC2086 # the rounds' times: one word each
report() { # scenario title few many target
  local scenario=$1 title=$2 few=$3 many=$4 target=$5
  echo
  echo "## $title"
  printf '%-16s %14s %14s %22s %26s\n' wait "s/epoch $few thr" "s/epoch $many thr" "t($many) / t($few)" \
    "t($many) / t(default, $few)"
  local base
  base=$(median ${times[$scenario,spin-then-sleep,$few]})
  for wait in "${waits[@]}"; do
    local a b
    a=$(median ${times[$scenario,$wait,$few]})
    b=$(median ${times[$scenario,$wait,$many]})
    printf '%-16s %14.4f %14.4f %22.2f %26.2f\n' "$wait" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print b / a }')" \
      "$(awk -v a="$base" -v b="$b" 'BEGIN { print b / a }')"
  done
  echo "target: $target"
  echo "other work's load (FitReport::other_load, median of the scenario's runs): $(median ${loads[$scenario]}) cores"
}

measure quiet 1 2

yes >/dev/null &
busy=$!
trap 'kill $busy 2>/dev/null || true' EXIT
measure busy 1 2
kill "$busy"
wait "$busy" 2>/dev/null || true
trap - EXIT

measure over "$cores" $((4 * cores))

report quiet "quiet machine, 1 vs 2 threads" 1 2 "spin-then-sleep as fast as openmp (compare the columns across waits)"
report busy "one \`yes > /dev/null\` beside it, 1 vs 2 threads" 1 2 "t(2) / t(1) <= 1: two threads no slower than one"
report over "threads = cores ($cores) vs 4 x cores ($((4 * cores)))" "$cores" $((4 * cores)) \
  "t(4 x cores) / t(cores) <= 2"
