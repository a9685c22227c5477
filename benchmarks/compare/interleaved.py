# SPDX-License-Identifier: MIT
"""dptrain against PyTorch in alternating rounds, for a machine whose speed drifts.

On a shared VM the same epoch can take 20% longer a few minutes later, so two medians measured
one after the other can disagree by more than the difference being measured. Each round here
times dptrain's epoch (BM_TrainerEpoch, 3 repetitions) and then PyTorch's (run_pytorch.sh, 5
epochs) for one model and thread count; the ratio is taken within each round, and the median
over rounds is reported with its spread. With --bytes dptrain keeps the pixels as bytes
(ByteDataset) and PyTorch is timed both ways, float pixels and uint8 pixels scaled per batch: the
faster of the two counts. With --precision bf16 (MLP only) both sides run their bf16 products:
dptrain's Mlp with Precision::bf16 (BM_TrainerEpoch<MlpBf16>), PyTorch under torch.autocast.

  python3 benchmarks/compare/interleaved.py build/bench/benchmarks/dptrain_benchmarks \\
      --model softmax --threads 1 --rounds 5
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def dptrain_epoch(binary, model, threads, as_bytes):
    """Median seconds per epoch of BM_TrainerEpoch<Model>/threads:T (BM_TrainerEpochBytes: as_bytes) over 3 repetitions."""
    name = f"BM_TrainerEpoch{'Bytes' if as_bytes else ''}<{model}>/threads:{threads}"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([binary, f"--benchmark_filter=^{name}/",
                        "--benchmark_repetitions=3", "--benchmark_min_time=1",
                        f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores"))
        runs = [b for b in json.load(open(out.name))["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:
        sys.exit(f"interleaved.py: no {name} in {binary}")
    scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}
    return statistics.median(b["real_time"] * scale[b["time_unit"]] for b in runs)


def pytorch_epoch(model, threads, as_bytes, precision):
    """Median seconds per epoch of run_pytorch.sh, 5 epochs."""
    env = dict(os.environ, MODELS=model.lower(), THREADS=str(threads), EPOCHS="5", PRECISION=precision)
    if as_bytes:
        env["BYTES"] = "1"
    result = subprocess.run([os.path.join(HERE, "run_pytorch.sh")], check=True, capture_output=True, text=True, env=env)
    return json.loads(result.stdout.strip().splitlines()[-1])["median_epoch_seconds"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("binary", help="dptrain_benchmarks")
    p.add_argument("--model", choices=["softmax", "mlp"], default="softmax")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--bytes", action="store_true",
                   help="dptrain keeps the pixels as bytes (BM_TrainerEpochBytes); PyTorch runs with float pixels and "
                        "with uint8 pixels scaled per batch (pytorch_fmnist.py --bytes), and its faster epoch counts")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: the MLP's bf16 products on both sides (dptrain's MlpBf16, PyTorch's autocast)")
    args = p.parse_args()
    if args.precision == "bf16" and (args.model != "mlp" or args.bytes):
        p.error("--precision bf16 compares the MLP on float pixels")
    model = {"softmax": "Softmax", "mlp": "MlpBf16" if args.precision == "bf16" else "Mlp"}[args.model]
    ratios = []
    columns = "PyTorch ms/epoch (floats, bytes: the faster counts)" if args.bytes else "PyTorch ms/epoch"
    print(f"{model}{', dptrain on bytes' if args.bytes else ''}, {args.threads} thread(s): round, dptrain ms/epoch, "
          f"{columns}, PyTorch / dptrain")
    for r in range(1, args.rounds + 1):
        ours = dptrain_epoch(args.binary, model, args.threads, args.bytes)
        runs = [pytorch_epoch(args.model, args.threads, False, args.precision)]
        if args.bytes:
            runs.append(pytorch_epoch(args.model, args.threads, True, args.precision))
        theirs = min(runs)
        ratios.append(theirs / ours)
        print(f"{r} {ours * 1e3:.1f} {' '.join(f'{t * 1e3:.1f}' for t in runs)} {ratios[-1]:.2f}", flush=True)
    print(f"median ratio {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
