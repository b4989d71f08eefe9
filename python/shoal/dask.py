"""One model per series across a Dask cluster.

    from distributed import Client
    import shoal, shoal.dask
    client = Client("scheduler:8786")
    fcst = shoal.dask.fit_many(client, df, shoal.TSMixerx(h=18, input_size=36, n_series=1),
                               freq="ME")

The series are split into a few partitions per worker, balanced by rows; each partition is one
Dask task that runs the C++ fleet over its worker's threads (fits never share a process with
another task's Python loop, and there is no task per series). Results come back as futures and
are gathered into one frame; Dask recomputes the partitions of a worker that dies.
"""

from __future__ import annotations

import copy
import uuid

import numpy as np
import pandas as pd

from ._frames import Series
from .core import NeuralForecast


def _worker_threads():
    try:
        from distributed import get_worker
        w = get_worker()
        return int(getattr(w.state, "nthreads", None) or w.nthreads)
    except (ImportError, ValueError, AttributeError):
        return 0


def forecast_partition(df, model, freq, static_df=None, futr_df=None, workers=None, pin=False,
                       id_col="unique_id", time_col="ds", target_col="y"):
    """Fits one model per series of df (the fleet, `workers` threads; None: the Dask worker's
    thread count, or every core outside Dask) and returns the h forecasts of each."""
    if workers is None:
        workers = _worker_threads()
    m = copy.deepcopy(model)
    nf = NeuralForecast([m], freq=freq, per_series=True, workers=workers, pin=pin)
    nf.fit(df, static_df=static_df, id_col=id_col, time_col=time_col, target_col=target_col)
    return nf.predict(static_df=static_df, futr_df=futr_df)


def partition_series(lengths, n_partitions):
    """Series indices per partition: longest first onto the lightest partition (rows ~ work)."""
    n_partitions = max(1, min(n_partitions, len(lengths)))
    parts = [[] for _ in range(n_partitions)]
    load = np.zeros(n_partitions)
    for i in np.argsort(-np.asarray(lengths), kind="stable"):
        k = int(np.argmin(load))
        parts[k].append(int(i))
        load[k] += lengths[i]
    return [sorted(p) for p in parts if p]


def fit_many(client, df, model, freq, static_df=None, futr_df=None, partitions_per_worker=2,
             n_partitions=None, id_col="unique_id", time_col="ds", target_col="y",
             retries=1):
    """Fits `model` (n_series=1) on every series of df across the cluster behind `client` and
    returns the forecasts as one frame (unique_id, ds, <model>), as NeuralForecast.predict.

    df may also be a list of frames (separate data sets): the result is then a list of frames.
    n_partitions defaults to partitions_per_worker × the cluster's workers: a few large tasks,
    each training many series on all of its worker's cores. Every fit's result depends only on
    its series and the model's random_seed, so the forecasts equal a single-process run.
    """
    if isinstance(df, (list, tuple)):
        return [fit_many(client, d, model, freq, static_df, futr_df, partitions_per_worker,
                         n_partitions, id_col, time_col, target_col, retries) for d in df]
    if getattr(model, "n_series", 1) != 1:
        raise ValueError(f"fit_many fits one model per series: {model!r} needs n_series=1, got "
                         f"{model.n_series}")
    s = Series(df, id_col, time_col, target_col, what="df")  # validates before any task
    if n_partitions is None:
        workers = client.scheduler_info().get("workers", {})
        n_partitions = max(1, partitions_per_worker * max(1, len(workers)))
    parts = partition_series(s.lengths, n_partitions)
    run = uuid.uuid4().hex[:8]
    futures = []
    for k, idx in enumerate(parts):
        rows = np.concatenate([np.arange(s.offsets[i], s.offsets[i + 1]) for i in idx])
        part = s.df.iloc[rows]
        ids = s.ids[idx]
        sp = static_df[static_df[id_col].isin(ids)] if static_df is not None else None
        fp = futr_df[futr_df[id_col].isin(ids)] if futr_df is not None else None
        # The partition travels inside the task (not scattered): a task whose worker dies is
        # rerun elsewhere from the scheduler's copy; scattered data would die with the worker.
        futures.append(client.submit(forecast_partition, part, model, freq, sp, fp, None,
                                     False, id_col, time_col, target_col, retries=retries,
                                     key=f"shoal-fit-{run}-{k}"))
    frames = client.gather(futures)
    out = pd.concat(frames, ignore_index=True)
    order = np.argsort(s.ids.get_indexer(out[id_col]), kind="stable")
    return out.iloc[order].reset_index(drop=True)
