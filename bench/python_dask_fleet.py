"""One TSMixerx per series on M3 monthly (h 18, input_size 36) on a 2-worker Dask LocalCluster:
shoal.dask.fit_many against neuralforecast run by the same cluster, fits/s of both in one run.

Needs shoal, dask/distributed and neuralforecast in one interpreter, e.g. a venv that sees the
peer packages (not in CI):

    build/benchenv/bin/python bench/python_dask_fleet.py --series 40 --max-steps 200

(build/benchenv: a venv of the peers' Python version, a .pth file naming the peers'
site-packages (torch), `pip install dask distributed neuralforecast`; PYTHONPATH=
build/release/python for shoal.)

Both sides get the same partitions of series (a few per worker, balanced by rows) and the same
model settings; with --nf-series K, neuralforecast fits an evenly spread sample of K of the
series (every n/K-th id) while shoal fits all of them, since neuralforecast needs hours of CPU
for all 1,428; fits/s are compared as rates, and both sMAPEs are also given on the sample; each neuralforecast task fits its series one after another with
torch.set_num_threads(<worker threads>), as a Dask user would. sMAPE against the M3 test file
shows that both learnt comparable models.

Dask's nanny starts every worker with MALLOC_TRIM_THRESHOLD_=65536 (distributed's
`distributed.nanny.pre-spawn-environ`). Setting that variable also fixes glibc's mmap threshold
at 128 KiB, so every PyTorch tensor of 128 KiB or more is mmapped and unmapped again, and each of
neuralforecast's fits takes ≈ 2.5 million page faults (docs/fleet.md, "PyTorch under Dask").
By default the cluster here starts its workers without it, so that neuralforecast runs at the
rate it has outside Dask; --dask-default-env keeps Dask's setting (what a default cluster
gives). shoal plans its buffers once per fit and is not affected either way.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
import warnings

import numpy as np
import pandas as pd

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "ts")


def nf_partition(df, settings, freq):
    """Runs on a Dask worker: one neuralforecast TSMixerx per series of df."""
    import torch
    from distributed import get_worker
    from neuralforecast import NeuralForecast
    from neuralforecast.models import TSMixerx

    warnings.filterwarnings("ignore")
    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(max(1, get_worker().state.nthreads))
    out = []
    for _, g in df.groupby("unique_id", sort=True):
        model = TSMixerx(n_series=1, enable_progress_bar=False, enable_model_summary=False,
                         logger=False, **settings)
        nf = NeuralForecast(models=[model], freq=freq)
        nf.fit(g)
        out.append(nf.predict())
    return pd.concat(out, ignore_index=True)


def smape(fc, test, col):
    m = fc.merge(test, on=["unique_id", "ds"])
    a, f = m["y"].to_numpy(), m[col].to_numpy(np.float64)
    return float(np.mean(200 * np.abs(a - f) / (np.abs(a) + np.abs(f))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--series", type=int, default=0, help="first N series (0: all 1,428)")
    p.add_argument("--max-steps", type=int, default=1000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads-per-worker", type=int, default=1)
    p.add_argument("--skip-nf", action="store_true", help="shoal only")
    p.add_argument("--nf-series", type=int, default=0,
                   help="neuralforecast on an evenly spread sample of K series (0: all of them)")
    p.add_argument("--dask-default-env", action="store_true",
                   help="keep Dask's MALLOC_TRIM_THRESHOLD_=65536 in the workers (see above)")
    p.add_argument("--json", help="write the figures here")
    a = p.parse_args()

    import distributed
    from dask_page_faults import worker_environment

    import shoal
    import shoal.dask

    train = pd.read_csv(os.path.join(DATA, "m3_monthly_train.csv.gz"))
    test = pd.read_csv(os.path.join(DATA, "m3_monthly_test.csv.gz"))
    if a.series:
        keep = np.sort(train["unique_id"].unique())[: a.series]
        train = train[train["unique_id"].isin(keep)]
    n = train["unique_id"].nunique()
    settings = dict(h=18, input_size=36, max_steps=a.max_steps, random_seed=1)

    with worker_environment(keep_trim=a.dask_default_env):
        cluster = distributed.LocalCluster(n_workers=a.workers,
                                           threads_per_worker=a.threads_per_worker,
                                           processes=True, dashboard_address=":0",
                                           silence_logs=40)
    client = distributed.Client(cluster)
    client.run(lambda: __import__("shoal"))  # import cost out of the timing, on both sides alike
    trim = sorted(set(client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values()),
                  key=str)
    print(f"workers' MALLOC_TRIM_THRESHOLD_: {', '.join(map(str, trim))}", flush=True)
    results = {"series": n, "max_steps": a.max_steps, "workers": a.workers,
               "threads_per_worker": a.threads_per_worker, "load": os.getloadavg()[0],
               "malloc_trim_threshold": trim}

    t0 = time.perf_counter()
    ours = shoal.dask.fit_many(client, train, shoal.TSMixerx(n_series=1, **settings), freq=1)
    wall = time.perf_counter() - t0
    results["shoal"] = {"wall_s": wall, "fits_per_s": n / wall,
                        "smape": smape(ours, test, "TSMixerx")}
    print(f"shoal:          {n} fits in {wall:8.2f} s = {n / wall:8.3f} fits/s, "
          f"sMAPE {results['shoal']['smape']:.2f}", flush=True)

    if not a.skip_nf:
        client.run(lambda: __import__("neuralforecast.models"))
        ids = np.sort(train["unique_id"].unique())
        if a.nf_series and a.nf_series < n:
            ids = ids[np.linspace(0, n - 1, a.nf_series).round().astype(int)]
        sample = train[train["unique_id"].isin(ids)]
        m = len(ids)
        lengths = sample.groupby("unique_id", sort=True).size().to_numpy()
        parts = shoal.dask.partition_series(lengths, 2 * a.workers)
        t0 = time.perf_counter()
        futures = [client.submit(nf_partition, sample[sample["unique_id"].isin(ids[idx])],
                                 settings, 1, pure=False) for idx in parts]
        theirs = pd.concat(client.gather(futures), ignore_index=True)
        wall = time.perf_counter() - t0
        ours_sample = ours[ours["unique_id"].isin(ids)]
        results["neuralforecast"] = {"series": m, "wall_s": wall, "fits_per_s": m / wall,
                                     "smape": smape(theirs, test, "TSMixerx"),
                                     "shoal_smape_same_series": smape(ours_sample, test,
                                                                      "TSMixerx")}
        r = results["neuralforecast"]
        print(f"neuralforecast: {m} fits in {wall:8.2f} s = {m / wall:8.3f} fits/s, "
              f"sMAPE {r['smape']:.2f} (shoal on the same {m} series: "
              f"{r['shoal_smape_same_series']:.2f})")
        results["speedup"] = results["shoal"]["fits_per_s"] / r["fits_per_s"]
        print(f"shoal / neuralforecast fits/s: {results['speedup']:.1f}x "
              f"(load average {results['load']:.1f} at start, "
              f"{os.getloadavg()[0]:.1f} at the end)")
    client.close()
    cluster.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
