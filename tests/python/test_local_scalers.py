"""NeuralForecast(local_scaler_type=...) against coreforecast 0.0.20 and neuralforecast 3.3.0
(tests/golden/local_scalers.json, written by bench/peers/scalers_golden.py): the statistics
and transforms of every scaler type on float32 series, and a neuralforecast NLinear's weights
fitted with local_scaler_type="robust" forecasting the same through shoal."""

import base64
import json
import pathlib

import numpy as np
import pandas as pd
import pytest

import shoal
from shoal import _scalers
from conftest import FAST, make_panel

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parents[1] / "golden" /
                     "local_scalers.json").read_text())


@pytest.mark.parametrize("kind", _scalers.TYPES)
def test_statistics_and_transforms_match_coreforecast(kind):
    g = GOLDEN["scalers"]
    x, off = np.float32(g["x"]), np.asarray(g["offsets"])
    want = g["kinds"][kind]
    sc = _scalers.LocalScaler(kind, x, off)
    lengths = np.diff(off)
    if kind == "boxcox":  # the lambda within Brent's tolerance, eps32^(1/4)
        np.testing.assert_allclose(sc.stats, np.float32(want["stats"]), atol=0.0186)
        ok = np.isfinite(want["stats"]).all(axis=1)
        t = sc.transform(x, lengths)
        rows = np.repeat(ok, lengths)
        np.testing.assert_allclose(t[rows], np.float32(want["transform"])[rows], rtol=0.1)
        np.testing.assert_allclose(sc.inverse(t, lengths)[rows], x[rows], rtol=1e-5)
        return
    np.testing.assert_array_equal(sc.stats, np.float32(want["stats"]))
    t = sc.transform(x, lengths)
    np.testing.assert_array_equal(t, np.float32(want["transform"]))
    np.testing.assert_array_equal(sc.inverse(t, lengths), np.float32(want["inverse"]))


def golden_panel():
    p = GOLDEN["nf"]["panel"]
    return pd.DataFrame({"unique_id": p["unique_id"], "ds": pd.to_datetime(p["ds"]),
                         "y": p["y"]})


def loaded(tmp_path, key):
    model = shoal.NLinear(h=3, input_size=6, max_steps=1)
    nf = shoal.NeuralForecast([model], freq="ME", local_scaler_type="robust")
    return nf, model, tmp_path / f"{key}.safetensors"


def test_neuralforecast_weights_forecast_the_same(tmp_path):
    nf, model, path = loaded(tmp_path, "fit")
    nf.fit(golden_panel())
    path.write_bytes(base64.b64decode(GOLDEN["nf"]["weights"]))
    model.load_weights(str(path))
    np.testing.assert_allclose(nf.predict()["NLinear"], GOLDEN["nf"]["predict"], rtol=2e-5)
    cv, model, path = loaded(tmp_path, "cv")
    # scalers on all of df; the test windows predicted from the loaded weights
    cv.fit(golden_panel())
    path.write_bytes(base64.b64decode(GOLDEN["nf"]["cv_weights"]))
    model.load_weights(str(path))
    fc = cv._predict_models(cv._fit_args["series"], None, None, 0, 2, 2, 0, 5)["NLinear"]
    np.testing.assert_allclose(fc.reshape(-1), GOLDEN["nf"]["cv"], rtol=2e-5)


def test_scaling_changes_the_fit_and_forecasts_stay_in_data_scale():
    df = make_panel(n_series=2, length=30)
    df.loc[df["unique_id"] == "s1", "y"] *= 100
    plain = shoal.NeuralForecast([shoal.NLinear(h=3, input_size=6, **FAST)], freq="ME")
    scaled = shoal.NeuralForecast([shoal.NLinear(h=3, input_size=6, **FAST)], freq="ME",
                                  local_scaler_type="standard")
    a, b = plain.fit(df).predict(), scaled.fit(df).predict()
    assert not np.allclose(a["NLinear"], b["NLinear"])
    last = df.groupby("unique_id")["y"].last().to_numpy()
    assert np.allclose(b.groupby("unique_id")["NLinear"].mean().to_numpy(), last, rtol=0.3)
    cv = scaled.cross_validation(df, n_windows=1)
    np.testing.assert_allclose(cv["y"], df.groupby("unique_id").tail(3)["y"].to_numpy())
    ins = scaled.predict_insample()
    ref = df.set_index(["unique_id", "ds"])["y"]
    np.testing.assert_allclose(ins["y"], ref.loc[list(zip(ins["unique_id"], ins["ds"]))],
                               rtol=1e-5)


def test_refusals():
    with pytest.raises(ValueError, match="scaler_type must be one of"):
        shoal.NeuralForecast([shoal.NLinear(h=3, input_size=6)], freq="ME",
                             local_scaler_type="zscore")
    df = make_panel(n_series=2, length=30)
    df["y"] -= 100
    nf = shoal.NeuralForecast([shoal.NLinear(h=3, input_size=6, **FAST)], freq="ME",
                              local_scaler_type="boxcox")
    with pytest.raises(ValueError, match="positive"):
        nf.fit(df)


def test_static_scaler_scales_the_statics_over_all_series():
    df = make_panel(n_series=3, length=30)
    static = pd.DataFrame({"unique_id": ["s0", "s1", "s2"], "size": [1.0, 50.0, 400.0]})

    def fit(**kw):
        m = shoal.NBEATSx(h=3, input_size=6, stat_exog_list=["size"], random_seed=3, **FAST)
        return shoal.NeuralForecast([m], freq="ME", **kw).fit(df, static_df=static).predict()

    a, b = fit(), fit(local_static_scaler_type="minmax")
    assert not np.allclose(a["NBEATSx"], b["NBEATSx"])
    # minmax of [1, 50, 400] over the series is [0, 49 / 399, 1]: the same statics given
    # already scaled fit exactly as the scaled run
    static["size"] = np.float32([0.0, 49 / 399, 1.0])
    np.testing.assert_array_equal(fit()["NBEATSx"], b["NBEATSx"])
