#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two builds of oversubscription_epoch on one synchronizer, in ABBA rounds: each round runs old,
# new, new, old (or the reverse) at 2 threads for 3 epochs and prints new/old of the round's sums
# of seconds per epoch. Read the median of the rounds.
#
#   benchmarks/synchronizer_ab.sh OLD/oversubscription_epoch NEW/oversubscription_epoch backup 6
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 OLD NEW SYNCHRONIZER ROUNDS" >&2
  exit 2
fi
old=$1 new=$2 sync=$3 rounds=$4
epoch() { "$1" --threads 2 --synchronizer "$sync" --epochs 3 2>&1 | awk '/s\/epoch/ { print $2 }'; }
for r in $(seq "$rounds"); do
  if ((r % 2)); then a=$(epoch "$old"); b=$(epoch "$new"); b2=$(epoch "$new"); a2=$(epoch "$old")
  else b=$(epoch "$new"); a=$(epoch "$old"); a2=$(epoch "$old"); b2=$(epoch "$new"); fi
  python3 -c "print(($b + $b2) / ($a + $a2))"
done
