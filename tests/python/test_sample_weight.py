"""neuralforecast's sample_weight column: each training and validation window's loss terms are
weighted by the mean weight of its output rows. Parity with neuralforecast's own weighted fit:
test_fit_parity.py (NLinear-weighted)."""

import numpy as np
import pandas as pd
import pytest

import shoal


def frame():
    rng = np.random.default_rng(3)
    rows = []
    for u in ("a", "b", "c"):
        t = np.arange(48)
        y = 10 + 3 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.3, 48) + (u == "c") * 20
        rows.append(pd.DataFrame({"unique_id": u, "ds": t, "y": y}))
    return pd.concat(rows, ignore_index=True)


def fit(df, val_size=0):
    m = shoal.NLinear(h=6, input_size=12, max_steps=30, learning_rate=1e-2, random_seed=1,
                      windows_batch_size=None, scaler_type="standard")
    nf = shoal.NeuralForecast(models=[m], freq=1)
    nf.fit(df, val_size=val_size)
    return nf.predict()["NLinear"].to_numpy(), nf.fit_info[0]


def test_only_relative_weights_matter_and_they_change_the_fit():
    # A window reaching past a series' end averages zeros there (neuralforecast pads the
    # weight column with 0), so unit weights are not "no weights"; a common factor cancels.
    df = frame()
    base, info = fit(df.assign(sample_weight=1.0), val_size=6)
    same, same_info = fit(df.assign(sample_weight=4.0), val_size=6)
    np.testing.assert_array_equal(same, base)
    assert same_info["val_losses"] == info["val_losses"]
    unweighted, _ = fit(df, val_size=6)
    assert np.abs(unweighted - base).max() > 1e-4
    weighted = df.assign(sample_weight=np.where(df.unique_id == "c", 5.0, 0.5))
    other, other_info = fit(weighted, val_size=6)
    assert np.abs(other - base).max() > 1e-4
    assert other_info["val_losses"] != info["val_losses"]  # validation is weighted too


def test_a_zero_weight_series_does_not_train_the_model():
    # With every window in every step, a series of weight 0 adds no loss term: the fit is the
    # fit on the other series (the forecasts of those series agree).
    df = frame()
    zero = df.assign(sample_weight=np.where(df.unique_id == "c", 0.0, 1.0))
    fc, _ = fit(zero)
    alone, _ = fit(df[df.unique_id != "c"].assign(sample_weight=1.0))
    np.testing.assert_allclose(fc[:12], alone, rtol=2e-5)


def test_bad_weights_are_refused_as_neuralforecast_refuses_them():
    df = frame()
    with pytest.raises(ValueError, match="sample_weight column contains NaN"):
        fit(df.assign(sample_weight=np.where(df.ds == 3, np.nan, 1.0)))
    with pytest.raises(ValueError, match="sample_weight column must be non-negative"):
        fit(df.assign(sample_weight=np.where(df.ds == 3, -1.0, 1.0)))


def test_val_df_rows_weigh_validation():
    df = frame()
    train, val = df[df.ds < 42], df[df.ds >= 42]
    m = dict(h=6, input_size=12, max_steps=20, random_seed=1, val_check_steps=10)

    def val_losses(tr, va):
        nf = shoal.NeuralForecast(models=[shoal.NLinear(**m)], freq=1)
        nf.fit(tr, val_df=va)
        return nf.fit_info[0]["val_losses"]

    ones = val_losses(train.assign(sample_weight=1.0), val.assign(sample_weight=1.0))
    skewed = val_losses(train.assign(sample_weight=1.0),
                        val.assign(sample_weight=np.where(val.unique_id == "c", 9.0, 1.0)))
    assert ones != skewed
    with pytest.raises(ValueError, match="both have a sample_weight column"):
        val_losses(train.assign(sample_weight=1.0), val)
