"""NHITS, NBEATS, NBEATSx and TiDE from Python: global and per-series fits that learn a
seasonal trend, exogenous inputs where neuralforecast takes them, and neuralforecast's
state_dict names. Parity of the models themselves with neuralforecast is in the C++ golden
tests (tests/models/*_golden_test.cpp)."""

import numpy as np
import pandas as pd
import pytest

import shoal

SMALL = {
    "NHITS": dict(mlp_units=[[32, 32]] * 3),
    "NBEATS": dict(mlp_units=[[32, 32]] * 3),
    "NBEATSx": dict(mlp_units=[[32, 32]] * 3),
    "TiDE": dict(hidden_size=32, decoder_output_dim=4, temporal_decoder_dim=16, dropout=0.0),
}
FIRST_WEIGHT = {"NHITS": "blocks.0.layers.0.weight", "NBEATS": "blocks.0.layers.0.weight",
                "NBEATSx": "blocks.0.layers.0.weight", "TiDE": "dense_encoder.0.lin1.weight"}


def frame(n=3, length=72, exog=False):
    t = np.arange(length)
    ids = [f"s{i}" for i in range(n)]
    y = np.concatenate([5.0 * i + 0.2 * t + 2.0 * np.sin(2 * np.pi * t / 6) for i in range(n)])
    df = pd.DataFrame({"unique_id": np.repeat(ids, length), "ds": np.tile(t, n), "y": y})
    if exog:
        rng = np.random.default_rng(0)
        df["promo"] = rng.integers(0, 2, len(df)).astype(float)
        df["y"] += 3.0 * df["promo"]
    return df


def truth(n, start, h):
    t = np.arange(start, start + h)
    return np.concatenate([5.0 * i + 0.2 * t + 2.0 * np.sin(2 * np.pi * t / 6)
                           for i in range(n)])


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("per_series", [False, True])
def test_learns_a_seasonal_trend(name, per_series):
    cls = getattr(shoal, name)
    model = cls(h=6, input_size=18, max_steps=150, scaler_type="standard", random_seed=2,
                windows_batch_size=64, **SMALL[name])
    nf = shoal.NeuralForecast([model], freq=1, per_series=per_series, workers=1)
    fcst = nf.fit(frame()).predict()
    assert list(fcst.columns) == ["unique_id", "ds", name]
    err = np.abs(fcst[name].to_numpy() - truth(3, 72, 6)).mean()
    assert err < 1.0, (name, per_series, err)
    assert (model._weights is None) == per_series  # one global model unless per_series
    sd = model.state_dict("s0" if per_series else None)
    assert FIRST_WEIGHT[name] in sd


# TiDE's temporal decoder ends in a LayerNorm over its single output when layernorm=True (its
# default), which makes that whole path a constant: its forecast is then the linear skip from
# y plus a bias, and exogenous inputs have no effect, in neuralforecast as in shoal.
@pytest.mark.parametrize("name,extra", [("NHITS", {}), ("NBEATSx", {}),
                                        ("TiDE", dict(layernorm=False))])
def test_future_exogenous_inputs_change_the_forecast(name, extra):
    cls = getattr(shoal, name)
    model = cls(h=6, input_size=18, max_steps=100, futr_exog_list=["promo"],
                windows_batch_size=64, scaler_type="standard", **SMALL[name], **extra)
    df = frame(exog=True)
    nf = shoal.NeuralForecast([model], freq=1).fit(df)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    p1 = nf.predict(futr_df=futr)[name].to_numpy()
    futr["promo"] = 0.0
    p0 = nf.predict(futr_df=futr)[name].to_numpy()
    assert np.mean(p1 - p0) > 0.5, (name, np.mean(p1 - p0))  # it learnt the +3 promo effect


def test_tide_with_layernorm_ignores_exogenous_inputs_as_neuralforecast_does():
    model = shoal.TiDE(h=6, input_size=18, max_steps=30, futr_exog_list=["promo"],
                       windows_batch_size=64, **SMALL["TiDE"])
    nf = shoal.NeuralForecast([model], freq=1).fit(frame(exog=True))
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    p1 = nf.predict(futr_df=futr)["TiDE"].to_numpy()
    futr["promo"] = 0.0
    np.testing.assert_array_equal(p1, nf.predict(futr_df=futr)["TiDE"].to_numpy())


def test_nbeats_takes_no_exogenous_inputs():
    assert "futr_exog_list" not in shoal.NBEATS.__signature__.parameters
    with pytest.raises(ValueError, match="does not support future exogenous"):
        shoal.NBEATS(h=4, input_size=8, futr_exog_list=["x"])


def test_an_activation_the_blocks_lack_is_refused_at_fit():
    model = shoal.NHITS(h=4, input_size=8, activation="GELU", max_steps=1)
    with pytest.raises(ValueError, match="activation"):
        shoal.NeuralForecast([model], freq=1).fit(frame())


def test_several_stacked_models_in_one_call():
    models = [getattr(shoal, n)(h=6, input_size=18, max_steps=20, windows_batch_size=32,
                                **SMALL[n]) for n in sorted(SMALL)]
    cv = shoal.NeuralForecast(models, freq=1).cross_validation(frame(), n_windows=2,
                                                               step_size=6)
    assert list(cv.columns) == ["unique_id", "ds", "cutoff"] + sorted(SMALL) + ["y"]
    assert np.isfinite(cv[sorted(SMALL)].to_numpy()).all()
