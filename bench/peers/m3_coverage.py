"""Coverage of conformal prediction intervals on M3, neuralforecast against shoal.

Run with the peers venv (neuralforecast + torch + pandas), never in CI:

    PYTHONPATH=build/release/python /opt/peers/bin/python bench/peers/m3_coverage.py \
        --group monthly --models nlinear,dlinear --seeds 1,2,3 --every 7

Each tool fits each model as m3_global.py does (global, defaults except h, input_size = 2h and
random_seed) with `fit(df, prediction_intervals=PredictionIntervals(n_windows=W))` and
forecasts `predict(level=[80, 90])`; the same script drives both, only the imports change.
It prints, per model and tool, the share of test values inside the 80% and 90% intervals
(empirical coverage, pooled over series, steps and seeds), the mean interval width relative to
the test values' mean absolute level, and the point forecast's sMAPE.
"""

import argparse
import importlib
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from m3_accuracy import GROUPS, forecaster, load  # noqa: E402

MODELS = {"nlinear": "NLinear", "dlinear": "DLinear", "mlp": "MLP", "nhits": "NHITS"}
LEVELS = [80, 90]


def fit_predict(tool, cls_name, train, g, seed, n_windows, threads):
    nf = forecaster(tool, cls_name, dict(h=g["h"], input_size=g["input_size"],
                                         random_seed=seed), threads)
    utils = importlib.import_module("neuralforecast.utils" if tool == "nf" else "shoal.utils")
    t0 = time.perf_counter()
    nf.fit(train, prediction_intervals=utils.PredictionIntervals(n_windows=n_windows))
    fc = nf.predict(level=LEVELS)
    fc = fc.reset_index() if "unique_id" not in fc.columns else fc
    return fc, time.perf_counter() - t0


def summary(fc, test, cls_name):
    m = test.merge(fc, on=["unique_id", "ds"], how="inner")
    y, yhat = m["y"].to_numpy(), m[cls_name].to_numpy()
    out = {}
    for lv in LEVELS:
        lo, hi = m[f"{cls_name}-lo-{lv}"].to_numpy(), m[f"{cls_name}-hi-{lv}"].to_numpy()
        out[f"cov{lv}"] = np.mean((y >= lo) & (y <= hi))
        out[f"width{lv}"] = np.mean(hi - lo) / np.mean(np.abs(y))
    out["smape"] = np.mean(200 * np.abs(y - yhat) / (np.abs(y) + np.abs(yhat)))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--group", choices=["monthly", "quarterly"], default="monthly")
    p.add_argument("--models", default="nlinear")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--every", type=int, default=7)
    p.add_argument("--n-windows", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tools", default="nf,shoal")
    p.add_argument("--data", default=os.path.join(here, "..", "..", "..", "shared", "data", "ts"))
    a = p.parse_args()
    g = GROUPS[a.group]
    train, test, ids = load(a.data, a.group, a.every)
    print(f"M3 {a.group}: h {g['h']}, input_size {g['input_size']}, {len(ids)} series, "
          f"PredictionIntervals(n_windows={a.n_windows}), seeds {a.seeds}")
    print(f"{'model':<10}{'tool':<16}{'cover 80%':>10}{'cover 90%':>10}{'width 80%':>10}"
          f"{'width 90%':>10}{'sMAPE':>8}{'s/fit':>8}")
    for key in a.models.split(","):
        cls_name = MODELS[key]
        for tool in a.tools.split(","):
            rows, secs = [], []
            for seed in (int(s) for s in a.seeds.split(",")):
                fc, s = fit_predict(tool, cls_name, train, g, seed, a.n_windows, a.threads)
                rows.append(summary(fc, test, cls_name))
                secs.append(s)
            r = {k: np.mean([x[k] for x in rows]) for k in rows[0]}
            name = "neuralforecast" if tool == "nf" else "shoal"
            print(f"{cls_name:<10}{name:<16}{100 * r['cov80']:>9.1f}%{100 * r['cov90']:>9.1f}%"
                  f"{r['width80']:>10.3f}{r['width90']:>10.3f}{r['smape']:>8.3f}"
                  f"{np.mean(secs):>8.1f}", flush=True)


if __name__ == "__main__":
    main()
