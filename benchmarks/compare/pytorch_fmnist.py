# SPDX-License-Identifier: MIT
"""PyTorch on the CPU, trained exactly as dptrain's benchmarks train: the reference for issue 4.

Softmax regression (784 -> 10) or the MLP 784-256-10 (ReLU), float32, batch 256, SGD with
momentum 0.9, shuffled every epoch, the last partial batch kept (60 000 = 234 x 256 + 96), on
Fashion-MNIST read from the IDX files (gzipped or not) or on generated data of the same shape.
Prints the seconds of each epoch, their median, samples/s and the test accuracy.

Run it through compare/run_pytorch.sh, which gives PyTorch its best configuration on the machine
(OpenMP OpenBLAS, OPENBLAS_CORETYPE, pinned threads); see benchmarks/RESULTS.md.

  python3 benchmarks/compare/pytorch_fmnist.py --model mlp --threads 4 --epochs 5

With --ddp N: DistributedDataParallel over N processes (gloo, on this machine), each with
--threads threads; every global minibatch of --batch rows is split into N parts of the same
seeded order, as dptrain's ranks split it (the reference for issue 14: dptrain under mpirun).

  python3 benchmarks/compare/pytorch_fmnist.py --model mlp --ddp 2 --threads 1 --epochs 5

With --precision bf16: the forward and backward passes under torch.autocast("cpu",
dtype=torch.bfloat16), PyTorch's mixed precision (bf16 matrix products, float32 weights, gradients
and optimizer state): the reference for dptrain's Mlp with Precision::bf16 (issue 35).

  python3 benchmarks/compare/pytorch_fmnist.py --model mlp --threads 1 --precision bf16
"""

import contextlib

import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """An IDX file (MNIST format), plain or gzipped, as a numpy array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, dims = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(directory, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    return None


def load_fashion_mnist(directory, as_bytes=False):
    """(x_train, y_train, x_test, y_test, description); pixels scaled to [0, 1] as dptrain's read_idx does,
    or with as_bytes the training pixels kept as uint8 (as dptrain's read_idx_bytes), scaled per batch."""
    stems = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
    paths = [find(directory, s) for s in stems]
    if all(paths):
        xtr, ytr, xte, yte = (read_idx(p) for p in paths)
        to_x = lambda a: torch.from_numpy(a.reshape(a.shape[0], -1).astype(np.float32) / 255.0)
        to_y = lambda a: torch.from_numpy(a.astype(np.int64))
        train_x = torch.from_numpy(xtr.reshape(xtr.shape[0], -1).copy()) if as_bytes else to_x(xtr)
        return train_x, to_y(ytr), to_x(xte), to_y(yte), f"Fashion-MNIST from {directory}"
    xtr, ytr = generated(60000, 1)
    xte, yte = generated(10000, 2)
    if as_bytes:
        xtr = (xtr * 255.0).round().to(torch.uint8)
    return xtr, ytr, xte, yte, "generated, Fashion-MNIST's shape (IDX files not found)"


def generated(n, seed):
    """Like examples/common/fashion_mnist_data.hpp: a random prototype per class plus noise, in [0, 1]."""
    prototypes = np.where(np.random.default_rng(1234).random((10, 784)) < 0.5, 0.2, 0.6).astype(np.float32)
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = np.clip(prototypes[y] + rng.normal(0.0, 0.35, (n, 784)).astype(np.float32), 0.0, 1.0)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def loaded_blas():
    """The BLAS libraries this process actually loaded (which LD_LIBRARY_PATH or alternatives chose)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if len(line.split()) >= 6}
    except OSError:
        return []
    return sorted(p for p in paths if "blas" in os.path.basename(p))


def make_model(name):
    if name == "softmax":
        model = torch.nn.Linear(784, 10)
        torch.nn.init.zeros_(model.weight)  # dptrain's SoftmaxRegression starts from zeros
        torch.nn.init.zeros_(model.bias)
        return model
    return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def train(args, x, y):
    """Trains and returns (the model, seconds of each epoch)."""
    torch.manual_seed(args.seed)
    model = make_model(args.model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()  # mean over the batch, as dptrain's by-samples weighting
    generator = torch.Generator().manual_seed(args.seed)
    n = x.shape[0]
    times = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        order = torch.randperm(n, generator=generator)
        for first in range(0, n, args.batch):
            rows = order[first : first + args.batch]
            xb, yb = x[rows], y[rows]  # gathered, as dptrain's workers gather shuffled rows
            if xb.dtype == torch.uint8:
                xb = xb.to(torch.float32).mul_(1.0 / 255.0)  # --bytes: as dptrain's ByteDataset reads them
            optimizer.zero_grad(set_to_none=True)
            with autocast(args):
                loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
        times.append(time.perf_counter() - start)
    return model, times


def autocast(args):
    """bf16 autocast for --precision bf16, nothing otherwise."""
    if args.precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def train_ddp(rank, args, x, y, port):
    """One of --ddp processes: DistributedDataParallel, this rank's part of every global minibatch."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ddp)
    torch.manual_seed(args.seed)  # the same initial model on every rank (DDP also broadcasts rank 0's)
    model = torch.nn.parallel.DistributedDataParallel(make_model(args.model))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(args.seed)  # the same order on every rank
    n, part = x.shape[0], args.batch // args.ddp
    times = []
    for _ in range(args.epochs):
        dist.barrier()
        start = time.perf_counter()
        order = torch.randperm(n, generator=generator)
        for first in range(0, n, args.batch):
            batch = order[first : first + args.batch]
            rows = batch[rank * part : (rank + 1) * part if rank + 1 < args.ddp else len(batch)]
            optimizer.zero_grad(set_to_none=True)
            # DDP averages the ranks' mean gradients: equal parts, so the minibatch's mean.
            loss_fn(model(x[rows]), y[rows]).backward()
            optimizer.step()
        dist.barrier()
        times.append(time.perf_counter() - start)
    dist.destroy_process_group()
    return model.module, times


def ddp_process(rank, args, port, results):
    x, y, x_test, y_test, source = load_fashion_mnist(args.data)
    x, y = x[: args.samples].contiguous(), y[: args.samples].contiguous()
    model, times = train_ddp(rank, args, x, y, port)
    if rank == 0:
        with torch.no_grad():
            accuracy = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
        results.put((times, accuracy, source, x.shape[0]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["softmax", "mlp"], default="mlp")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (default: all CPUs)")
    p.add_argument("--epochs", type=int, default=5, help="epochs; the median of their times is reported")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.01, help="as dptrain's benchmarks (timing does not depend on it)")
    p.add_argument("--samples", type=int, default=60000, help="training samples used (at most 60000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=DEFAULT_DATA, help="directory of the four IDX files")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    p.add_argument("--bytes", action="store_true",
                   help="keep the training pixels as uint8 and scale each batch (as dptrain's ByteDataset)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: forward and backward under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument("--ddp", type=int, default=0, help="DistributedDataParallel over this many processes (gloo)")
    p.add_argument("--port", type=int, default=29517, help="--ddp: the rendezvous port on 127.0.0.1")
    args = p.parse_args()

    if args.ddp > 0 and args.precision == "bf16":
        p.error("--precision bf16 is measured in one process (without --ddp)")
    if args.ddp > 0:
        context = torch.multiprocessing.get_context("spawn")
        results = context.SimpleQueue()
        torch.multiprocessing.start_processes(
            ddp_process, args=(args, args.port, results), nprocs=args.ddp, start_method="spawn"
        )
        times, accuracy, source, samples = results.get()
    else:
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)  # one training loop: no inter-op parallelism to exploit
        x, y, x_test, y_test, source = load_fashion_mnist(args.data, args.bytes)
        x, y = x[: args.samples].contiguous(), y[: args.samples].contiguous()
        model, times = train(args, x, y)
        with torch.no_grad(), autocast(args):
            accuracy = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
        samples = x.shape[0]
    median = statistics.median(times)
    result = {
        "model": args.model,
        "precision": args.precision,
        "processes": max(args.ddp, 1),
        "threads": args.threads,
        "batch": args.batch,
        "samples": samples,
        "epochs": args.epochs,
        "epoch_seconds": times,
        "median_epoch_seconds": median,
        "samples_per_second": samples / median,
        "test_accuracy": accuracy,
        "data": source + (", pixels as bytes" if args.bytes else ""),
        "torch": torch.__version__,
        "blas": loaded_blas(),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
    }
    if args.json:
        print(json.dumps(result))
        return
    ddp = f"DDP (gloo) over {args.ddp} processes x " if args.ddp else ""
    print(f"{source}; PyTorch {torch.__version__}, {args.model} ({args.precision}), {ddp}{args.threads} threads, "
          f"batch {args.batch}")
    print("epoch seconds: " + " ".join(f"{t:.3f}" for t in times))
    print(f"BLAS: {' '.join(loaded_blas())}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}")
    print(f"median {median:.3f} s/epoch, {samples / median:.0f} samples/s, test accuracy {100 * accuracy:.2f}%")


if __name__ == "__main__":
    sys.exit(main())
