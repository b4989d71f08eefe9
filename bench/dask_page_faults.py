"""What Dask's worker environment does to one fit: wall time, user and system CPU and minor page
faults (getrusage) of TSMixerx fits on M3 monthly series (h 18, input_size 36, defaults, one
thread), neuralforecast's and shoal's, in four places:

  plain          this process
  plain-trim     a child process with MALLOC_TRIM_THRESHOLD_=65536, as Dask's nanny sets it
  dask           a 2-worker LocalCluster with Dask's default worker environment
  dask-no-trim   the same cluster without MALLOC_TRIM_THRESHOLD_

    PYTHONPATH=build/release/python build/benchenv/bin/python bench/dask_page_faults.py \
        --fits 2 --where plain,plain-trim,dask,dask-no-trim

Setting the trim threshold in glibc also fixes its mmap threshold at 128 KiB, so PyTorch's
larger temporaries are mmapped, faulted in and unmapped on every step (docs/fleet.md, "PyTorch
under Dask"). Each Dask worker runs --fits fits of each library, one after another.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import resource
import subprocess
import sys
import time
import warnings

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "ts",
                    "m3_monthly_train.csv.gz")
TRIM = "MALLOC_TRIM_THRESHOLD_"


def fits(library: str, n: int, max_steps: int) -> list[tuple[float, float, float, int]]:
    """n fits of `library` ('neuralforecast' or 'shoal') on the first n series, one after
    another; per fit (wall s, user s, system s, minor faults)."""
    import numpy as np
    import pandas as pd

    warnings.filterwarnings("ignore")
    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    settings = dict(h=18, input_size=36, n_series=1, max_steps=max_steps, random_seed=1)
    if library == "neuralforecast":
        import torch
        from neuralforecast import NeuralForecast
        from neuralforecast.models import TSMixerx

        torch.set_num_threads(1)

        def make():
            return NeuralForecast(models=[TSMixerx(enable_progress_bar=False,
                                                   enable_model_summary=False, logger=False,
                                                   **settings)], freq=1)
    else:
        import shoal

        def make():
            return shoal.NeuralForecast(models=[shoal.TSMixerx(**settings)], freq=1)

    df = pd.read_csv(DATA)
    out = []
    for uid in np.sort(df["unique_id"].unique())[:n]:
        series = df[df["unique_id"] == uid]
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        nf = make()
        nf.fit(series)
        nf.predict()
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        out.append((t1 - t0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime,
                    r1.ru_minflt - r0.ru_minflt))
    return out


def show(where: str, library: str, rows, trim) -> None:
    for wall, user, system, faults in rows:
        print(f"{where:13s} {library:15s} {str(trim):>7s} {wall:8.2f} {user:8.2f} {system:8.2f} "
              f"{faults:12d}", flush=True)


@contextlib.contextmanager
def worker_environment(keep_trim: bool):
    """For the clusters started inside: Dask's worker environment, with or without
    MALLOC_TRIM_THRESHOLD_. A nanny also writes its variables into the environment of the
    process that starts it (which its workers inherit) and leaves them there, so this process's
    own value is removed too when the variable is not kept, and restored after."""
    import dask
    import distributed  # noqa: F401  (loads the distributed.* config)

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    before = os.environ.get(TRIM)
    if not keep_trim:
        env.pop(TRIM, None)
        os.environ.pop(TRIM, None)
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": env}):
            yield
    finally:
        if before is None:
            os.environ.pop(TRIM, None)
        else:
            os.environ[TRIM] = before


def on_dask(libraries: list[str], n: int, max_steps: int, keep_trim: bool) -> None:
    import distributed

    where = "dask" if keep_trim else "dask-no-trim"
    with worker_environment(keep_trim), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=":0", silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        here = os.path.dirname(os.path.abspath(__file__))
        client.run(lambda: sys.path.insert(0, here))
        workers = list(client.scheduler_info()["workers"])
        for library in libraries:
            futures = [client.submit(_task, library, n, max_steps, pure=False, workers=[w])
                       for w in workers]
            for trim, rows in client.gather(futures):
                show(where, library, rows, trim)


def _task(library: str, n: int, max_steps: int):
    return os.environ.get(TRIM), fits(library, n, max_steps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fits", type=int, default=2, help="fits per library and process")
    p.add_argument("--max-steps", type=int, default=1000)
    p.add_argument("--where", default="plain,plain-trim,dask,dask-no-trim")
    p.add_argument("--libraries", default="shoal,neuralforecast")
    p.add_argument("--library", help=argparse.SUPPRESS)  # a plain-trim child's one library
    a = p.parse_args()
    if a.library:
        show("plain-trim", a.library, fits(a.library, a.fits, a.max_steps), os.environ.get(TRIM))
        return
    print(f"{'where':13s} {'library':15s} {'trim':>7s} {'wall_s':>8s} {'user_s':>8s} "
          f"{'sys_s':>8s} {'minor_faults':>12s}", flush=True)
    libraries = a.libraries.split(",")
    for where in a.where.split(","):
        if where == "plain":
            for library in libraries:
                show(where, library, fits(library, a.fits, a.max_steps), os.environ.get(TRIM))
        elif where == "plain-trim":
            for library in libraries:
                subprocess.run([sys.executable, __file__, "--fits", str(a.fits), "--max-steps",
                                str(a.max_steps), "--library", library],
                               env={**os.environ, TRIM: "65536"}, check=True)
        elif where in ("dask", "dask-no-trim"):
            on_dask(libraries, a.fits, a.max_steps, keep_trim=where == "dask")
        else:
            p.error(f"--where: unknown place {where!r}")


if __name__ == "__main__":
    main()
