"""Categorical exogenous features on M3, neuralforecast against shoal.

Run with the peers venv (neuralforecast + torch + pandas), never in CI:

    PYTHONPATH=build/release/python /opt/peers/bin/python bench/peers/m3_categorical.py \
        --group monthly --model MLP --every 7 --seeds 1

Each tool fits one global model (defaults except h, input_size = 2h, max_steps, random_seed)
twice: without exogenous inputs, and with two categorical ones from M3's metadata: the calendar
month (or quarter) of each step as a future feature (strings "m1".."m12"; unknown where M3 has
no calendar start, which both tools read as an unseen category) and the series' M3 category as
a static one. The same script drives both tools, only the imports change. It prints the test
set's sMAPE and MAE and the fit's seconds, per tool and variant.
"""

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from m3_accuracy import GROUPS, forecaster, load  # noqa: E402

PERIODS = {"monthly": 12, "quarterly": 4}


def with_calendar(frame, meta, periods):
    """frame with a "period" column: "m<k>" for the step's month (quarter) of the year, None
    where M3 has no calendar start for the series."""
    start = frame["unique_id"].map(meta["start_period"])
    k = (start - 1 + frame["ds"] - 1) % periods + 1
    return frame.assign(period=["m%d" % v if v == v else None for v in k])


def fit_predict(tool, cls_name, train, futr, static, g, seed, steps, periods, categorical,
                threads):
    kw = dict(h=g["h"], input_size=g["input_size"], random_seed=seed, max_steps=steps)
    if categorical:
        kw.update(futr_exog_list=["period"], stat_exog_list=["category"],
                  cat_exog_list=["period", "category"],
                  categorical_cardinalities={"period": periods, "category": 6})
    nf = forecaster(tool, cls_name, kw, threads)
    t0 = time.perf_counter()
    if categorical:
        nf.fit(train, static_df=static)
        fc = nf.predict(futr_df=futr)
    else:
        nf.fit(train[["unique_id", "ds", "y"]])
        fc = nf.predict()
    fc = fc.reset_index() if "unique_id" not in fc.columns else fc
    return fc, time.perf_counter() - t0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--group", choices=sorted(PERIODS), default="monthly")
    p.add_argument("--model", default="MLP")
    p.add_argument("--seeds", default="1")
    p.add_argument("--every", type=int, default=7)
    p.add_argument("--max-steps", type=int, default=500)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tools", default="nf,shoal")
    p.add_argument("--data", default=os.path.join(here, "..", "..", "..", "shared", "data", "ts"))
    a = p.parse_args()
    g = GROUPS[a.group]
    train, test, ids = load(a.data, a.group, a.every)
    meta = pd.read_csv(os.path.join(a.data, "m3_meta.csv.gz")).set_index("unique_id")
    train = with_calendar(train, meta, PERIODS[a.group])
    futr = with_calendar(test[["unique_id", "ds"]], meta, PERIODS[a.group])
    static = pd.DataFrame({"unique_id": ids, "category": [meta["category"][u] for u in ids]})
    unknown = train.groupby("unique_id")["period"].first().isna().sum()
    print(f"M3 {a.group}: {a.model}, h {g['h']}, input_size {g['input_size']}, {len(ids)} "
          f"series ({unknown} without a calendar start), max_steps {a.max_steps}, seeds "
          f"{a.seeds}")
    print(f"{'tool':<16}{'inputs':<28}{'sMAPE':>8}{'MAE':>10}{'s/fit':>8}")
    for categorical in (False, True):
        for tool in a.tools.split(","):
            smape, mae, secs = [], [], []
            for seed in (int(s) for s in a.seeds.split(",")):
                fc, s = fit_predict(tool, a.model, train, futr, static, g, seed, a.max_steps,
                                    PERIODS[a.group], categorical, a.threads)
                m = test.merge(fc, on=["unique_id", "ds"], how="inner")
                y, yhat = m["y"].to_numpy(), m[a.model].to_numpy()
                smape.append(np.mean(200 * np.abs(y - yhat) / (np.abs(y) + np.abs(yhat))))
                mae.append(np.mean(np.abs(y - yhat)))
                secs.append(s)
            name = "neuralforecast" if tool == "nf" else "shoal"
            inputs = "period + category (cat.)" if categorical else "none"
            print(f"{name:<16}{inputs:<28}{np.mean(smape):>8.3f}{np.mean(mae):>10.1f}"
                  f"{np.mean(secs):>8.1f}", flush=True)


if __name__ == "__main__":
    main()
