#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Draws the loss curves that examples/sync_vs_async writes: the training loss at every epoch's end
# against wall time, one panel per scenario (slow worker, busy process), one line per mode, and
# the target loss as a dashed line when BASE.csv (the runs) lies beside BASE_curves.csv. Two
# panels per row.
#
#   examples/plot_sync_vs_async.sh sync_vs_async_curves.csv [sync_vs_async.png]
#
# Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 BASE_curves.csv [out.png]" >&2
  exit 2
fi
curves="$1"
png="${2:-${curves%_curves.csv}.png}"
runs="${curves%_curves.csv}.csv"
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One data file per scenario and mode, and the lists of both in the order of the CSV.
awk -F, -v dir="$tmp" 'NR > 1 {
  if (!($1 in seen_scenario)) { seen_scenario[$1] = ++scenarios; print $1 > (dir "/scenarios") }
  if (!($2 in seen_mode)) { seen_mode[$2] = ++modes; print $2 > (dir "/modes") }
  print $4, $5 > (dir "/" seen_scenario[$1] "_" seen_mode[$2] ".dat")
}' "$curves"
target=""
[ -f "$runs" ] && target="$(awk -F, 'NR == 2 { print $4 }' "$runs")"

scenarios=$(wc -l < "$tmp/scenarios")
columns=$((scenarios < 2 ? scenarios : 2))
rows=$(((scenarios + 1) / 2))
{
  echo "set terminal pngcairo size $((560 * columns)),$((420 * rows)) font ',10'"
  echo "set output '$png'"
  echo "set multiplot layout $rows,$columns"
  echo "set xlabel 'wall time (s)'; set ylabel 'training loss (epoch mean)'; set grid"
  echo "set key top right"
  s=0
  while IFS= read -r scenario; do
    s=$((s + 1))
    echo "set title '$scenario'"
    plots=()
    m=0
    while IFS= read -r mode; do
      m=$((m + 1))
      [ -f "$tmp/${s}_${m}.dat" ] && plots+=("'$tmp/${s}_${m}.dat' using 1:2 with linespoints title '$mode'")
    done < "$tmp/modes"
    [ -n "$target" ] && plots+=("$target with lines dashtype 2 lc rgb 'gray' title 'target'")
    (IFS=,; echo "plot ${plots[*]}")
  done < "$tmp/scenarios"
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "wrote $png"
