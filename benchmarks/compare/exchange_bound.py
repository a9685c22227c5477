# SPDX-License-Identifier: MIT
"""A model's 2-thread speedup and the exchange bound of issue 15, measured in the same rounds.

Each round runs, in one call of the benchmarks binary (random order): BM_CacheLineRoundTrip, and
BM_TrainerStep<M> and BM_TrainerStepExchange<M> at 1 and 2 threads. The round's bound is the
speedup if the model's compute split perfectly over the 2 workers and the step's exchange cost
what it costs alone (benchmarks/RESULTS.md, "What each ratio means"):

  bound = step(1) / ((step(1) - X(1)) / 2 + X(2)),   X = BM_TrainerStepExchange

The speedup and its bound come from the same minute of the machine. On a VM they must: the host
may move the two vCPUs closer or further apart between minutes, and the exchange's cost with
them (the round trip of a cache line says where they are). The summary groups the rounds by it:
"near" for a round trip within 2x of the fastest seen, "far" for the rest.

  python3 benchmarks/compare/exchange_bound.py build/release/benchmarks/dptrain_benchmarks --rounds 15
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile


def run(binary, pattern, min_time):
    """{benchmark name: real time in seconds} for one run of `binary`, threads pinned to cores."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([binary, f"--benchmark_filter={pattern}", f"--benchmark_min_time={min_time}",
                        "--benchmark_enable_random_interleaving=true",
                        f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores"))
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}
        return {b["name"].split("/manual_time")[0].split("/real_time")[0]: b["real_time"] * scale[b["time_unit"]]
                for b in json.load(open(out.name))["benchmarks"] if b.get("run_type", "iteration") == "iteration"}


def summary(rows, label):
    if not rows:
        return
    print(f"{label}: {len(rows)} rounds")
    for key in rows[0]:
        values = sorted(r[key] for r in rows)
        print(f"  {key:>14}: median {statistics.median(values):9.3f}  ({values[0]:.3f} to {values[-1]:.3f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--model", choices=["Mlp", "MlpBf16", "Softmax"], default="Mlp",
                        help="MlpBf16: the MLP with bf16 products (Precision::bf16)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--min-time", default="0.5")
    args = parser.parse_args()
    m = args.model
    pattern = rf"^BM_CacheLineRoundTrip|^BM_TrainerStep(Exchange)?<{m}>/threads:[12]/"
    rows = []
    print(f"round  round_trip_ns  step1_us  step2_us  X1_us  X2_us  speedup  bound  speedup/bound")
    for r in range(args.rounds):
        t = run(args.binary, pattern, args.min_time)
        s1, s2 = t[f"BM_TrainerStep<{m}>/threads:1"], t[f"BM_TrainerStep<{m}>/threads:2"]
        x1, x2 = t[f"BM_TrainerStepExchange<{m}>/threads:1"], t[f"BM_TrainerStepExchange<{m}>/threads:2"]
        bound = s1 / ((s1 - x1) / 2 + x2)
        row = {"round_trip_ns": t["BM_CacheLineRoundTrip"] * 1e9, "step1_us": s1 * 1e6, "step2_us": s2 * 1e6,
               "X1_us": x1 * 1e6, "X2_us": x2 * 1e6, "speedup": s1 / s2, "bound": bound,
               "speedup/bound": s1 / s2 / bound}
        rows.append(row)
        print(f"{r + 1:5d}  {row['round_trip_ns']:13.0f}  {row['step1_us']:8.0f}  {row['step2_us']:8.0f}  "
              f"{row['X1_us']:5.0f}  {row['X2_us']:5.0f}  {row['speedup']:7.3f}  {bound:5.3f}  "
              f"{row['speedup/bound']:13.3f}", flush=True)
    fastest = min(r["round_trip_ns"] for r in rows)
    summary(rows, "all")
    near = [r for r in rows if r["round_trip_ns"] <= 2 * fastest]
    if len(near) < len(rows):
        summary(near, f"near (round trip <= {2 * fastest:.0f} ns)")
        summary([r for r in rows if r["round_trip_ns"] > 2 * fastest], "far")


if __name__ == "__main__":
    main()
