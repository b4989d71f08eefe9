"""A hyper-parameter search, shoal against neuralforecast in one run: the same Auto model, search
space, TPE seed, data and validation rows; wall time of the search and refit, the best
validation loss and the refitted model's test sMAPE on M3 monthly.

    PYTHONPATH=build/release/python build/pyenv/bin/python bench/auto_search.py \
        --model NHITS --samples 8 --max-steps 200 --peer-python /opt/peers/bin/python

shoal runs its trials side by side, one per core (`cpus`, default every core), each on one
thread; neuralforecast's Optuna backend runs them one after another, each on --threads torch
threads (default: every core), as its users run it. Without --peer-python only shoal runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "examples", "forecast")


def smape(y, f):
    return float(np.mean(200 * np.abs(y - f) / np.maximum(np.abs(y) + np.abs(f), 1e-9)))


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", default=os.path.join(SAMPLE, "m3_monthly_200_train.csv.gz"))
    ap.add_argument("--test", default=os.path.join(SAMPLE, "m3_monthly_200_test.csv.gz"))
    ap.add_argument("--model", default="NHITS")
    ap.add_argument("--h", type=int, default=18)
    ap.add_argument("--series", type=int, default=200, help="the first N series")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--max-steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--peer-python", help="Python with neuralforecast (e.g. /opt/peers/bin/python)")
    a = ap.parse_args()

    import shoal
    from shoal.auto import tune

    train = pd.read_csv(a.train)
    test = pd.read_csv(a.test)
    ids = list(dict.fromkeys(train["unique_id"]))[:a.series]
    train, test = train[train["unique_id"].isin(ids)], test[test["unique_id"].isin(ids)]
    test = test.sort_values(["unique_id", "ds"])
    # One space for both: {key: [kind, args]}.
    space = {"input_size": ["choice", [a.h, a.h * 3 // 2]],  # M3 monthly: 30+ rows after val
             "learning_rate": ["loguniform", [1e-4, 1e-2]],
             "max_steps": ["value", a.max_steps],
             "val_check_steps": ["value", max(1, a.max_steps // 4)],
             "random_seed": ["choice", [1, 2, 3]]}
    build = {"value": lambda v: v, "choice": tune.choice,
             "loguniform": lambda v: tune.loguniform(*v), "uniform": lambda v: tune.uniform(*v)}
    config = {k: build[kind](v) for k, (kind, v) in space.items()}
    cls = getattr(shoal.auto, f"Auto{a.model}")
    model = cls(h=a.h, config=config, num_samples=a.samples, cpus=a.threads)
    nf = shoal.NeuralForecast([model], freq=1, workers=a.threads)
    t0 = time.perf_counter()
    nf.fit(train, val_size=a.h)
    shoal_s = time.perf_counter() - t0
    fc = nf.predict().sort_values(["unique_id", "ds"])
    y = test["y"].to_numpy(float)
    ours = {"search_s": shoal_s, "best_loss": float(model.results["loss"].min()),
            "smape": smape(y, fc[f"Auto{a.model}"].to_numpy(float))}
    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} CPUs; Auto{a.model}, "
          f"{len(ids)} M3 monthly series, h {a.h}, {a.samples} trials of {a.max_steps} steps")
    print(f"shoal          search+refit {ours['search_s']:8.2f} s  best val loss "
          f"{ours['best_loss']:10.4f}  test sMAPE {ours['smape']:.3f}  ({a.threads} trials at once)")
    if not a.peer_python:
        return
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "shoal_auto_search_train.csv")
    train.to_csv(path, index=False)
    out = subprocess.run([a.peer_python, os.path.join(HERE, "peers", "auto_search.py"),
                          "--data", path, "--model", a.model, "--h", str(a.h),
                          "--samples", str(a.samples), "--space", json.dumps(space),
                          "--threads", str(a.threads)],
                         check=True, capture_output=True, text=True).stdout
    peer = json.loads(out.strip().splitlines()[-1])
    peer_smape = smape(y, np.asarray(peer["forecasts"]))
    print(f"neuralforecast search+refit {peer['search_s']:8.2f} s  best val loss "
          f"{peer['best_loss']:10.4f}  test sMAPE {peer_smape:.3f}  (trials one after another, "
          f"{a.threads} torch threads)")
    print(f"shoal is {peer['search_s'] / ours['search_s']:.1f}x faster")


if __name__ == "__main__":
    main()
