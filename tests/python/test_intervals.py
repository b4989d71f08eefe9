"""Conformal prediction intervals as neuralforecast computes them: fit(prediction_intervals=...)
calibrates on a cross_validation, predict(level=...) / predict(quantiles=...) adds the columns."""

import numpy as np
import pandas as pd
import pytest

import shoal
from shoal.utils import (PredictionIntervals, conformal_intervals, level_to_quantiles,
                         quantiles_to_level)


def frame(n=3, length=60):
    rng = np.random.default_rng(0)
    t = np.arange(length)
    y = np.concatenate([5.0 * i + 0.2 * t + 2.0 * np.sin(2 * np.pi * t / 6)
                        + rng.normal(0, 0.5, length) for i in range(n)])
    return pd.DataFrame({"unique_id": np.repeat([f"s{i}" for i in range(n)], length),
                         "ds": np.tile(t, n), "y": y})


def test_level_and_quantile_conversions():
    assert level_to_quantiles([90, 80]) == [0.05, 0.1, 0.9, 0.95]
    assert quantiles_to_level([0.1, 0.5, 0.9]) == [0, 80]


def test_distribution_and_error_formulas_on_a_small_case():
    fc = np.array([[10.0, 20.0]])               # 1 series, h 2
    scores = np.array([[[1.0, 2.0], [3.0, 4.0]]])  # 2 windows
    d = conformal_intervals("conformal_distribution", fc, scores, "M", level=[50])
    assert list(d) == ["M-lo-50", "M-hi-50"]
    # step 0: samples 10 ± {1, 3} = [7, 9, 11, 13]; quantiles .25/.75 (linear) = 8.5, 11.5;
    # step 1: 20 ± {2, 4} = [16, 18, 22, 24] -> 17.5, 22.5
    np.testing.assert_allclose(d["M-lo-50"][0], [8.5, 17.5])
    np.testing.assert_allclose(d["M-hi-50"][0], [11.5, 22.5])
    e = conformal_intervals("conformal_error", fc, scores, "M", level=[50])
    # the .75 quantile of the scores ({1, 3}: 2.5; {2, 4}: 3.5) on either side of ŷ
    np.testing.assert_allclose(e["M-lo-50"][0], [7.5, 16.5])
    np.testing.assert_allclose(e["M-hi-50"][0], [12.5, 23.5])


def test_formulas_are_neuralforecasts():
    utils = pytest.importorskip("neuralforecast.utils")
    rng = np.random.default_rng(1)
    n, w, h = 4, 3, 5
    fc = rng.normal(size=(n, h))
    scores = np.abs(rng.normal(size=(n, w, h)))
    cs = pd.DataFrame({"M": scores.reshape(-1)})
    for method, theirs in (("conformal_distribution", utils.add_conformal_distribution_intervals),
                           ("conformal_error", utils.add_conformal_error_intervals)):
        for kw in (dict(level=[80, 90]), dict(quantiles=[0.1, 0.5, 0.9])):
            want, cols = theirs(fc.reshape(-1, 1), cs, "M", w, n, h, **kw)
            got = conformal_intervals(method, fc, scores, "M", **kw)
            assert list(got) == cols
            for j, c in enumerate(cols):
                np.testing.assert_allclose(got[c].reshape(-1), want[:, j + 1], rtol=1e-12)


@pytest.mark.parametrize("method", ["conformal_distribution", "conformal_error"])
def test_fit_calibrates_and_predict_adds_the_columns(method):
    model = shoal.NLinear(h=6, input_size=12, max_steps=100, learning_rate=1e-2)
    nf = shoal.NeuralForecast([model], freq=1)
    nf.fit(frame(), prediction_intervals=PredictionIntervals(n_windows=3, method=method))
    p = nf.predict(level=[90, 80])
    assert list(p.columns) == ["unique_id", "ds", "NLinear", "NLinear-lo-90", "NLinear-lo-80",
                               "NLinear-hi-80", "NLinear-hi-90"]
    assert (p["NLinear-lo-90"] <= p["NLinear-lo-80"]).all()
    assert (p["NLinear-lo-80"] <= p["NLinear"]).all() and (p["NLinear"] <= p["NLinear-hi-80"]).all()
    assert (p["NLinear-hi-80"] <= p["NLinear-hi-90"]).all()
    assert (p["NLinear-hi-90"] - p["NLinear-lo-90"]).min() > 0
    np.testing.assert_array_equal(p["NLinear"], nf.predict()["NLinear"])
    q = nf.predict(quantiles=[0.1, 0.9])
    assert list(q.columns) == ["unique_id", "ds", "NLinear", "NLinear-ql0.1", "NLinear-ql0.9"]


def test_intervals_need_calibration_and_one_kind():
    nf = shoal.NeuralForecast([shoal.NLinear(h=6, input_size=12, max_steps=5)], freq=1)
    nf.fit(frame())
    with pytest.raises(AttributeError, match="prediction_intervals"):
        nf.predict(level=[80])
    nf.fit(frame(), prediction_intervals=PredictionIntervals())
    with pytest.raises(ValueError, match="both level and quantiles"):
        nf.predict(level=[80], quantiles=[0.1])
    with pytest.raises(ValueError, match="Minimum required samples"):
        nf.fit(frame(length=20), prediction_intervals=PredictionIntervals(n_windows=20))
    with pytest.raises(ValueError, match="at least two windows"):
        PredictionIntervals(n_windows=1)
