#!/usr/bin/env python3
"""PyTorch peer for `shoal bench ncf-recommend`: top-K recommendation, every user scored against
every item, as a PyTorch user batches it (torch.inference_mode, one forward per user over all
of its items, torch.topk by logit). The model is bench/peers/ncf_torch.py's NCF with shoal's
weights loaded. Not needed by CI.

  /opt/peers/bin/python bench/peers/ncf_recommend_torch.py --bench-dir DIR --threads T \
      [--k 10] [--repeats 3]

DIR (written by the benchmark) holds meta.json {"kind", "users", "items", "context",
"factors", "layers"}, weights.safetensors (shoal's tensor names: embed_{user,item}_{gmf,mlp}
.weight, mlp.{0,1,..}.weight/.bias with Linear weights [out, in] as torch's, predict.weight
/.bias) and user_context.f32 ([users, context] float32, row-major: the context row fed with
each of that user's pairs; absent or empty without context). One pass is warmed up, `repeats`
are timed and the best is reported. Prints one JSON line: threads, users, items, pairs,
seconds, pairs_per_s and "top", the top-K item rows of the first 5 users (best first; torch.topk
does not order equal logits by item row as shoal does, which random weights make unlikely to
matter). Progress goes to stderr.
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


def shoal_to_torch_names(state, tower_layers):
    """shoal numbers the tower's Linear layers 0, 1, 2, ...; torch's Sequential, with a ReLU
    after each, numbers them 0, 2, 4, ...; every other name is the same."""
    out = {}
    for name, value in state.items():
        parts = name.split(".")
        if parts[0] == "mlp":
            k = int(parts[1])
            if not 0 <= k < tower_layers:
                raise ValueError(f"{name}: the tower has {tower_layers} layers")
            name = f"mlp.{2 * k}.{parts[2]}"
        out[name] = torch.from_numpy(np.ascontiguousarray(value, dtype=np.float32))
    return out


def load_bench(d):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    kind, users, items = meta["kind"], int(meta["users"]), int(meta["items"])
    c, layers = int(meta.get("context", 0)), [int(x) for x in meta["layers"]]
    model = NCF(kind, users, items, int(meta["factors"]), layers, c)
    state = shoal_to_torch_names(load_file(os.path.join(d, "weights.safetensors")),
                                 len(layers) - 1)
    want = model.state_dict()
    missing = sorted(set(want) - set(state))
    extra = sorted(set(state) - set(want))
    if missing or extra:
        raise ValueError(f"weights: missing {missing}, unexpected {extra}")
    for name, value in state.items():
        if tuple(value.shape) != tuple(want[name].shape):
            raise ValueError(f"{name}: shape {tuple(value.shape)}, the model's is "
                             f"{tuple(want[name].shape)}")
    model.load_state_dict(state)
    model.eval()
    ctx = None
    if c > 0:
        raw = np.fromfile(os.path.join(d, "user_context.f32"), dtype=np.float32)
        if raw.size != users * c:
            raise ValueError(f"user_context.f32: {raw.size} values for [{users}, {c}]")
        ctx = torch.from_numpy(raw.reshape(users, c))
    return meta, model, ctx


def recommend_all(model, ctx, users, items, k):
    """Every user's top-k item rows [users, k], one forward per user over all items."""
    all_items = torch.arange(items, dtype=torch.long)
    top = torch.empty((users, k), dtype=torch.long)
    for u in range(users):
        uu = torch.full((items,), u, dtype=torch.long)
        c = ctx[u].expand(items, -1) if ctx is not None else None
        logits = model(uu, all_items, c)
        top[u] = torch.topk(logits, k).indices
    return top


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if a.k < 1 or a.repeats < 1 or a.threads < 1:
        ap.error("--k, --repeats and --threads must be >= 1")
    torch.set_num_threads(a.threads)
    meta, model, ctx = load_bench(a.bench_dir)
    users, items = int(meta["users"]), int(meta["items"])
    k = min(a.k, items)
    with torch.inference_mode():
        t0 = time.perf_counter()
        top = recommend_all(model, ctx, users, items, k)  # warm-up
        print(f"warm-up {time.perf_counter() - t0:.4f} s", file=sys.stderr, flush=True)
        best = float("inf")
        for r in range(a.repeats):
            t0 = time.perf_counter()
            top = recommend_all(model, ctx, users, items, k)
            dt = time.perf_counter() - t0
            best = min(best, dt)
            print(f"pass {r + 1}: {dt:.4f} s", file=sys.stderr, flush=True)
    pairs = users * items
    print(json.dumps({"threads": a.threads, "users": users, "items": items, "pairs": pairs,
                      "seconds": best, "pairs_per_s": pairs / best,
                      "top": top[:5].tolist()}), flush=True)


if __name__ == "__main__":
    main()
