#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Draws what examples/variance_reduction writes: the loss gap to the optimum (log scale) against
# gradient evaluations per sample (left) and against wall time (right), one line per method and
# thread count.
#
#   examples/plot_variance_reduction.sh variance_reduction.csv [variance_reduction.png]
#
# Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 variance_reduction.csv [out.png]" >&2
  exit 2
fi
csv="$1"
png="${2:-${csv%.csv}.png}"
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One data file per method and thread count (evaluations, seconds, gap), in the CSV's order; a gap
# of zero (the optimum itself) has no logarithm and is left out.
awk -F, -v dir="$tmp" 'NR > 1 && $7 > 0 {
  run = $1 " (" $2 (($2 == 1) ? " thread)" : " threads)")
  if (!(run in seen)) { seen[run] = ++runs; print run > (dir "/runs") }
  print $4, $5, $7 > (dir "/" seen[run] ".dat")
}' "$csv"

{
  echo "set terminal pngcairo size 1120,420 font ',10'"
  echo "set output '$png'"
  echo "set multiplot layout 1,2"
  echo "set logscale y; set format y '10^{%L}'; set ylabel 'loss gap to the optimum'; set grid; set key top right"
  for panel in "1 gradient evaluations per sample" "2 wall time (s)"; do
    column="${panel%% *}"
    echo "set xlabel '${panel#* }'"
    plots=()
    r=0
    while IFS= read -r run; do
      r=$((r + 1))
      plots+=("'$tmp/$r.dat' using $column:3 with linespoints pointsize 0.5 title '$run'")
    done < "$tmp/runs"
    (IFS=,; echo "plot ${plots[*]}")
  done
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "wrote $png"
