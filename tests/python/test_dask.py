"""shoal.dask.fit_many on a LocalCluster of 2 worker processes equals the single-process
per-series fit for the same seeds, and survives the loss of a worker."""

import os

import numpy as np
import pandas as pd
import pytest

import shoal
import shoal.dask
from conftest import make_panel

distributed = pytest.importorskip("distributed")

MODEL = dict(h=4, input_size=12, n_series=1, max_steps=15)


@pytest.fixture(scope="module")
def client():
    # Worker processes unpickle this module's test model: let them import it.
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in [here, os.environ.get("PYTHONPATH", "")] if p)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def df():
    return make_panel(n_series=6, ids=[f"id{i:02d}" for i in range(6)], seed=4)


def test_fit_many_equals_single_process(client, df):
    model = shoal.TSMixerx(**MODEL)
    got = shoal.dask.fit_many(client, df, model, freq="ME")
    want = shoal.dask.forecast_partition(df, model, "ME", workers=1)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.columns) == ["unique_id", "ds", "TSMixerx"] and len(got) == 24
    # Both workers took part: partitions are spread over the cluster.
    assert len(shoal.dask.partition_series(np.ones(6), 4)) == 4


def test_fit_many_searches_each_series_as_one_process_does(client, df):
    """An Auto model searched per series over the cluster: each series' trials depend only on
    its own id and data, so the partitions give the one-process search's forecasts."""
    from shoal.auto import AutoTSMixerx, tune

    config = {"input_size": tune.choice([8, 12]), "max_steps": 10, "val_check_steps": 5,
              "learning_rate": tune.loguniform(1e-3, 1e-2)}
    model = AutoTSMixerx(4, 1, config=config, num_samples=3)
    got = shoal.dask.fit_many(client, df, model, freq="ME")
    want = shoal.dask.forecast_partition(df, model, "ME", workers=1)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.columns) == ["unique_id", "ds", "AutoTSMixerx"]


def _kill_once(marker):
    """Runs on a worker: the first call takes the worker process down."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)


class _DyingModel(shoal.TSMixerx):
    """A model whose first fit kills its worker (deep-copied into each task)."""

    marker = ""

    def _settings(self, *a, **k):
        _kill_once(self.marker)
        return super()._settings(*a, **k)


def test_lost_worker_is_recomputed(client, df, tmp_path):
    model = _DyingModel(alias="TSMixerx", **MODEL)
    model.marker = str(tmp_path / "killed")
    got = shoal.dask.fit_many(client, df, model, freq="ME", n_partitions=2)
    assert os.path.exists(model.marker)  # a worker did die
    want = shoal.dask.forecast_partition(df, shoal.TSMixerx(**MODEL), "ME", workers=1)
    np.testing.assert_array_equal(got["TSMixerx"].to_numpy(), want["TSMixerx"].to_numpy())
    client.wait_for_workers(2, timeout=60)


def test_list_of_datasets(client):
    a = make_panel(n_series=2, seed=1)
    b = make_panel(n_series=3, seed=2)
    out = shoal.dask.fit_many(client, [a, b], shoal.TSMixer(**MODEL), freq="ME")
    assert [len(o) for o in out] == [8, 12]
