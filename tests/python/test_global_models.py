"""Univariate models trained globally next to multivariate ones: NeuralForecast fits each model
(NLinear over every series, TSMixerx jointly) and returns one frame with a column per model in
predict and cross_validation, as neuralforecast does."""

import numpy as np
import pytest
import pandas as pd

import shoal


def frame(n=3, length=48):
    t = np.arange(length)
    ids = [f"s{i}" for i in range(n)]
    y = np.concatenate([10.0 * i + 0.3 * t + 2.0 * np.sin(2 * np.pi * t / 6) for i in range(n)])
    return pd.DataFrame({"unique_id": np.repeat(ids, length), "ds": np.tile(t, n), "y": y})


def models(n):
    return [shoal.NLinear(h=6, input_size=12, max_steps=60, learning_rate=1e-2),
            shoal.TSMixerx(h=6, input_size=12, n_series=n, max_steps=20),
            shoal.NLinear(h=6, input_size=12, max_steps=30, alias="NLinearShort")]


def test_predict_has_one_column_per_model():
    df = frame()
    nf = shoal.NeuralForecast(models(3), freq=1).fit(df)
    fcst = nf.predict()
    assert list(fcst.columns) == ["unique_id", "ds", "NLinear", "TSMixerx", "NLinearShort"]
    assert len(fcst) == 3 * 6
    assert fcst["NLinear"].dtype == np.float32
    assert np.isfinite(fcst[["NLinear", "TSMixerx", "NLinearShort"]].to_numpy()).all()
    # One global NLinear: a single weight blob for every series.
    assert nf.models[0]._weights is not None and nf.models[0]._series_weights is None
    assert len(nf.fit_info) == 3


def test_cross_validation_has_one_column_per_model():
    df = frame()
    cv = shoal.NeuralForecast(models(3), freq=1).cross_validation(df, n_windows=2, step_size=6)
    assert list(cv.columns) == ["unique_id", "ds", "cutoff", "NLinear", "TSMixerx",
                                "NLinearShort", "y"]
    assert len(cv) == 3 * 2 * 6
    err = np.abs(cv["NLinear"] - cv["y"]).mean()
    assert err < 3.0, err


def test_global_fit_options_reach_cpp():
    df = frame(n=5)
    a = shoal.NLinear(h=6, input_size=12, max_steps=40, learning_rate=1e-2, batch_size=2,
                      random_seed=3)
    b = shoal.NLinear(h=6, input_size=12, max_steps=40, learning_rate=1e-2, batch_size=5,
                      random_seed=3)
    fa = shoal.NeuralForecast([a], freq=1, workers=1).fit(df).predict()
    fb = shoal.NeuralForecast([b], freq=1, workers=1).fit(df).predict()
    assert not np.array_equal(fa["NLinear"].to_numpy(), fb["NLinear"].to_numpy())
    again = shoal.NLinear(h=6, input_size=12, max_steps=40, learning_rate=1e-2, batch_size=2,
                          random_seed=3)
    fc = shoal.NeuralForecast([again], freq=1, workers=1).fit(df).predict()
    assert np.array_equal(fa["NLinear"].to_numpy(), fc["NLinear"].to_numpy())


def test_windows_batch_size_none_trains_on_every_window():
    # neuralforecast's windows_batch_size=None: each step takes every window of its series. One
    # series of 48 steps, input_size 12, h 6 has 48 - 12 = 36 windows (the last ones' horizons
    # run into the padding with at least one real point), so a draw of 36 without replacement
    # is the same set, in another order; a draw of 8 is not.
    df = frame(n=1)

    def fit(wbs):
        m = shoal.NLinear(h=6, input_size=12, max_steps=30, learning_rate=1e-2,
                          windows_batch_size=wbs, random_seed=2)
        return shoal.NeuralForecast([m], freq=1).fit(df).predict()["NLinear"].to_numpy()

    def rel(a, b):
        return float(np.max(np.abs(a - b) / np.abs(b)))

    every = fit(None)
    # Summation order alone moves a forecast by a few 1e-4 here (Adam's first steps take the
    # sign of near-zero gradients); another draw, such as the default's 1,024 with
    # replacement, moves it by several 1e-3.
    assert rel(every, fit(36)) < 1e-3
    assert rel(every, fit(1024)) > 3e-3
    assert rel(every, fit(8)) > 3e-2


def test_none_for_a_numeric_option_is_refused():
    with pytest.raises(ValueError, match="learning_rate=None"):
        shoal.NLinear(h=6, input_size=12, learning_rate=None)
