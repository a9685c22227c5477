# SPDX-License-Identifier: MIT
"""Two builds of the benchmarks in alternating rounds: is a change within noise?

Each round runs the old binary and then the new one (the order alternates between rounds) on the
same benchmarks, one repetition each; the ratio new/old is taken within each round, and the median
over rounds is reported with its range. A shared VM drifts by more than the differences a
refactoring may cause, so times measured minutes apart are not compared.

  python3 benchmarks/compare/ab.py OLD/dptrain_benchmarks NEW/dptrain_benchmarks \\
      --filter '^BM_Trainer(Step|Epoch)<(Softmax|Mlp)>/threads:[12]/' --rounds 7
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile


def run(binary, pattern, min_time):
    """{benchmark name: real time in seconds} for one run of `binary`."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([binary, f"--benchmark_filter={pattern}", f"--benchmark_min_time={min_time}",
                        f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores"))
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}
        return {b["name"]: b["real_time"] * scale[b["time_unit"]] for b in json.load(open(out.name))["benchmarks"]
                if b.get("run_type", "iteration") == "iteration"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--filter", default="^BM_Trainer(Step|Epoch)<(Softmax|Mlp)>/threads:[12]/")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-time", default="0.5")
    args = parser.parse_args()

    ratios, old_times, new_times = {}, {}, {}
    for r in range(args.rounds):
        first, second = (args.old, args.new) if r % 2 == 0 else (args.new, args.old)
        times = {first: run(first, args.filter, args.min_time), second: run(second, args.filter, args.min_time)}
        for name, new in times[args.new].items():
            old = times[args.old].get(name)
            if old:
                ratios.setdefault(name, []).append(new / old)
                old_times.setdefault(name, []).append(old)
                new_times.setdefault(name, []).append(new)
    print(f"{'benchmark':50} {'old (median)':>13} {'new (median)':>13} {'new/old median':>15} {'range':>13}")
    for name, values in ratios.items():
        print(f"{name:50} {statistics.median(old_times[name]) * 1e6:10.1f} us {statistics.median(new_times[name]) * 1e6:10.1f} us"
              f" {statistics.median(values):15.3f} {min(values):6.3f}-{max(values):.3f}")


if __name__ == "__main__":
    main()
