"""Golden draws of torch's CPU `Tensor.normal_` for shoal's torch-replica stream
(RngStream::torch_normal_fill, tests/core/rng_torch_normal_test.cpp).

Run with the peers venv (CI only reads the committed output):
    /opt/peers/bin/python bench/peers/torch_normal_golden.py [out=tests/golden/torch_normal.json]

After torch.manual_seed(seed), a sequence of calls on fresh contiguous float32 tensors:
normal_(mean, std) of sizes 1..100 (below 16 torch's scalar double path, which caches the
second Box-Muller value in the generator; from 16 on its 16-block float path), each followed by
uniform_() of 3 floats, whose exact values pin down how many words the normal_ consumed. The
orders put small calls after small and large ones, so a cached value is used across calls.
`nn.Embedding`'s init is torch.nn.init.normal_(weight), i.e. normal_(0, 1). Each sequence
ends with one large normal_ (an embedding table's worth) kept as the FNV-1a 64 hash of its
float32 bytes plus every DIGEST_EVERY-th value, which pins down every last bit of the float
path's arithmetic without a large file.

Output: {"torch": version, "cpu_capability": ..., "sequences": [{"seed", "mean", "std",
"calls": [{"op": "normal" | "uniform", "n", "values": [float32 values as doubles]},
..., {"op": "normal_digest", "n", "fnv1a64": hex, "every", "values": [t[0], t[every], ...]}]}]}.
"""

import json
import sys

import torch

SIZES = [1, 3, 7, 15, 16, 17, 31, 48, 100]
SEQUENCES = [
    (0, 0.0, 1.0, SIZES),
    (1, 0.0, 1.0, list(reversed(SIZES))),
    (42, 0.0, 1.0, [1, 1, 3, 17, 1, 7, 48, 3, 15, 100, 1, 31, 16, 7]),
    (1234, 0.5, 2.0, [3, 16, 1, 17, 7, 15, 31, 1]),
]
UNIFORM_N = 3
DIGEST_N = 40000
DIGEST_EVERY = 997


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/torch_normal.json"
    torch.set_num_threads(1)
    sequences = []
    for seed, mean, std, sizes in SEQUENCES:
        torch.manual_seed(seed)
        calls = []
        for n in sizes:
            t = torch.empty(n, dtype=torch.float32)
            if mean == 0.0 and std == 1.0:
                torch.nn.init.normal_(t)
            else:
                t.normal_(mean, std)
            calls.append({"op": "normal", "n": n, "values": t.tolist()})
            u = torch.empty(UNIFORM_N, dtype=torch.float32).uniform_()
            calls.append({"op": "uniform", "n": UNIFORM_N, "values": u.tolist()})
        t = torch.empty(DIGEST_N, dtype=torch.float32).normal_(mean, std)
        calls.append({"op": "normal_digest", "n": DIGEST_N,
                      "fnv1a64": fnv1a64(t.numpy().tobytes()), "every": DIGEST_EVERY,
                      "values": t[::DIGEST_EVERY].tolist()})
        sequences.append({"seed": seed, "mean": mean, "std": std, "calls": calls})
    golden = {
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "sequences": sequences,
    }
    with open(out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: {sum(len(s['calls']) for s in sequences)} calls")


if __name__ == "__main__":
    main()
