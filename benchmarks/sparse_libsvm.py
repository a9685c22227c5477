#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a sparse multiclass LIBSVM file like a bag of words: feature j is drawn with weight
1/(j + 10) (a few frequent features, a long tail of rare ones), each row stores `nnz` distinct
features with values in [0.2, 1], and its class is the argmax of a random linear rule plus noise.

    benchmarks/sparse_libsvm.py OUT [--rows 40000] [--features 100000] [--nnz 20] [--classes 4] [--seed 7]
"""
import argparse
import bisect
import itertools
import random


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--rows", type=int, default=40000)
    p.add_argument("--features", type=int, default=100000)
    p.add_argument("--nnz", type=int, default=20)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    rng = random.Random(a.seed)
    rule = [[rng.gauss(0, 1) for _ in range(a.classes)] for _ in range(a.features)]
    cumulative = list(itertools.accumulate(1.0 / (j + 10) for j in range(a.features)))
    with open(a.out, "w") as f:
        for _ in range(a.rows):
            features = set()
            while len(features) < a.nnz:
                features.add(bisect.bisect_left(cumulative, rng.random() * cumulative[-1]))
            values = {j: round(rng.uniform(0.2, 1.0), 3) for j in sorted(features)}
            scores = [sum(rule[j][c] * v for j, v in values.items()) + rng.gauss(0, 0.5) for c in range(a.classes)]
            label = max(range(a.classes), key=lambda c: scores[c])
            f.write(f"{label} " + " ".join(f"{j + 1}:{v}" for j, v in values.items()) + "\n")


if __name__ == "__main__":
    main()
