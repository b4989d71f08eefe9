"""Accuracy of one TSMixerx per series on M3: neuralforecast (the peer) against shoal.

Run with the peers venv (neuralforecast + torch + pandas), never in CI:

    /opt/peers/bin/python bench/peers/m3_accuracy.py peer  --group monthly --seeds 1,2,3
    /opt/peers/bin/python bench/peers/m3_accuracy.py shoal --group monthly --seeds 1,2,3 \
        --shoal build/release/shoal
    /opt/peers/bin/python bench/peers/m3_accuracy.py score --group monthly --seeds 1,2,3

`peer` fits neuralforecast's TSMixerx (defaults except h and input_size; accelerator cpu, one
thread, logging and progress bars off) on each series of the subset, one model per series, and
appends its forecasts to OUT/nf_<group>_seed<S>.csv as it goes, so an interrupted run resumes
where it stopped. `shoal` runs `shoal forecast` on the same subset and seeds. `score` computes
sMAPE and MASE for both and for seasonal naive with one formula, so the comparison does not
depend on either tool's metric code.

Initial weights (`shoal --init`, docs/accuracy.md): `torch` (the default, as `shoal forecast`)
draws them from shoal's replica of torch's CPU generator, so seed S starts from the weights
neuralforecast's `TSMixerx(..., random_seed=S)` starts from; `philox` draws them from shoal's
own stream (`--init-generator philox`, written as OUT/shoal_philox_<group>_seed<S>.csv);
`torch-file` loads torch's weights saved by torch itself (OUT/torch_init_<group>_seed<S>
.safetensors, `--init-weights`; written as OUT/shoal_torchinit_<group>_seed<S>.csv), a check
that the generator and the file give the same forecasts. All three use shoal's own window
sampling.

A fit of neuralforecast's TSMixerx costs ~10 s of one core here, so the full 1,428 monthly
series x 3 seeds is ~12 core-hours; `--every K` keeps every K-th series (a fixed, documented
subset; K = 1 is the whole group).
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

GROUPS = {  # h from the competition, input_size = 2h, season length for MASE / seasonal naive
    "monthly": dict(h=18, input_size=36, season=12),
    "quarterly": dict(h=8, input_size=16, season=4),
    "yearly": dict(h=6, input_size=12, season=1),
}


def load(data_dir, group, every):
    train = pd.read_csv(os.path.join(data_dir, f"m3_{group}_train.csv.gz"))
    test = pd.read_csv(os.path.join(data_dir, f"m3_{group}_test.csv.gz"))
    ids = train["unique_id"].drop_duplicates().tolist()[::every]
    # A series must hold input_size + h observations for one training window.
    g = GROUPS[group]
    sizes = train.groupby("unique_id").size()
    ids = [u for u in ids if sizes[u] >= g["input_size"] + g["h"]]
    return train[train.unique_id.isin(ids)], test[test.unique_id.isin(ids)], ids


def forecaster(tool, cls_name, kw, threads):
    """A NeuralForecast over one cls_name(**kw) model, of neuralforecast (tool "nf", torch on
    `threads` threads, Lightning quiet) or shoal (`threads` workers): the scripts drive both
    tools with the same calls, only the imports change."""
    import importlib
    import logging

    if tool == "nf":
        import torch

        torch.set_num_threads(threads)
        for name in ("pytorch_lightning", "lightning", "lightning.pytorch"):
            logging.getLogger(name).setLevel(logging.ERROR)
        kw = dict(kw, accelerator="cpu", devices=1, enable_progress_bar=False, logger=False,
                  enable_model_summary=False, enable_checkpointing=False)
        model = getattr(importlib.import_module("neuralforecast.models"), cls_name)(**kw)
        return importlib.import_module("neuralforecast").NeuralForecast(models=[model], freq=1)
    shoal = importlib.import_module("shoal")
    return shoal.NeuralForecast(models=[getattr(shoal, cls_name)(**kw)], freq=1,
                                workers=threads)


def run_peer(args, train, ids, seed):
    import logging

    import torch
    from neuralforecast import NeuralForecast
    from neuralforecast.models import TSMixerx

    torch.set_num_threads(1)
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning").setLevel(logging.ERROR)
    g = GROUPS[args.group]
    out = os.path.join(args.out, f"nf_{args.group}_seed{seed}.csv")
    done = set(pd.read_csv(out)["unique_id"].unique()) if os.path.exists(out) else set()
    # --shard K/N: this process fits every N-th series of the subset from the K-th, so that N
    # processes share one seed (each fit is appended to the CSV in one write). The shard is
    # cut from the whole subset, not from what is left, so shards that start at different
    # times never fit the same series.
    k, n = (int(x) for x in args.shard.split("/"))
    todo = [u for u in ids[k::n] if u not in done]
    print(f"neuralforecast seed {seed}: {len(done)} done, {len(todo)} to fit", file=sys.stderr)
    for i, uid in enumerate(todo):
        df = train[train.unique_id == uid]
        model = TSMixerx(h=g["h"], input_size=g["input_size"], n_series=1, random_seed=seed,
                         accelerator="cpu", devices=1, enable_progress_bar=False, logger=False,
                         enable_model_summary=False, enable_checkpointing=False)
        t0 = time.perf_counter()
        nf = NeuralForecast(models=[model], freq=1)
        nf.fit(df)
        fc = nf.predict().reset_index()
        fit_s = time.perf_counter() - t0
        fc = fc[["unique_id", "ds", "TSMixerx"]].assign(fit_s=fit_s)
        fc.to_csv(out, mode="a", header=not os.path.exists(out), index=False)
        print(f"  {i + 1}/{len(todo)} {uid}: {fit_s:.1f} s", file=sys.stderr)


def torch_init(args, seed):
    """neuralforecast's initial TSMixerx weights for `seed` (as a fit would start), safetensors."""
    from neuralforecast.models import TSMixerx
    from safetensors.torch import save_file

    g = GROUPS[args.group]
    model = TSMixerx(h=g["h"], input_size=g["input_size"], n_series=1, random_seed=seed)
    path = os.path.join(args.out, f"torch_init_{args.group}_seed{seed}.safetensors")
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, path)
    return path


def run_shoal(args, train, test, seed):
    g = GROUPS[args.group]
    sub_train = os.path.join(args.out, f"subset_{args.group}_train.csv")
    sub_test = os.path.join(args.out, f"subset_{args.group}_test.csv")
    train.to_csv(sub_train, index=False)
    test.to_csv(sub_test, index=False)
    tag = {"torch": "shoal", "philox": "shoal_philox", "torch-file": "shoal_torchinit"}[args.init]
    out = os.path.join(args.out, f"{tag}_{args.group}_seed{seed}.csv")
    cmd = [args.shoal, "forecast", "--data", sub_train, "--model", "tsmixerx",
           "--h", str(g["h"]), "--input-size", str(g["input_size"]), "--seed", str(seed),
           "--threads", str(args.threads), "--seasonality", str(g["season"]),
           "--out", out, "--metrics-out", out + ".json"]
    if args.init == "philox":
        cmd += ["--init-generator", "philox"]
    elif args.init == "torch-file":
        cmd += ["--init-weights", torch_init(args, seed)]
    print(" ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)


def seasonal_naive(train, group):
    g = GROUPS[group]
    rows = []
    for uid, s in train.groupby("unique_id", sort=False):
        y = s["y"].to_numpy()
        last = y[-g["season"]:]
        for k in range(g["h"]):
            rows.append((uid, int(s["ds"].iloc[-1]) + 1 + k, last[k % g["season"]]))
    return pd.DataFrame(rows, columns=["unique_id", "ds", "y_hat"])


def scores(fc, train, test, group):
    """Mean sMAPE (0-200) and MASE over series, as in the M3/M4 competitions."""
    m = GROUPS[group]["season"]
    merged = test.merge(fc, on=["unique_id", "ds"], how="left")
    if merged["y_hat"].isna().any():
        missing = merged[merged["y_hat"].isna()]["unique_id"].nunique()
        raise SystemExit(f"{missing} series have no forecast")
    smapes, mases = [], []
    for uid, s in merged.groupby("unique_id", sort=False):
        y, f = s["y"].to_numpy(), s["y_hat"].to_numpy()
        smapes.append(np.mean(200 * np.abs(y - f) / (np.abs(y) + np.abs(f))))
        ins = train[train.unique_id == uid]["y"].to_numpy()
        scale = np.mean(np.abs(ins[m:] - ins[:-m]))
        mases.append(np.mean(np.abs(y - f)) / scale)
    return float(np.mean(smapes)), float(np.mean(mases))


def run_score(args, train, test, ids):
    g = args.group
    rows = [("seasonal naive", "-", *scores(seasonal_naive(train, g), train, test, g), len(ids))]
    tools = (("neuralforecast", "nf", "TSMixerx"), ("shoal", "shoal", "tsmixerx"),
             ("shoal, Philox init", "shoal_philox", "tsmixerx"),
             ("shoal, torch file", "shoal_torchinit", "tsmixerx"))
    seed_scores = {}
    for tool, prefix, col in tools:
        per_seed = []
        for seed in args.seeds:
            path = os.path.join(args.out, f"{prefix}_{g}_seed{seed}.csv")
            if not os.path.exists(path):
                continue
            fc = pd.read_csv(path)
            fc = fc[fc.unique_id.isin(ids)].rename(columns={col: "y_hat"})
            if fc["unique_id"].nunique() < len(ids):
                print(f"{path}: {fc['unique_id'].nunique()}/{len(ids)} series, skipped", file=sys.stderr)
                continue
            per_seed.append(scores(fc, train, test, g))
            rows.append((tool, str(seed), *per_seed[-1], len(ids)))
        if per_seed:
            seed_scores[tool] = np.array(per_seed)
            a = np.array(per_seed)
            sd = a.std(axis=0, ddof=1) if len(a) > 1 else np.zeros(2)
            rows.append((tool, f"mean±sd of {len(a)}", f"{a[:, 0].mean():.3f} ± {sd[0]:.3f}",
                         f"{a[:, 1].mean():.4f} ± {sd[1]:.4f}", len(ids)))
    print(f"M3 {g}: h {GROUPS[g]['h']}, input_size {GROUPS[g]['input_size']}, "
          f"{len(ids)} series (every {args.every}th)")
    print(f"{'model':<20}{'seed':<14}{'sMAPE':>16}{'MASE':>18}{'series':>8}")
    for tool, seed, s, m, n in rows:
        s = f"{s:.3f}" if isinstance(s, float) else s
        m = f"{m:.4f}" if isinstance(m, float) else m
        print(f"{tool:<20}{seed:<14}{s:>16}{m:>18}{n:>8}")
    # Each tool's seed means against neuralforecast's, relative, with the standard error of
    # the difference of two means of independent seeds (sd²/k summed over both tools).
    ref = seed_scores.get("neuralforecast")
    for tool, a in seed_scores.items():
        if tool == "neuralforecast" or ref is None or len(a) < 2 or len(ref) < 2:
            continue
        parts = []
        for j, name in enumerate(("sMAPE", "MASE")):
            d = a[:, j].mean() - ref[:, j].mean()
            se = np.sqrt(a[:, j].var(ddof=1) / len(a) + ref[:, j].var(ddof=1) / len(ref))
            base = ref[:, j].mean()
            parts.append(f"{name} {100 * d / base:+.2f}% ± {100 * se / base:.2f}% (se)")
        print(f"{tool} vs neuralforecast, difference of the seed means: " + ", ".join(parts))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["peer", "shoal", "score"])
    p.add_argument("--group", choices=list(GROUPS), default="monthly")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--every", type=int, default=14, help="keep every K-th series (1: all)")
    p.add_argument("--data", default=os.path.join(here, "..", "..", "..", "shared", "data", "ts"))
    p.add_argument("--out", default="m3_accuracy")
    p.add_argument("--shoal", default="build/release/shoal")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--shard", default="0/1", help="peer: fit the K-th of every N remaining series (K/N)")
    p.add_argument("--init", choices=["torch", "philox", "torch-file"], default="torch",
                   help="shoal: where the initial weights come from (see above)")
    args = p.parse_args()
    args.seeds = [int(s) for s in args.seeds.split(",")]
    os.makedirs(args.out, exist_ok=True)
    train, test, ids = load(args.data, args.group, args.every)
    if args.what == "peer":
        for seed in args.seeds:
            run_peer(args, train, ids, seed)
    elif args.what == "shoal":
        for seed in args.seeds:
            run_shoal(args, train, test, seed)
    else:
        run_score(args, train, test, ids)


if __name__ == "__main__":
    main()
