#!/usr/bin/env python3
"""Batched PyTorch peer of `shoal bench ncf-recommend`: the same NeuMF with the same weights
scores every user against every item, under torch.inference_mode, all items of a user in one
forward (the usual way to serve a PyTorch NCF), and keeps each user's top-k by logit
(torch.topk). Not needed by CI.

  /opt/peers/bin/python bench/peers/ncf_recommend_torch.py --bench-dir DIR --threads T \
      [--k 10] [--repeats 3]

DIR (written by the bench): meta.json {kind, users, items, context, factors, layers},
weights.safetensors (shoal's names: embed_*, mlp.{0,1,..}.weight/bias as [out, in], predict.*)
and user_context.f32 ([users, context] float32, each user's context row, fed with every pair of
that user). Prints one JSON line: threads, pairs, the best of `repeats` timed passes (after one
warm-up), pairs/s, and the top-k item rows of the first 5 users (the bench checks they are
shoal's).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncf_torch import NCF  # noqa: E402


def load(d):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    model = NCF(meta["kind"], meta["users"], meta["items"], meta["factors"], meta["layers"],
                meta["context"])
    w = load_file(os.path.join(d, "weights.safetensors"))
    state = {}
    for name, v in w.items():
        if name.startswith("mlp."):  # shoal numbers the tower's Linears 0, 1, 2; torch's
            _, k, p = name.split(".")  # Sequential interleaves ReLUs: 0, 2, 4
            name = f"mlp.{2 * int(k)}.{p}"
        state[name] = torch.from_numpy(np.ascontiguousarray(v))
    model.load_state_dict(state, strict=True)
    model.eval()
    c = meta["context"]
    ctx = None
    if c > 0:
        ctx = torch.from_numpy(np.fromfile(os.path.join(d, "user_context.f32"),
                                           dtype=np.float32).reshape(meta["users"], c))
    return meta, model, ctx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    meta, model, ctx = load(a.bench_dir)
    users, items = meta["users"], meta["items"]
    all_items = torch.arange(items)

    def recommend():
        tops = []
        with torch.inference_mode():
            for u in range(users):
                uu = torch.full((items,), u, dtype=torch.long)
                c = ctx[u].expand(items, -1) if ctx is not None else None
                tops.append(torch.topk(model(uu, all_items, c), a.k).indices)
        return tops

    tops = recommend()
    best = float("inf")
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        recommend()
        best = min(best, time.perf_counter() - t0)
    pairs = users * items
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "threads": a.threads,
                      "users": users, "items": items, "pairs": pairs, "seconds": best,
                      "pairs_per_s": pairs / best,
                      "top": [t.tolist() for t in tops[:5]]}), flush=True)


if __name__ == "__main__":
    main()
