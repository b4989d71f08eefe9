"""API parity with neuralforecast 3.x on small data: column names, order, shapes and dtypes of
predict, cross_validation and make_future_dataframe (as neuralforecast 3.3 returns them:
unique_id with the input's dtype, ds with the input's dtype, one float32 column per model,
cutoff like ds, y float64, a RangeIndex)."""

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import FAST, make_panel


def test_predict_columns_shapes_dtypes(panel):
    nf = shoal.NeuralForecast(
        models=[shoal.TSMixerx(h=6, input_size=12, n_series=3, **FAST),
                shoal.TSMixer(h=6, input_size=12, n_series=3, **FAST)], freq="ME")
    nf.fit(panel)
    p = nf.predict()
    assert list(p.columns) == ["unique_id", "ds", "TSMixerx", "TSMixer"]
    assert p.shape == (18, 4)
    assert isinstance(p.index, pd.RangeIndex)
    assert p["unique_id"].dtype == panel["unique_id"].dtype
    assert p["ds"].dtype == panel["ds"].dtype
    assert p["TSMixerx"].dtype == np.float32 and p["TSMixer"].dtype == np.float32
    assert list(p["unique_id"].unique()) == ["s0", "s1", "s2"]
    # The h month ends after each series' last date.
    last = panel.groupby("unique_id")["ds"].max()
    for uid, g in p.groupby("unique_id"):
        expected = pd.date_range(last[uid], periods=7, freq="ME")[1:]
        assert (g["ds"].to_numpy() == expected.to_numpy()).all()
    assert np.isfinite(p[["TSMixerx", "TSMixer"]].to_numpy()).all()
    # A trend + season the model can follow: forecasts sit in the data's range.
    assert p["TSMixerx"].between(panel["y"].min() - 10, panel["y"].max() + 10).all()


def test_predict_is_deterministic_and_seeded(panel):
    def run(seed):
        nf = shoal.NeuralForecast([shoal.TSMixerx(h=4, input_size=12, n_series=3,
                                                  random_seed=seed, **FAST)], freq="ME")
        return nf.fit(panel).predict()["TSMixerx"].to_numpy()
    a, b, c = run(1), run(1), run(2)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_unsorted_input_gives_sorted_output(panel):
    shuffled = panel.sample(frac=1.0, random_state=3)
    m = dict(h=4, input_size=12, n_series=3, **FAST)
    a = shoal.NeuralForecast([shoal.TSMixerx(**m)], freq="ME").fit(panel).predict()
    b = shoal.NeuralForecast([shoal.TSMixerx(**m)], freq="ME").fit(shuffled).predict()
    pd.testing.assert_frame_equal(a, b)


def test_integer_ds_and_freq():
    df = make_panel(int_ds=True)
    nf = shoal.NeuralForecast([shoal.TSMixer(h=3, input_size=8, n_series=3, **FAST)], freq=1)
    p = nf.fit(df).predict()
    assert p["ds"].dtype == np.int64
    last = df.groupby("unique_id")["ds"].max()
    assert p.groupby("unique_id")["ds"].min().to_dict() == (last + 1).to_dict()


def test_cross_validation_layout(panel):
    nf = shoal.NeuralForecast([shoal.TSMixerx(h=4, input_size=12, n_series=3, **FAST)],
                              freq="ME")
    cv = nf.cross_validation(panel, n_windows=3, step_size=2)
    assert list(cv.columns) == ["unique_id", "ds", "cutoff", "TSMixerx", "y"]
    assert cv.shape == (3 * 3 * 4, 5)
    assert cv["cutoff"].dtype == panel["ds"].dtype and cv["ds"].dtype == panel["ds"].dtype
    assert cv["TSMixerx"].dtype == np.float32 and cv["y"].dtype == np.float64
    assert isinstance(cv.index, pd.RangeIndex)
    sorted_cv = cv.sort_values(["unique_id", "cutoff", "ds"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(cv, sorted_cv)
    # y is the actual value at ds; each window's cutoff is the ds before its first step.
    merged = cv.merge(panel, on=["unique_id", "ds"], suffixes=("", "_true"))
    assert np.array_equal(merged["y"].to_numpy(), merged["y_true"].to_numpy())
    for (uid, cutoff), g in cv.groupby(["unique_id", "cutoff"]):
        assert len(g) == 4
        assert g["ds"].min() == pd.date_range(cutoff, periods=2, freq="ME")[1]
    cutoffs = sorted(cv[cv["unique_id"] == "s0"]["cutoff"].unique())
    assert len(cutoffs) == 3
    # The last window ends at the series' last row.
    assert cv.groupby("unique_id")["ds"].max().equals(panel.groupby("unique_id")["ds"].max())


def test_future_exog_and_static(exog_panel):
    static = pd.DataFrame({"unique_id": ["s0", "s1", "s2"], "size": [1.0, 2.0, 3.0]})
    model = shoal.TSMixerx(h=4, input_size=12, n_series=3, futr_exog_list=["promo"],
                           hist_exog_list=["temp"], stat_exog_list=["size"], **FAST)
    nf = shoal.NeuralForecast([model], freq="ME")
    nf.fit(exog_panel, static_df=static)
    futr = nf.make_future_dataframe()
    assert list(futr.columns) == ["unique_id", "ds"] and len(futr) == 12
    futr["promo"] = 1.0
    p1 = nf.predict(futr_df=futr)
    futr["promo"] = 0.0
    p0 = nf.predict(futr_df=futr)
    assert p1.shape == (12, 3)
    assert not np.array_equal(p1["TSMixerx"].to_numpy(), p0["TSMixerx"].to_numpy())


def test_val_size_and_early_stopping(panel):
    model = shoal.TSMixerx(h=4, input_size=12, n_series=3, max_steps=30, val_check_steps=5,
                           early_stop_patience_steps=2)
    nf = shoal.NeuralForecast([model], freq="ME").fit(panel, val_size=4)
    info = nf.fit_info[0]
    assert 1 <= len(info["val_losses"]) <= 6
    assert info["steps"] <= 30


def test_per_series_mode_matches_one_model_each(panel):
    m = dict(h=4, input_size=12, n_series=1, **FAST)
    nf = shoal.NeuralForecast([shoal.TSMixerx(**m)], freq="ME", per_series=True, workers=2)
    p = nf.fit(panel).predict()
    assert list(p.columns) == ["unique_id", "ds", "TSMixerx"] and p.shape == (12, 3)
    # Each series' model equals a joint fit on that series alone (same seed).
    for uid in ["s0", "s2"]:
        one = panel[panel["unique_id"] == uid]
        q = shoal.NeuralForecast([shoal.TSMixerx(**m)], freq="ME").fit(one).predict()
        got = p[p["unique_id"] == uid]["TSMixerx"].to_numpy()
        np.testing.assert_array_equal(got, q["TSMixerx"].to_numpy())


def test_duplicate_aliases_get_suffixes(panel):
    m = dict(h=2, input_size=8, n_series=3, max_steps=2)
    nf = shoal.NeuralForecast([shoal.TSMixer(**m), shoal.TSMixer(**m),
                               shoal.TSMixerx(alias="mine", **m)], freq="ME")
    assert list(nf.fit(panel).predict().columns) == ["unique_id", "ds", "TSMixer", "TSMixer1",
                                                      "mine"]


def test_neuralforecast_defaults():
    x = shoal.TSMixerx(h=1, input_size=2, n_series=1)
    assert (x.n_block, x.ff_dim, x.dropout, x.revin, x.max_steps, x.learning_rate) == \
        (2, 64, 0.0, True, 1000, 1e-3)
    assert (x.windows_batch_size, x.scaler_type, x.random_seed, x.num_lr_decays,
            x.val_check_steps, x.early_stop_patience_steps, type(x.loss).__name__) == \
        (32, "identity", 1, -1, 100, -1, "MAE")
    assert shoal.TSMixer(h=1, input_size=2, n_series=1).dropout == 0.9
    huber = shoal.TSMixerx(h=1, input_size=2, n_series=1, loss=shoal.HuberLoss(0.5))
    assert (huber._settings()["loss"], huber._settings()["huber_delta"]) == ("huber", 0.5)


def test_sorted_float_columns_reach_the_core_without_copies(panel):
    from shoal._frames import Series
    s = Series(panel, exog=())
    assert np.shares_memory(s.y, panel["y"].to_numpy())
    shuffled = panel.iloc[::-1]
    assert not np.shares_memory(Series(shuffled).y, panel["y"].to_numpy())  # sorted copy


@pytest.mark.parametrize("multivariate", [False, True])
def test_mlps_take_every_kind_of_exogenous_input(exog_panel, multivariate):
    static = pd.DataFrame({"unique_id": ["s0", "s1", "s2"], "size": [1.0, 2.0, 3.0]})
    exog = dict(futr_exog_list=["promo"], hist_exog_list=["temp"], stat_exog_list=["size"],
                hidden_size=16, **FAST)
    if multivariate:
        model, name, n, per_series = shoal.MLPMultivariate(h=4, input_size=12, n_series=3,
                                                            **exog), "MLPMultivariate", 3, False
    else:
        model, name, n, per_series = shoal.MLP(h=4, input_size=12, **exog), "MLP", 1, True
    nf = shoal.NeuralForecast([model], freq="ME", per_series=per_series)
    nf.fit(exog_panel, static_df=static)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    p1 = nf.predict(futr_df=futr)
    futr["promo"] = 0.0
    p0 = nf.predict(futr_df=futr)
    assert p1.shape == (12, 3)
    assert not np.array_equal(p1[name].to_numpy(), p0[name].to_numpy())
    # neuralforecast's first layer: [y (L), hist (L·X), futr ((L+H)·F), stat (S)] per series.
    sd = model.state_dict(None if multivariate else "s0")
    assert sd["mlp.0.weight"].shape == (16, n * (12 + 12 + 16 + 1))
    assert sd["out.weight"].shape == (4 * n, 16)


def test_polars_frames_in_and_out():
    pl = pytest.importorskip("polars")
    t = pd.date_range("2000-01-31", periods=40, freq="ME")
    pdf = pd.DataFrame({"unique_id": np.repeat(["a", "b"], 40), "ds": np.tile(t, 2),
                        "y": np.sin(np.arange(80) / 3.0)})
    model = dict(h=4, input_size=8, max_steps=20)
    got = shoal.NeuralForecast([shoal.NLinear(**model)], freq="1mo").fit(
        pl.from_pandas(pdf)).predict()
    want = shoal.NeuralForecast([shoal.NLinear(**model)], freq="ME").fit(pdf).predict()
    assert isinstance(got, pl.DataFrame)
    assert got.columns == ["unique_id", "ds", "NLinear"]
    # Month ends stay month ends, as neuralforecast's polars offsets keep them.
    assert got["ds"].to_list()[:2] == [pd.Timestamp("2003-05-31"), pd.Timestamp("2003-06-30")]
    np.testing.assert_array_equal(got["NLinear"].to_numpy(), want["NLinear"].to_numpy())
    nf = shoal.NeuralForecast([shoal.NLinear(**model)], freq="1mo")
    cv = nf.cross_validation(pl.from_pandas(pdf), n_windows=2, step_size=4)
    assert isinstance(cv, pl.DataFrame) and cv.columns[-1] == "y" and cv.height == 16
    fut = nf.make_future_dataframe(pl.from_pandas(pdf))
    assert isinstance(fut, pl.DataFrame) and fut.height == 8
    assert nf.get_missing_future(fut).height == 0
