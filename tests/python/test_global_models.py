"""Univariate models trained globally next to multivariate ones: NeuralForecast fits each model
(NLinear over every series, TSMixerx jointly) and returns one frame with a column per model in
predict and cross_validation, as neuralforecast does."""

import numpy as np
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
