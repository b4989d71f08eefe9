"""Accuracy of neuralforecast's global models on M3, neuralforecast against shoal.

Run with the peers venv (neuralforecast + torch + pandas), never in CI:

    P=/opt/peers/bin/python
    PYTHONPATH=build/release/python $P bench/peers/m3_global.py fit --tool nf \
        --group monthly --models mlp,nlinear,dlinear,mlp_multivariate --seeds 1,2,3 --every 7
    PYTHONPATH=build/release/python $P bench/peers/m3_global.py fit --tool shoal  (same flags)
    $P bench/peers/m3_global.py score --group monthly --seeds 1,2,3 --every 7

`fit` trains each model as neuralforecast users run it: one model across all the series of the
subset (global; MLPMultivariate: one multivariate model with n_series = the subset's series),
every argument at its default except h, input_size (2h), random_seed and, for the multivariate
model, n_series; `NeuralForecast(models=[model], freq=1).fit(df).predict()`. The same script
drives both tools: `--tool shoal` imports the models and NeuralForecast from `shoal` instead of
`neuralforecast` and changes nothing else. Forecasts go to OUT/<tool>_<group>_<model>_seed<S>.csv
(a finished file is not refitted), fit seconds beside them in a .json. `score` computes sMAPE
and MASE for every file with the one scorer of m3_accuracy.py (seasonal naive beside them).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from m3_accuracy import GROUPS, forecaster, load, scores, seasonal_naive  # noqa: E402

MODELS = {"mlp": ("MLP", False), "nlinear": ("NLinear", False), "dlinear": ("DLinear", False),
          "mlp_multivariate": ("MLPMultivariate", True), "nhits": ("NHITS", False),
          "nbeats": ("NBEATS", False), "nbeatsx": ("NBEATSx", False), "tide": ("TiDE", False)}


def fit(args, train, ids, seed, key):
    cls_name, multivariate = MODELS[key]
    out = os.path.join(args.out, f"{args.tool}_{args.group}_{key}_seed{seed}.csv")
    if os.path.exists(out):
        return
    g = GROUPS[args.group]
    kw = dict(h=g["h"], input_size=g["input_size"], random_seed=seed)
    if multivariate:
        kw["n_series"] = len(ids)
    nf = forecaster(args.tool, cls_name, kw, args.threads)
    t0 = time.perf_counter()
    nf.fit(train)
    fc = nf.predict()
    seconds = time.perf_counter() - t0
    fc = fc.reset_index() if "unique_id" not in fc.columns else fc
    fc = fc[["unique_id", "ds", cls_name]].rename(columns={cls_name: "y_hat"})
    fc.to_csv(out + ".tmp", index=False)
    os.replace(out + ".tmp", out)
    with open(out + ".json", "w") as f:
        json.dump({"fit_predict_s": seconds, "series": len(ids)}, f)
    print(f"{args.tool} {key} seed {seed}: {seconds:.1f} s", file=sys.stderr)


def score(args, train, test, ids):
    g = args.group
    print(f"M3 {g}: h {GROUPS[g]['h']}, input_size {GROUPS[g]['input_size']}, {len(ids)} series "
          f"(every {args.every}th with at least input_size + h observations), seeds {args.seeds}")
    print(f"{'model':<18}{'tool':<16}{'sMAPE':>18}{'MASE':>20}{'vs nf sMAPE':>13}"
          f"{'vs nf MASE':>12}{'fit s':>8}")
    s, m = scores(seasonal_naive(train, g), train, test, g)
    print(f"{'seasonal naive':<18}{'-':<16}{s:>18.3f}{m:>20.4f}")
    for key, (cls_name, _) in MODELS.items():
        means = {}
        for tool in ("nf", "shoal"):
            per_seed, secs = [], []
            for seed in args.seeds:
                path = os.path.join(args.out, f"{tool}_{g}_{key}_seed{seed}.csv")
                if not os.path.exists(path):
                    continue
                fc = pd.read_csv(path)
                per_seed.append(scores(fc[fc.unique_id.isin(ids)], train, test, g))
                with open(path + ".json") as f:
                    secs.append(json.load(f)["fit_predict_s"])
            if not per_seed:
                continue
            a = np.array(per_seed)
            sd = a.std(axis=0, ddof=1) if len(a) > 1 else np.zeros(2)
            means[tool] = a.mean(axis=0)
            rel = ("", "")
            if tool == "shoal" and "nf" in means:
                rel = tuple(f"{100 * (means['shoal'][j] / means['nf'][j] - 1):+.2f}%"
                            for j in range(2))
            name = "neuralforecast" if tool == "nf" else "shoal"
            print(f"{cls_name:<18}{name + f' ({len(a)})':<16}"
                  f"{f'{a[:, 0].mean():.3f} ± {sd[0]:.3f}':>18}"
                  f"{f'{a[:, 1].mean():.4f} ± {sd[1]:.4f}':>20}{rel[0]:>13}{rel[1]:>12}"
                  f"{np.mean(secs):>8.1f}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["fit", "score"])
    p.add_argument("--tool", choices=["nf", "shoal"], default="nf")
    p.add_argument("--group", choices=["monthly", "quarterly"], default="monthly")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--every", type=int, default=7, help="keep every K-th series (1: all)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (nf), a global fit's threads (shoal)")
    p.add_argument("--data", default=os.path.join(here, "..", "..", "..", "shared", "data", "ts"))
    p.add_argument("--out", default="m3_global")
    args = p.parse_args()
    args.seeds = [int(s) for s in args.seeds.split(",")]
    os.makedirs(args.out, exist_ok=True)
    train, test, ids = load(args.data, args.group, args.every)
    if args.what == "score":
        score(args, train, test, ids)
        return
    for key in args.models.split(","):
        if key not in MODELS:
            raise SystemExit(f"unknown model {key!r}: one of {', '.join(MODELS)}")
        for seed in args.seeds:
            fit(args, train, ids, seed, key)


if __name__ == "__main__":
    main()
