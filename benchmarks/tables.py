# SPDX-License-Identifier: MIT
"""Prints the tables of benchmarks/RESULTS.md, as Markdown, from dptrain_benchmarks' JSON output
(and optionally run_pytorch.sh's JSON lines), with every ratio computed, so nothing is copied by hand.

  python3 benchmarks/tables.py results/dptrain.json [results/pytorch.jsonl]

Each value is the median over repetitions when the file has aggregates, else the mean of the runs.
"""

import collections
import json
import re
import statistics
import sys

SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(path):
    """{run name: {"seconds": real time per iteration, counter: value, ...}}."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    aggregated = any(r.get("run_type") == "aggregate" for r in runs)
    values = collections.defaultdict(list)
    for r in runs:
        if r.get("error_occurred"):
            continue
        if aggregated and not (r.get("run_type") == "aggregate" and r.get("aggregate_name") == "median"):
            continue
        row = {"seconds": r["real_time"] * SCALE[r["time_unit"]]}
        row.update({k: v for k, v in r.items() if k in ("GFLOPS", "GBps", "samples_per_second")})
        values[r.get("run_name", r["name"])].append(row)
    return {name: {k: statistics.mean(row[k] for row in rows) for k in rows[0]} for name, rows in values.items()}


def blas_labels(path):
    """{backend: label} of the BLAS products: the library, its kernels and how its products fared
    when two threads called it at once (bench_products.cpp), one label per backend."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    labels = {}
    for r in runs:
        m = re.fullmatch(r"BM_Product<(Blis|OpenBlas)>/\w+", r.get("run_name", r["name"]))
        if m and r.get("label"):
            labels[m.group(1)] = r["label"]
    return labels


def find(results, pattern):
    """{threads or other numeric argument: result} of the runs whose name matches `pattern` (group 1: the key)."""
    out = {}
    for name, value in results.items():
        m = re.fullmatch(pattern, name)
        if m:
            out[int(m.group(1)) if m.groups() else 0] = value
    return out


def fmt(x):
    """Three significant digits without exponents: 0.0123, 1.23, 12.3, 123, 12345."""
    if x is None:
        return "—"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    r = load(sys.argv[1])
    pytorch = []
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            pytorch = [json.loads(line) for line in f if line.strip()]

    peaks = {isa: v["GFLOPS"] for isa, v in ((i, r.get(f"BM_FmaPeak<{i}>")) for i in ("Avx512", "Avx2", "Portable")) if v}
    peak = max(peaks.values()) if peaks else None
    read = {t: v["GBps"] for t, v in find(r, r"BM_StreamRead/threads:(\d+)/real_time").items()}
    triad = {t: v["GBps"] for t, v in find(r, r"BM_StreamTriad/threads:(\d+)/real_time").items()}
    barrier = {t: v["seconds"] for t, v in find(r, r"BM_TeamBarrier/threads:(\d+)/real_time").items()}
    threads = sorted(read or barrier)

    print("### Machine: peak, bandwidth, barrier\n")
    print("fp32 FMA peak of one core: " + ", ".join(f"{isa} {g:.1f} GFLOP/s" for isa, g in peaks.items()) + "\n")
    def barrier_us(t):
        if t not in barrier:
            return fmt(None)
        # A team of one skips its barriers: what is timed is the loop, not a barrier.
        return "0 (a team of one skips its barriers)" if t == 1 else fmt(barrier[t] * 1e6)

    table(["threads", "STREAM read GB/s", "STREAM triad GB/s", "barrier µs"],
          [[str(t), fmt(read.get(t)), fmt(triad.get(t)), barrier_us(t)] for t in threads])

    print("### Gradient kernels (one core)\n")
    rows = []
    for model in ("Softmax", "Mlp"):
        for rows_, v in sorted(find(r, rf"BM_Gradient<{model}>/rows:(\d+)").items()):
            eff = v["GFLOPS"] / peak if peak else None
            rows.append([model, str(rows_), fmt(v["seconds"] * 1e6), fmt(v["GFLOPS"]), fmt(eff and 100 * eff)])
    table(["model", "rows", "µs / batch", "GFLOP/s", "% of FMA peak"], rows)

    products = collections.defaultdict(dict)
    for name, v in r.items():
        m = re.fullmatch(r"BM_Product<(\w+)>/(\w+)", name)
        if m:
            products[m.group(2)][m.group(1)] = v
    if products:
        print("### The products of a 256-row gradient, per backend: µs (% of FMA peak)\n")
        backends = ["Eigen", "Narrow", "Blis", "OpenBlas"]
        def cell(v):
            return "—" if v is None else f"{fmt(v['seconds'] * 1e6)} ({fmt(peak and 100 * v['GFLOPS'] / peak)}%)"
        table(["product"] + backends, [[shape] + [cell(products[shape].get(b)) for b in backends] for shape in sorted(products)])
        for backend, label in blas_labels(sys.argv[1]).items():
            print(f"{backend}: {label}")
        print()

    own = {m: v for m in ("Softmax", "Mlp") if (v := r.get(f"BM_TrainerOwnTime<{m}>/manual_time"))}
    if own:
        print("The trainer's own time per step, one thread (everything but the model): " +
              ", ".join(f"{m} {fmt(v['seconds'] * 1e6)} µs" for m, v in own.items()) + "\n")

    print("### All-reduce: µs per call (GB/s; % of STREAM read at the same threads)\n")
    aggregators = ["SerialAggregator", "TreeAggregator", "ReduceScatterAggregator", "RingAllReduceAggregator"]
    families = [("BM_AllReduce", agg, "") for agg in aggregators] + [
        ("BM_AllReduceFresh", agg, ", buffers rewritten before each call (as after a gradient)")
        for agg in aggregators]
    for family, agg, note in families:
        by = collections.defaultdict(dict)
        for name, v in r.items():
            m = re.fullmatch(rf"{family}<{agg}>/n:(\d+)/threads:(\d+)/real_time", name)
            if m:
                by[int(m.group(1))][int(m.group(2))] = v
        if not by:
            continue
        cols = sorted({t for d in by.values() for t in d})
        rows = []
        for n in sorted(by):
            cells = []
            for t in cols:
                v = by[n].get(t)
                if v is None:
                    cells.append("—")
                    continue
                # At one thread there is nothing to reduce: no bandwidth to compare.
                frac = f"; {fmt(100 * v['GBps'] / read[t])}%" if t in read and t > 1 else ""
                cells.append(f"{fmt(v['seconds'] * 1e6)} ({fmt(v['GBps'])}{frac})")
            rows.append([f"{n:,}"] + cells)
        print(f"**{agg}**{note}\n")
        table(["n \\ threads"] + [str(t) for t in cols], rows)

    print("### Training (batch 256, momentum 0.9)\n")
    for model in ("Softmax", "Mlp"):
        step = find(r, rf"BM_TrainerStep<{model}>/threads:(\d+)/manual_time")
        epoch = find(r, rf"BM_TrainerEpoch<{model}>/threads:(\d+)/manual_time")
        balanced = find(r, rf"BM_TrainerEpoch<{model},dptrain::BalancingPartitioner>/threads:(\d+)/manual_time")
        ceiling = find(r, rf"BM_IndependentEpochs<{model}>/threads:(\d+)/manual_time")
        exchange = find(r, rf"BM_TrainerStepExchange<{model}>/threads:(\d+)/manual_time")
        ref_omp = find(r, rf"BM_ReferenceOmpEpoch<{model}>/threads:(\d+)/real_time")
        ref_eigen = r.get(f"BM_ReferenceEigenEpoch<{model}>/real_time")
        torch = {p["threads"]: p for p in pytorch if p["model"] == model.lower()}
        if not epoch:
            continue
        base = epoch.get(1, {}).get("seconds")
        ceiling_base = ceiling.get(1, {}).get("samples_per_second")
        step_base = step.get(1, {}).get("seconds")
        exchange_base = exchange.get(1, {}).get("seconds")
        rows = []
        for t in sorted(set(epoch) | set(ref_omp) | set(torch)):
            e = epoch.get(t, {}).get("seconds")
            o = ref_omp.get(t, {}).get("seconds")
            s = step.get(t, {}).get("seconds")
            p = torch.get(t, {}).get("median_epoch_seconds")
            bal = balanced.get(t, {}).get("seconds")
            c = ceiling.get(t, {}).get("samples_per_second")
            x = exchange.get(t, {}).get("seconds")
            # The step's compute split perfectly over t workers, plus the exchange measured at t.
            bound = step_base and exchange_base and x and step_base / ((step_base - exchange_base) / t + x)
            rows.append([
                str(t),
                fmt(s and s * 1e6),
                fmt(e and e * 1e3),
                fmt(epoch.get(t, {}).get("samples_per_second")),
                fmt(base and e and base / e),
                fmt(base and e and 100 * base / e / t),
                fmt(base and bal and base / bal),
                fmt(ceiling_base and c and c / ceiling_base),
                fmt(x and x * 1e6),
                fmt(bound),
                fmt(o and o * 1e3),
                fmt(e and o and e / o),
                fmt(p and p * 1e3),
                fmt(e and p and p / e),
            ])
        print(f"**{model}**" + (f" — one-thread Eigen reference: {ref_eigen['seconds'] * 1e3:.1f} ms/epoch, "
                                f"trainer(1) / reference = {epoch[1]['seconds'] / ref_eigen['seconds']:.3f}"
                                if ref_eigen and 1 in epoch else "") + "\n")
        table(["threads", "step µs", "epoch ms", "samples/s", "speedup", "efficiency %", "speedup, balancing split",
               "ceiling: N independent", "exchange µs", "bound: compute / N + exchange", "OpenMP ref ms",
               "trainer / OpenMP ref", "PyTorch ms", "PyTorch / trainer"], rows)


if __name__ == "__main__":
    main()
