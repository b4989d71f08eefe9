#!/usr/bin/env python3
"""PyTorch peer for `shoal ncf train`: GMF / MLP / NeuMF (+ optional CSV context) as in the NCF
paper, trained the way PyTorch users of NCF do (dense torch.optim.Adam on every parameter,
embeddings included; BCEWithLogitsLoss; negatives re-drawn every epoch with rejection against
the user's training positives; instances shuffled; --batch-size counts instances) and evaluated
with the authors' protocol (HR@K / NDCG@K, 1 positive + the file's negatives, after every
epoch). Writes the same metrics JSON keys as shoal. Not needed by CI.

  /opt/peers/bin/python bench/peers/ncf_torch.py --train F --test F --test-negatives F \
      [--model neumf] [--factors 8] [--layers 64,32,16,8] [--epochs 20] [--neg 4] \
      [--batch-size 256] [--lr 1e-3] [--threads 1] [--seed 1] [--top-k 10] \
      [--full-ranking] [--metrics-out F.json]

--full-ranking (as `shoal ncf train --full-ranking`) also ranks, after every epoch, every item
for each test row's user with that user's training items excluded (higher logit first, ties to
the smaller item row, as shoal's top_k), takes the top K and scores it against the row's
held-out item with the definitions of include/shoal/train/ranking.h: HR@K, NDCG@K, Precision@K,
Recall@K and MAP@K averaged over the test rows. The last epoch's figures go to --metrics-out as
"full_hr@K", "full_ndcg@K", "full_precision@K", "full_recall@K", "full_map@K" (shoal's keys).

Speed mode, used by `shoal bench ncf --peer-python ...` (which writes the data):
  ncf_torch.py --bench-dir DIR --batch-size 1280 --threads T --max-steps S
reads DIR/meta.json, users.i32 and items.i32 (every positive) and context.f32 (the first
`timed_positives` rows), builds NeuMF-8 [64,32,16,8] with the context columns on the MLP
tower's input, draws the timed positives' negatives (vectorised rejection against all
positives), shuffles, trains S steps, and prints one JSON line: the per-instance sampling
and step times and the epoch time they extrapolate to (only part of an epoch is timed).
"""
import argparse
import json
import math
import time

import numpy as np
import torch
import torch.nn as nn


class NCF(nn.Module):
    def __init__(self, kind, users, items, factors, layers, context):
        super().__init__()
        self.kind = kind
        if kind != "mlp":
            self.embed_user_gmf = nn.Embedding(users, factors)
            self.embed_item_gmf = nn.Embedding(items, factors)
        predict_in = factors if kind != "mlp" else 0
        if kind != "gmf":
            e = layers[0] // 2
            self.embed_user_mlp = nn.Embedding(users, e)
            self.embed_item_mlp = nn.Embedding(items, e)
            mods, width = [], layers[0] + context
            for w in layers[1:]:
                mods += [nn.Linear(width, w), nn.ReLU()]
                width = w
            self.mlp = nn.Sequential(*mods)
            predict_in += layers[-1]
        self.predict = nn.Linear(predict_in, 1)
        for m in self.modules():
            if isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=0.01)

    def forward(self, u, i, c):
        parts = []
        if self.kind != "mlp":
            parts.append(self.embed_user_gmf(u) * self.embed_item_gmf(i))
        if self.kind != "gmf":
            x = [self.embed_user_mlp(u), self.embed_item_mlp(i)]
            if c is not None:
                x.append(c)
            parts.append(self.mlp(torch.cat(x, dim=1)))
        return self.predict(torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]).squeeze(1)


def read_ratings(path):
    a = np.loadtxt(path, dtype=np.int64, usecols=(0, 1), ndmin=2)
    return a[:, 0], a[:, 1]


def read_negatives(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append([int(x) for x in line.split()[1:]])
    return np.array(rows, dtype=np.int64)


def sample_epoch(users, items, pos_sets, num_items, k, rng):
    p = len(users)
    neg_items = rng.integers(0, num_items, size=(p, k))
    for r in range(p):  # rejection against the user's training positives
        s = pos_sets[users[r]]
        for j in range(k):
            while neg_items[r, j] in s:
                neg_items[r, j] = rng.integers(0, num_items)
    u = np.concatenate([users[:, None], np.repeat(users[:, None], k, 1)], 1).ravel()
    i = np.concatenate([items[:, None], neg_items], 1).ravel()
    y = np.concatenate([np.ones((p, 1)), np.zeros((p, k))], 1).ravel().astype(np.float32)
    perm = rng.permutation(len(u))
    return u[perm], i[perm], y[perm]


@torch.no_grad()
def evaluate(model, tu, ti, negs, topk):
    hr = ndcg = 0.0
    for row in range(len(tu)):
        cands = [int(x) for x in negs[row]]
        if int(ti[row]) in cands:
            pos = cands.index(int(ti[row]))
        else:
            pos = len(cands)
            cands.append(int(ti[row]))
        u = torch.full((len(cands),), int(tu[row]), dtype=torch.long)
        s = model(u, torch.tensor(cands), None).numpy()
        rank = int(np.sum(s > s[pos]) + np.sum(s[:pos] == s[pos]))
        if rank < topk:
            hr += 1
            ndcg += math.log(2) / math.log(rank + 2)
    return hr / len(tu), ndcg / len(tu)


def ranking_metrics(recs, truths, k):
    """include/shoal/train/ranking.h's metrics: recs[r] the ranked item rows of row r (best
    first), truths[r] its relevant items; averaged over the rows with a relevant item."""
    hr = ndcg = precision = recall = mean_ap = 0.0
    users = 0
    for rec, truth in zip(recs, truths):
        truth = set(int(t) for t in truth)
        if not truth:
            continue
        users += 1
        hits = dcg = ap = 0.0
        seen = set()
        for j, item in enumerate(rec[:k]):  # a list longer than K is cut at K
            item = int(item)
            if item in seen:  # a repeated item counts once
                continue
            seen.add(item)
            if item not in truth:
                continue
            hits += 1
            dcg += 1.0 / math.log2(j + 2)
            ap += hits / (j + 1)
        ideal = min(len(truth), k)
        idcg = sum(1.0 / math.log2(j + 2) for j in range(ideal))
        hr += 1.0 if hits > 0 else 0.0
        precision += hits / k
        recall += hits / len(truth)
        ndcg += dcg / idcg
        mean_ap += ap / ideal
    n = max(users, 1)
    return {"hr": hr / n, "ndcg": ndcg / n, "precision": precision / n, "recall": recall / n,
            "map": mean_ap / n, "users": users}


@torch.no_grad()
def full_ranking(model, tu, ti, pos_sets, num_items, topk):
    """Every item ranked for each test row's user, its training items excluded, in shoal's
    order (higher logit first, ties to the smaller item row: a stable descending sort of the
    items in row order); the top K scored against the row's held-out item."""
    all_items = torch.arange(num_items)
    recs = []
    for row in range(len(tu)):
        keep = np.ones(num_items, dtype=bool)
        keep[list(pos_sets[int(tu[row])])] = False
        cands = all_items[torch.from_numpy(keep)]
        u = torch.full((len(cands),), int(tu[row]), dtype=torch.long)
        s = model(u, cands, None)
        order = torch.sort(s, descending=True, stable=True).indices[:topk]
        recs.append(cands[order].tolist())
    return ranking_metrics(recs, [[int(t)] for t in ti], topk)


def sample_vectorised(users, items, pos, k, rng):
    """NCF instances of these positives: the positive and k negatives uniform over the items,
    rejected (and redrawn) where they are the user's positives; a random order. Numpy only."""
    p = len(users)
    num_items = pos.shape[1]
    neg = rng.integers(0, num_items, size=(p, k))
    urep = np.repeat(users[:, None], k, 1)
    bad = np.nonzero(pos[urep, neg])
    while len(bad[0]):
        neg[bad] = rng.integers(0, num_items, size=len(bad[0]))
        still = pos[urep[bad], neg[bad]]
        bad = (bad[0][still], bad[1][still])
    u = np.concatenate([users[:, None], urep], 1).ravel()
    i = np.concatenate([items[:, None], neg], 1).ravel()
    y = np.concatenate([np.ones((p, 1), np.float32), np.zeros((p, k), np.float32)], 1).ravel()
    row = np.repeat(np.arange(p), 1 + k)  # the positive whose context an instance carries
    perm = rng.permutation(len(u))
    return u[perm], i[perm], y[perm], row[perm]


def bench(a):
    d = a.bench_dir
    with open(f"{d}/meta.json") as f:
        meta = json.load(f)
    users = np.fromfile(f"{d}/users.i32", dtype=np.int32).astype(np.int64)
    items = np.fromfile(f"{d}/items.i32", dtype=np.int32).astype(np.int64)
    timed, c = meta["timed_positives"], meta["context"]
    ctx = torch.from_numpy(np.fromfile(f"{d}/context.f32", dtype=np.float32).reshape(timed, c))
    pos = np.zeros((meta["users"], meta["items"]), dtype=bool)
    pos[users, items] = True
    layers = [int(x) for x in a.layers.split(",")]
    model = NCF("neumf", meta["users"], meta["items"], a.factors, layers, c)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    rng = np.random.default_rng(a.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    u, i, y, row = sample_vectorised(users[:timed], items[:timed], pos, a.neg, rng)
    u, i, y, row = (torch.from_numpy(u), torch.from_numpy(i), torch.from_numpy(y),
                    torch.from_numpy(row))
    sample_s, sample_cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(u)
    steps = min(a.max_steps or n, (n + a.batch_size - 1) // a.batch_size)
    warm = min(10, steps // 10)  # first steps allocate and warm caches: not timed
    model.train()
    t1 = None
    for s in range(steps):
        if s == warm:
            t1, c1 = time.perf_counter(), time.process_time()
        b = slice(s * a.batch_size, (s + 1) * a.batch_size)
        opt.zero_grad()
        loss = loss_fn(model(u[b], i[b], ctx[row[b]]), y[b])
        loss.backward()
        opt.step()
    # Process CPU time (all of torch's threads) beside wall: on a shared machine wall time
    # also counts other processes' time slices.
    step_s, step_cpu = time.perf_counter() - t1, time.process_time() - c1
    timed_inst = (steps - warm) * a.batch_size
    epoch_inst = meta["positives"] * (1 + a.neg)
    sample_per = sample_s / n
    step_per = step_s / timed_inst
    epoch_s = epoch_inst * (sample_per + step_per)
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "threads": a.threads,
                      "steps": steps - warm, "instances_timed": timed_inst,
                      "sample_s_per_instance": sample_per,
                      "step_instances_per_s": 1 / step_per,
                      "epoch_instances": epoch_inst, "epoch_s_extrapolated": epoch_s,
                      "epoch_instances_per_s": epoch_inst / epoch_s,
                      "epoch_cpu_s_extrapolated":
                          epoch_inst * (sample_cpu / n + step_cpu / timed_inst)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train")
    ap.add_argument("--bench-dir", help="speed mode on data written by `shoal bench ncf`")
    ap.add_argument("--test")
    ap.add_argument("--test-negatives")
    ap.add_argument("--model", default="neumf")
    ap.add_argument("--factors", type=int, default=8)
    ap.add_argument("--layers", default="64,32,16,8")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--neg", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=0, help="stop each epoch early (speed runs)")
    ap.add_argument("--top-k", type=int, default=10, help="K of the metrics")
    ap.add_argument("--full-ranking", action="store_true",
                    help="also full-ranking HR, NDCG, Precision, Recall, MAP@K after every epoch")
    ap.add_argument("--metrics-out")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if a.bench_dir:
        return bench(a)
    if not a.train:
        ap.error("--train is required")
    if a.top_k < 1:
        ap.error("--top-k must be >= 1")
    if a.full_ranking and not (a.test and a.test_negatives):
        ap.error("--full-ranking needs --test and --test-negatives")
    rng = np.random.default_rng(a.seed)
    users, items = read_ratings(a.train)
    has_test = a.test is not None
    if has_test:
        tu, ti = read_ratings(a.test)
        negs = read_negatives(a.test_negatives)
        num_users = int(max(users.max(), tu.max())) + 1
        num_items = int(max(items.max(), ti.max(), negs.max())) + 1
    else:
        num_users, num_items = int(users.max()) + 1, int(items.max()) + 1
    pos_sets = [set() for _ in range(num_users)]
    for u, i in zip(users, items):
        pos_sets[u].add(int(i))
    layers = [int(x) for x in a.layers.split(",")]
    model = NCF(a.model, num_users, num_items, a.factors, layers, 0)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    epoch_s, hrs, ndcgs, inst, full = [], [], [], 0, None
    k = a.top_k
    for epoch in range(1, a.epochs + 1):
        t0 = time.perf_counter()
        u, i, y = sample_epoch(users, items, pos_sets, num_items, a.neg, rng)
        u, i, y = torch.from_numpy(u), torch.from_numpy(i), torch.from_numpy(y)
        model.train()
        n, steps, loss_sum = len(u), 0, 0.0
        for b in range(0, n, a.batch_size):
            opt.zero_grad()
            loss = loss_fn(model(u[b:b + a.batch_size], i[b:b + a.batch_size], None),
                           y[b:b + a.batch_size])
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            steps += 1
            if a.max_steps and steps >= a.max_steps:
                break
        dt = time.perf_counter() - t0
        epoch_s.append(dt)
        inst += min(n, steps * a.batch_size)
        line = f"epoch {epoch:3d} loss {loss_sum / steps:.4f} {dt:.2f} s"
        if has_test:
            model.eval()
            hr, nd = evaluate(model, tu, ti, negs, k)
            hrs.append(hr)
            ndcgs.append(nd)
            line += f" HR@{k} {hr:.4f} NDCG@{k} {nd:.4f}"
        if a.full_ranking:
            full = full_ranking(model, tu, ti, pos_sets, num_items, k)
            line += (f"  full: HR@{k} {full['hr']:.4f} NDCG@{k} {full['ndcg']:.4f}"
                     f" MAP@{k} {full['map']:.4f}")
        print(line, flush=True)
    out = {"model": a.model, "epochs": a.epochs, "epoch_s": epoch_s,
           "instances_per_s": inst / sum(epoch_s), "threads": a.threads, "peer": "pytorch",
           "torch": torch.__version__}
    if has_test:
        best = int(np.argmax(hrs))
        out.update({f"hr@{k}": hrs[-1], f"ndcg@{k}": ndcgs[-1], f"best_hr@{k}": hrs[best],
                    f"best_ndcg@{k}": ndcgs[best], "best_epoch": best + 1,
                    "hr_per_epoch": hrs, "ndcg_per_epoch": ndcgs})
    if full is not None:
        for name in ("hr", "ndcg", "precision", "recall", "map"):
            out[f"full_{name}@{k}"] = full[name]
    print(json.dumps({k: v for k, v in out.items() if not isinstance(v, list)}))
    if a.metrics_out:
        with open(a.metrics_out, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
