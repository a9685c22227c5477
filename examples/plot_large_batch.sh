#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Draws what examples/large_batch writes: the final test accuracy against the global batch size
# (log scale), one line per learning-rate rule; a run that diverged has no point.
#
#   examples/plot_large_batch.sh large_batch.csv [large_batch.png]
#
# Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 large_batch.csv [out.png]" >&2
  exit 2
fi
csv="$1"
png="${2:-${csv%.csv}.png}"
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One data file per rule (batch, accuracy), in the CSV's order; diverged runs are left out.
awk -F, -v dir="$tmp" 'NR > 1 {
  if (!($2 in seen)) { seen[$2] = ++rules; print $2 > (dir "/rules") }
  if ($4 != "") print $1, $4 > (dir "/" seen[$2] ".dat")
}' "$csv"

{
  echo "set terminal pngcairo size 640,420 font ',10'"
  echo "set output '$png'"
  echo "set logscale x 2; set xlabel 'global batch size'; set ylabel 'test accuracy (%)'; set grid"
  echo "set key bottom left"
  plots=()
  r=0
  while IFS= read -r rule; do
    r=$((r + 1))
    [ -f "$tmp/$r.dat" ] && plots+=("'$tmp/$r.dat' using 1:2 with linespoints title '$rule'")
  done < "$tmp/rules"
  (IFS=,; echo "plot ${plots[*]}")
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "wrote $png"
