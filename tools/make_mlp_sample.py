#!/usr/bin/env python3
"""Writes examples/mlp/sample.csv: the Friedman #1 regression problem (Friedman, 1991).

y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + N(0, 1), with x1..x10 ~ U(0, 1); x6..x10
do not enter y. A standard nonlinear benchmark small enough to ship: 2,000 rows.
Pure Python so it needs nothing installed; the seed makes the file reproducible.
"""
import math
import random
import sys

def main(path: str, rows: int = 2000, seed: int = 2026) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="ascii") as f:
        f.write(",".join(f"x{i}" for i in range(1, 11)) + ",y\n")
        for _ in range(rows):
            x = [rng.random() for _ in range(10)]
            y = (10 * math.sin(math.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3]
                 + 5 * x[4] + rng.gauss(0.0, 1.0))
            f.write(",".join(f"{v:.4f}" for v in x) + f",{y:.4f}\n")

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/mlp/sample.csv")
