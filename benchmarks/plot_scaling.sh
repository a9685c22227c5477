#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Turns Google Benchmark JSON from dptrain_benchmarks into a PNG of speedup and parallel efficiency
# against threads, one line per benchmark family, with the ideal lines (speedup = N, efficiency = 1).
#
#   benchmarks/plot_scaling.sh results/dptrain.json [scaling.png] [name regex, default 'Epoch']
#
# Families are the names up to the first '/' that have a 'threads:N' argument and match the regex
# (by default the BM_…Epoch… families). Speedup is the throughput at N threads over 1 thread of
# the same family: samples_per_second where the benchmark counts it (BM_IndependentEpochs does N
# epochs per iteration), else T(1)/T(N). Each point is the median over repetitions when the file
# has aggregates (--benchmark_repetitions), else the mean of its runs. Needs python3 and gnuplot
# (gnuplot-nox).
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 results.json [out.png] [name regex]" >&2
  exit 2
fi
json="$1"
png="${2:-${json%.json}-scaling.png}"
pattern="${3:-Epoch}"
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One data file per family (threads, seconds, speedup, efficiency) and the gnuplot plot clauses.
python3 - "$json" "$pattern" "$tmp" <<'PY'
import collections, json, re, statistics, sys

path, pattern, out = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3]
scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
with open(path) as f:
    runs = json.load(f)["benchmarks"]
has_aggregates = any(r.get("run_type") == "aggregate" for r in runs)
times = collections.defaultdict(list)  # (family, threads) -> seconds per sample, or per iteration
for r in runs:
    if r.get("error_occurred"):
        continue
    if has_aggregates and not (r.get("run_type") == "aggregate" and r.get("aggregate_name") == "median"):
        continue
    name = r.get("run_name", r["name"])
    m = re.search(r"/threads:(\d+)", name)
    family = name.split("/")[0]
    if not m or not pattern.search(family):
        continue
    rate = r.get("samples_per_second")
    times[(family, int(m.group(1)))].append(1 / rate if rate else r["real_time"] * scale[r["time_unit"]])

families = sorted({f for f, _ in times})
if not families:
    sys.exit(f"plot_scaling.sh: no benchmark with a threads:N argument matches '{pattern.pattern}' in {path}")
clauses = []
for i, family in enumerate(families):
    points = sorted((t, statistics.mean(s)) for (f, t), s in times.items() if f == family)
    base = dict(points).get(1)
    if base is None:
        print(f"plot_scaling.sh: {family} has no threads:1 run, left out", file=sys.stderr)
        continue
    with open(f"{out}/{i}.dat", "w") as d:
        for t, s in points:
            d.write(f"{t} {s:.9g} {base / s:.6g} {base / s / t:.6g}\n")
    clauses.append(f"'{out}/{i}.dat' using 1:COLUMN with linespoints linewidth 2 title '{family}'")
    print(f"{family}: " + ", ".join(f"{t} threads {base / s:.2f}x" for t, s in points), file=sys.stderr)
with open(f"{out}/clauses", "w") as c:
    c.write(", ".join(clauses))
with open(f"{out}/xtics", "w") as x:  # a tic at each measured thread count
    x.write("(" + ", ".join(str(t) for t in sorted({t for _, t in times})) + ")")
PY

clauses="$(cat "$tmp/clauses")"
max_threads="$(cat "$tmp"/[0-9]*.dat | awk '$1 > m { m = $1 } END { print (m < 2 ? 2 : m) }')"
gnuplot <<GP
set terminal pngcairo size 1400,560 noenhanced font ",11"
set output '$png'
set multiplot layout 1,2 title 'dptrain: $(basename "$json")'
set key top left
set grid
set xlabel 'threads'
set xrange [1:$max_threads]
set xtics $(cat "$tmp/xtics")
set yrange [0:*]
set ylabel 'speedup: throughput(N) / throughput(1)'
set title 'speedup'
plot x with lines dashtype 2 linecolor 'black' title 'ideal', ${clauses//COLUMN/3}
set key bottom left
set ylabel 'parallel efficiency: speedup / N'
set title 'parallel efficiency'
set yrange [0:1.1]
plot 1 with lines dashtype 2 linecolor 'black' title 'ideal', ${clauses//COLUMN/4}
unset multiplot
GP
echo "wrote $png" >&2
