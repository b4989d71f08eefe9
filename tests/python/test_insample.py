"""predict_insample against neuralforecast 3.3.0 (tests/golden/insample.json, written by
bench/peers/insample_golden.py): neuralforecast's trained NLinear weights loaded into shoal give
its frame (rows, ds, cutoff, y) and its forecasts, after a fit and after a cross_validation."""

import base64
import json
import pathlib

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import FAST, make_panel

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parents[1] / "golden" /
                     "insample.json").read_text())


def golden_panel():
    p = GOLDEN["panel"]
    return pd.DataFrame({"unique_id": p["unique_id"], "ds": pd.to_datetime(p["ds"]),
                         "y": p["y"]})


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['how']}-{c['step_size']}")
def test_matches_neuralforecast(case, tmp_path):
    df = golden_panel()
    model = shoal.NLinear(**GOLDEN["model"], max_steps=1)
    nf = shoal.NeuralForecast([model], freq="ME")
    if case["how"] == "fit":
        nf.fit(df)
    else:
        nf.cross_validation(df, n_windows=2, step_size=2)
    path = tmp_path / "w.safetensors"
    path.write_bytes(base64.b64decode(case["weights"]))
    model.load_weights(str(path))
    got = nf.predict_insample(step_size=case["step_size"])
    want = case["frame"]
    assert list(got.columns) == want["columns"]
    assert got["unique_id"].tolist() == want["unique_id"]
    assert got["ds"].dt.strftime("%Y-%m-%d").tolist() == want["ds"]
    assert got["cutoff"].dt.strftime("%Y-%m-%d").tolist() == want["cutoff"]
    assert got["y"].dtype == np.float32  # neuralforecast's dataset is float32
    np.testing.assert_array_equal(got["y"], np.float32(want["y"]))
    assert got["NLinear"].dtype == np.float32
    np.testing.assert_allclose(got["NLinear"], want["NLinear"], rtol=2e-5, atol=2e-5)


def test_per_series_fit_has_the_global_layout():
    df = make_panel(n_series=2, length=20)
    kw = dict(h=3, input_size=4, **FAST)
    glob = shoal.NeuralForecast([shoal.NLinear(**kw)], freq="ME").fit(df)
    per = shoal.NeuralForecast([shoal.NLinear(**kw)], freq="ME", per_series=True).fit(df)
    a, b = glob.predict_insample(step_size=2), per.predict_insample(step_size=2)
    pd.testing.assert_frame_equal(a.drop(columns="NLinear"), b.drop(columns="NLinear"))
    assert np.isfinite(b["NLinear"]).all()
    # the per-series models are the ones each series was fitted with
    assert not np.allclose(a["NLinear"], b["NLinear"])


def test_integer_ds_and_cutoff_one_step_before_the_window():
    df = make_panel(n_series=2, length=15, int_ds=True)
    nf = shoal.NeuralForecast([shoal.NLinear(h=2, input_size=3, **FAST)], freq=1).fit(df)
    out = nf.predict_insample(step_size=1)
    first = out.groupby(["unique_id", "cutoff"])["ds"].min()
    assert (first.index.get_level_values("cutoff") == first.to_numpy() - 1).all()
    assert len(out) == 2 * ((15 - 2 + 1) + (12 - 2 + 1))


def test_refusals():
    df = make_panel(n_series=2, length=20)
    nf = shoal.NeuralForecast([shoal.NLinear(h=3, input_size=4, **FAST)], freq="ME")
    with pytest.raises(Exception, match="must be fitted"):
        nf.predict_insample()
    nf.fit(df)
    with pytest.raises(ValueError, match="step_size"):
        nf.predict_insample(step_size=0)
    joint = shoal.NeuralForecast([shoal.TSMixer(h=3, input_size=4, n_series=2, **FAST)],
                                 freq="ME").fit(df)
    with pytest.raises(NotImplementedError, match="multivariate"):
        joint.predict_insample()
