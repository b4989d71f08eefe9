"""neuralforecast's available_mask column: y rows marked 0 are missing (y may be NaN there).
shoal reads them as it reads left padding (y 0, mask 0): windows need an observed insample and
horizon point, the window scaler, the local scalers and the loss skip them. So what a missing
row holds cannot change a fit, and a missing leading stretch is the same as a shorter series."""

import base64
import json
import pathlib

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import make_panel

H, L = 6, 12
MISSING = {"s0": [20, 21, 33], "s1": [5, 30, 31, 32], "s2": [40]}  # rows within each series


def masked(df, fill):
    """df with available_mask, and y replaced by `fill` on the MISSING rows."""
    df = df.copy()
    pos = df.groupby("unique_id").cumcount().to_numpy()
    miss = np.zeros(len(df), bool)
    for uid, rows in MISSING.items():
        miss |= (df["unique_id"].to_numpy() == uid) & np.isin(pos, rows)
    df["available_mask"] = (~miss).astype(float)
    df.loc[miss, "y"] = fill
    return df


def forecaster(kind, **kw):
    args = dict(h=H, input_size=L, max_steps=30, random_seed=1, scaler_type="standard")
    if kind == "global":
        return shoal.NeuralForecast([shoal.NLinear(**args)], freq="ME", workers=1, **kw)
    if kind == "joint":
        return shoal.NeuralForecast([shoal.TSMixerx(n_series=3, **args)], freq="ME", workers=1,
                                    **kw)
    return shoal.NeuralForecast([shoal.NLinear(**args)], freq="ME", per_series=True,
                                workers=1, **kw)


KINDS = ["global", "joint", "per_series"]


def values(frame):
    return frame.drop(columns=["unique_id", "ds", "cutoff", "y"], errors="ignore").to_numpy()


@pytest.mark.parametrize("kind", KINDS)
def test_missing_values_are_ignored(kind):
    df = make_panel()
    with_nan = masked(df, np.nan)
    with_big = masked(df, 1e6)
    a = forecaster(kind).fit(with_nan)
    b = forecaster(kind).fit(with_big)
    pa, pb = a.predict(), b.predict()
    assert np.isfinite(values(pa)).all()
    np.testing.assert_array_equal(values(pa), values(pb))
    # The mask is what hides them: the same values read as observed change the forecasts.
    unmasked = forecaster(kind).fit(with_big.drop(columns="available_mask")).predict()
    assert not np.allclose(values(unmasked), values(pb))
    # predict(df) reads df's mask as fit did.
    np.testing.assert_array_equal(values(a.predict(df=with_nan)), values(pa))


@pytest.mark.parametrize("kind", KINDS)
def test_cross_validation_ignores_missing_values(kind):
    df = make_panel()
    ca = forecaster(kind).cross_validation(masked(df, np.nan), n_windows=2, step_size=H)
    cb = forecaster(kind).cross_validation(masked(df, -7.5), n_windows=2, step_size=H)
    assert np.isfinite(values(ca)).all()
    np.testing.assert_array_equal(values(ca), values(cb))
    assert ca["y"].isna().sum() == 1  # s2's row 40 lies in the test windows, NaN as in df


@pytest.mark.parametrize("kind", ["global", "per_series"])
def test_predict_insample_ignores_missing_values(kind):
    df = make_panel()
    a = forecaster(kind).fit(masked(df, np.nan))
    b = forecaster(kind).fit(masked(df, 3.0))
    ia, ib = a.predict_insample(step_size=H), b.predict_insample(step_size=H)
    assert np.isfinite(ia["NLinear"]).all()
    np.testing.assert_array_equal(ia["NLinear"].to_numpy(), ib["NLinear"].to_numpy())
    assert ia["y"].isna().any() and not ib["y"].isna().any()


@pytest.mark.parametrize("kind", ["global", "joint"])
@pytest.mark.parametrize("local", [None, "standard"])
def test_missing_leading_rows_equal_a_shorter_series(kind, local):
    # Padding and missing rows share the mask: windows filtering, the window scaler and the
    # local scalers must treat a masked start exactly like a series that starts later and is
    # left-padded to the panel's longest (s0). (A per-series fit has no padding: there the
    # windows that reach into a masked start exist, as in neuralforecast.)
    df = make_panel()
    pos = df.groupby("unique_id").cumcount().to_numpy()
    lead = (df["unique_id"].to_numpy() != "s0") & (pos < 9)
    mask_df = df.assign(available_mask=(~lead).astype(float))
    mask_df.loc[lead, "y"] = np.nan
    short = df[~lead].reset_index(drop=True)
    a = forecaster(kind, local_scaler_type=local).fit(mask_df).predict()
    b = forecaster(kind, local_scaler_type=local).fit(short).predict()
    np.testing.assert_allclose(values(a), values(b), rtol=1e-5, atol=1e-5)


def test_nan_on_an_observed_row_still_raises():
    df = masked(make_panel(), np.nan)
    df.loc[3, "y"] = np.nan  # s0's row 3, marked observed
    with pytest.raises(ValueError, match=r"column 'y' has NaN at row 3"):
        forecaster("global").fit(df)


def test_missing_exogenous_values_on_missing_rows_are_allowed():
    df = masked(make_panel(exog=True), np.nan)
    miss = df["available_mask"].to_numpy() == 0
    df.loc[miss, "temp"] = np.nan
    nf = shoal.NeuralForecast([shoal.MLP(h=H, input_size=L, max_steps=10,
                                          hist_exog_list=["temp"])], freq="ME", workers=1)
    assert np.isfinite(values(nf.fit(df).predict())).all()
    df.loc[int(np.flatnonzero(~miss)[0]), "temp"] = np.nan
    with pytest.raises(ValueError, match="column 'temp' has NaN"):
        nf.fit(df)


def test_save_load_keeps_the_mask(tmp_path):
    nf = forecaster("global").fit(masked(make_panel(), np.nan))
    nf.save(str(tmp_path / "m"))
    again = shoal.NeuralForecast.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(values(again.predict()), values(nf.predict()))


def test_val_df_without_the_column_counts_as_observed(tmp_path):
    full = make_panel()
    df = masked(full, np.nan)
    pos = df.groupby("unique_id").cumcount(ascending=False).to_numpy()
    train, val = df[pos >= H], full[pos < H]
    nf = forecaster("global").fit(train, val_df=val)
    fc = nf.predict()
    assert np.isfinite(values(fc)).all()
    nf.save(str(tmp_path / "m"))
    again = shoal.NeuralForecast.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(values(again.predict()), values(fc))


GOLDEN = json.loads((pathlib.Path(__file__).resolve().parents[1] / "golden" /
                     "available_mask.json").read_text())


def test_matches_neuralforecast(tmp_path):
    # bench/peers/mask_golden.py: neuralforecast's trained NLinear on a masked panel (y 0 on
    # the missing rows there, NaN here); its window scaler skips the missing rows.
    p = GOLDEN["panel"]
    mask = np.asarray(p["available_mask"])
    df = pd.DataFrame({"unique_id": p["unique_id"], "ds": pd.to_datetime(p["ds"]),
                       "y": np.where(mask == 1, p["y"], np.nan), "available_mask": mask})
    model = shoal.NLinear(**GOLDEN["model"], max_steps=1)
    nf = shoal.NeuralForecast([model], freq="ME").fit(df)
    path = tmp_path / "w.safetensors"
    path.write_bytes(base64.b64decode(GOLDEN["weights"]))
    model.load_weights(str(path))
    np.testing.assert_allclose(nf.predict()["NLinear"], GOLDEN["predict"], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(nf.predict_insample(step_size=1)["NLinear"], GOLDEN["insample"],
                               rtol=2e-5, atol=2e-5)
