"""fit(val_df=...) as neuralforecast 3.3.0 runs it: val_df's rows are appended to each series
of df whatever their dates, the fit validates on them as on the last val_size rows (early
stopping included), and a later predict forecasts after val_df's end. With a local scaler,
val_df's rows stay in data scale (tests/golden/val_df_local_scaler.json, written by
bench/peers/val_df_scalers_golden.py)."""

import json
import pathlib

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import make_panel

H = 3
GOLDEN = json.loads((pathlib.Path(__file__).resolve().parents[1] / "golden" /
                     "val_df_local_scaler.json").read_text())


def model():
    return shoal.NLinear(h=H, input_size=6, random_seed=2, max_steps=60, val_check_steps=5,
                         early_stop_patience_steps=2)


def split(df, n_val):
    pos = df.groupby("unique_id").cumcount()
    size = df.groupby("unique_id")["y"].transform("size")
    return df[pos < size - n_val], df[pos >= size - n_val]


def test_val_df_is_val_size_on_the_appended_rows():
    df = make_panel(n_series=3, length=36)
    train, val = split(df, 6)
    a = shoal.NeuralForecast([model()], freq="ME")
    fa = a.fit(train, val_df=val).predict()
    b = shoal.NeuralForecast([model()], freq="ME")
    fb = b.fit(df, val_size=6).predict()
    pd.testing.assert_frame_equal(fa, fb)
    assert a.fit_info[0]["val_losses"] == b.fit_info[0]["val_losses"]
    assert a.fit_info[0]["val_losses"]  # validated (and stopped early or ran out)
    # forecasts follow val_df's end, as neuralforecast's last_dates do
    last = val.groupby("unique_id")["ds"].max()
    first = fa.groupby("unique_id")["ds"].min()
    assert (first == last + pd.offsets.MonthEnd(1)).all()


def test_val_df_dates_do_not_matter():
    df = make_panel(n_series=2, length=36)
    train, val = split(df, 6)
    early = val.assign(ds=val["ds"] - pd.offsets.MonthEnd(300))
    a = shoal.NeuralForecast([model()], freq="ME").fit(train, val_df=val)
    b = shoal.NeuralForecast([model()], freq="ME").fit(train, val_df=early)
    assert a.fit_info[0]["val_losses"] == b.fit_info[0]["val_losses"]
    np.testing.assert_array_equal(a.predict()["NLinear"], b.predict()["NLinear"])


def test_val_df_errors():
    df = make_panel(n_series=2, length=36)
    train, val = split(df, 6)
    nf = shoal.NeuralForecast([model()], freq="ME")
    with pytest.raises(ValueError, match="cannot be set together"):
        nf.fit(train, val_df=val, val_size=3)
    with pytest.raises(ValueError, match="equal length"):
        nf.fit(train, val_df=val.iloc[1:])
    with pytest.raises(ValueError, match="different number of groups"):
        nf.fit(train, val_df=val[val["unique_id"] == "s0"])


def golden_split():
    p = GOLDEN["panel"]
    df = pd.DataFrame({"unique_id": p["unique_id"], "ds": pd.to_datetime(p["ds"]), "y": p["y"]})
    return split(df, GOLDEN["n_val"])


@pytest.mark.parametrize("kind", ["standard", "robust"])
def test_local_scaler_leaves_val_df_unscaled_as_neuralforecast(kind):
    want = GOLDEN["cases"][kind]
    train, val = golden_split()
    m = shoal.NLinear(**GOLDEN["args"])
    nf = shoal.NeuralForecast([m], freq="ME", local_scaler_type=kind)
    fc = nf.fit(train, val_df=val).predict()
    # neuralforecast validates at step 0 too; shoal's val_losses are from the first check on
    got = np.asarray(nf.fit_info[0]["val_losses"])
    assert len(got) == len(want["val_losses"]) - 1
    np.testing.assert_allclose(got, want["val_losses"][1:], rtol=1e-6)
    # val_df's data-scale rows end predict's input windows: forecasts far off the series
    # (their df-scale inverse), as neuralforecast's are
    np.testing.assert_allclose(fc["NLinear"], want["predict"], rtol=1e-6)
    assert list(fc["ds"].dt.strftime("%Y-%m-%d")) == want["predict_ds"]
    # the statistics are df's: val_df's rows neither read nor scaled
    alone = shoal.NeuralForecast([shoal.NLinear(h=3, input_size=8, max_steps=1)], freq="ME",
                                 local_scaler_type=kind)
    alone.fit(train)
    for u in range(3):
        np.testing.assert_array_equal(nf._scalers["y"].stats[u], alone._scalers["y"].stats[u])
    scaled = nf._model_scale(nf._fit_args["series"])
    tail = nf._fit_args["series"].offsets[1:, None] - np.arange(1, GOLDEN["n_val"] + 1)
    np.testing.assert_array_equal(scaled.y[tail], nf._fit_args["series"].y[tail])


def test_a_refit_on_the_stored_series_keeps_the_statistics_and_the_unscaled_rows():
    train, val = golden_split()
    nf = shoal.NeuralForecast([shoal.NLinear(h=3, input_size=8, max_steps=5)], freq="ME",
                              local_scaler_type="minmax")
    nf.fit(train, val_df=val)
    before = nf._scalers["y"].stats.copy()
    nf.fit()  # df=None: neuralforecast trains on its stored (scaled + unscaled) dataset
    np.testing.assert_array_equal(nf._scalers["y"].stats, before)
    with pytest.raises(NotImplementedError, match="beyond the models' horizon"):
        nf.predict(h=6)  # neuralforecast extends in model scale after the unscaled rows
