"""Every argument means something or is refused, naming it: NCF counts and k are integers in
range, never rounded or ignored."""

import os

import numpy as np
import pandas as pd
import pytest

import shoal
from shoal.losses import DistributionLoss, MQLoss
from shoal.utils import PredictionIntervals


@pytest.fixture(scope="module")
def train():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"user": rng.integers(0, 20, 300), "item": rng.integers(0, 30, 300)})


@pytest.mark.parametrize("value, error", [(-3, ValueError), (0, ValueError), (2.5, TypeError),
                                          (True, TypeError), ("5", TypeError),
                                          (2**31, ValueError)])
@pytest.mark.parametrize("name", ["num_users", "num_items"])
def test_fit_counts(train, name, value, error):
    with pytest.raises(error, match=name):
        shoal.NCF(epochs=1, threads=1).fit(train, **{name: value})


def test_recommend_k(train):
    m = shoal.NCF(epochs=1, threads=1).fit(train, num_users=25)
    assert m.num_users == 25
    for k, error in [(2.7, TypeError), (0, ValueError), (None, TypeError), ("3", TypeError)]:
        with pytest.raises(error, match="k"):
            m.recommend([1], k=k)
    assert len(m.recommend([1], k=np.int64(3))) == 3


def test_thread_counts_stop_at_the_cpus(train, tmp_path):
    cpus = len(os.sched_getaffinity(0))
    model = shoal.TSMixerx(h=4, input_size=12, n_series=1)
    for value, error in [(cpus + 1, ValueError), (100000, ValueError), (-1, ValueError),
                         (1.5, TypeError)]:
        with pytest.raises(error, match="threads"):
            shoal.NCF(epochs=1, threads=value)
        with pytest.raises(error, match="workers"):
            shoal.NeuralForecast([model], freq=1, workers=value)
    # A model saved with more threads than this process may use loads with every CPU.
    m = shoal.NCF(epochs=1, threads=1).fit(train)
    m.threads = cpus + 1
    assert shoal.NCF.load(m.save(tmp_path / "m")).threads == 0


def test_no_negatives_is_refused(train):
    with pytest.raises(ValueError, match="num_negatives"):
        shoal.NCF(epochs=1, threads=1, num_negatives=0).fit(train)


def test_metrics_k_is_an_integer(train):
    truth = train.iloc[:5]
    for k, error in [(2.7, TypeError), (0, ValueError), ("3", TypeError)]:
        with pytest.raises(error, match="k"):
            shoal.metrics(truth, truth, k=k)


# ---- forecasting: losses, levels, quantiles and counts ----

def series(n=2, length=40):
    t = np.arange(length)
    return pd.DataFrame({"unique_id": np.repeat([f"s{i}" for i in range(n)], length),
                         "ds": np.tile(t, n),
                         "y": np.concatenate([np.sin(t / 3) + i for i in range(n)])})


@pytest.mark.parametrize("weights, match", [([1, -1, 1, 1], "finite weights ≥ 0, got -1"),
                                            ([1, np.nan, 1, 1], "finite weights ≥ 0, got nan"),
                                            ([0, 0, 0, 0], "all zero")])
def test_horizon_weight_is_refused_at_construction(weights, match):
    for make in (lambda: shoal.MAE(horizon_weight=weights),
                 lambda: MQLoss(horizon_weight=weights),
                 lambda: DistributionLoss("Normal", horizon_weight=weights)):
        with pytest.raises(ValueError, match=f"horizon_weight.*{match}|{match}"):
            make()


@pytest.mark.parametrize("kw, error, match", [
    (dict(level=[-5]), ValueError, r"level must lie in \[0, 100\), got -5"),
    (dict(level=[100]), ValueError, "level must lie"),
    (dict(level=[float("nan")]), ValueError, "level must lie"),
    (dict(level=80), TypeError, "level must be a list"),
    (dict(level=["80"]), TypeError, "level must be a list of numbers"),
    (dict(level=[True]), TypeError, "level must be a list of numbers"),
    (dict(level=[]), ValueError, "level must not be empty"),
    (dict(quantiles=[0.1, 1.5]), ValueError, r"quantiles must lie in \(0, 1\), got 1.5"),
    (dict(quantiles=[0]), ValueError, "quantiles must lie"),
    (dict(quantiles=0.5), TypeError, "quantiles must be a list"),
])
def test_levels_and_quantiles_out_of_range_are_refused(kw, error, match):
    """In the losses' arguments and in predict, before any fit or column is made (a level of
    -5 once gave lo--5 columns)."""
    if "level" in kw:
        with pytest.raises(error, match=match):
            MQLoss(level=kw["level"])
    with pytest.raises(error, match=match):
        DistributionLoss("Normal", **kw)
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)], freq=1)
    nf.fit(series(), prediction_intervals=PredictionIntervals(n_windows=2))
    with pytest.raises(error, match=match):
        nf.predict(**kw)
    with pytest.raises(error, match=match):
        nf.cross_validation(series(), n_windows=2, refit=True, **kw)


def test_predict_level_in_range_gives_its_columns():
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)], freq=1)
    nf.fit(series(), prediction_intervals=PredictionIntervals(n_windows=2))
    assert {"NLinear-lo-80", "NLinear-hi-80"} <= set(nf.predict(level=[80]).columns)


@pytest.mark.parametrize("kw, error", [(dict(n_windows=-1), ValueError),
                                       (dict(n_windows=1.5), TypeError),
                                       (dict(step_size=0), ValueError),
                                       (dict(step_size=2.0), TypeError),
                                       (dict(val_size=-4), ValueError),
                                       (dict(h=-2), ValueError)])
def test_cross_validation_counts(kw, error):
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)], freq=1)
    with pytest.raises(error, match=list(kw)[0]):
        nf.cross_validation(series(), **kw)


@pytest.mark.parametrize("kw, error", [(dict(n_windows=2.5), TypeError),
                                       (dict(n_windows=-3), ValueError),
                                       (dict(step_size=-1), ValueError),
                                       (dict(step_size=1.5), TypeError)])
def test_prediction_intervals_counts(kw, error):
    with pytest.raises(error, match=list(kw)[0]):
        PredictionIntervals(**kw)


def test_predict_h_is_a_count():
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)], freq=1)
    nf.fit(series())
    for h, error in [(-1, ValueError), (0, ValueError), (2.5, TypeError)]:
        with pytest.raises(error, match="h"):
            nf.predict(h=h)


@pytest.mark.parametrize("make, error, match", [
    (lambda: MQLoss(level=[50], quantiles=[0.1, 0.9]), ValueError, "level=.* is unread"),
    (lambda: DistributionLoss("Normal", level=[95], quantiles=[0.1]), ValueError, "unread"),
    (lambda: DistributionLoss("Normal", num_samples=2.7), TypeError, "num_samples"),
    (lambda: DistributionLoss("Normal", num_samples=0), ValueError, "num_samples"),
    (lambda: shoal.losses.GMM(n_components=2.5), TypeError, "n_components"),
    (lambda: shoal.QuantileLoss(q="0.5"), TypeError, "q must be a number"),
    (lambda: shoal.QuantileLoss(q=float("nan")), ValueError, "q must be finite"),
])
def test_loss_arguments_nothing_reads_or_out_of_range(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_default_level_beside_quantiles_passes():
    assert MQLoss(quantiles=[0.1, 0.9]).quantiles == pytest.approx([0.1, 0.9])
