"""iTransformer through the Python API: neuralforecast's defaults and names, a joint fit of a
panel with future exogenous inputs, the settings shoal refuses by name, and AutoiTransformer's
space. (Its numbers against neuralforecast's: the C++ goldens of bench/peers/forecast_golden.py.)"""

import numpy as np
import pandas as pd
import pytest

import shoal


def _df(n_series=3, length=50):
    t = np.arange(length)
    rows = []
    for k in range(n_series):
        rows.append(pd.DataFrame({"unique_id": f"s{k}", "ds": t,
                                  "y": 10 + 0.2 * t + 3 * np.sin(2 * np.pi * t / 12) + k,
                                  "promo": (t % 4 == 0).astype(float),
                                  "temp": np.cos(t / 3.0 + k)}))
    return pd.concat(rows, ignore_index=True)


def test_defaults_are_neuralforecasts():
    model = shoal.iTransformer(h=4, input_size=12, n_series=3)
    assert model.hidden_size == 512 and model.n_heads == 8 and model.e_layers == 2
    assert model.d_layers == 1 and model.d_ff == 2048 and model.factor == 1
    assert model.dropout == 0.1 and model.use_norm is True
    assert model.max_steps == 1000 and model.learning_rate == 1e-3
    assert model.windows_batch_size == 32 and model.scaler_type == "identity"


@pytest.mark.parametrize("use_norm", [True, False])
def test_fits_a_panel_jointly_with_future_exogenous_and_names_its_weights(use_norm):
    df = _df()
    model = shoal.iTransformer(h=4, input_size=10, n_series=3, max_steps=20, hidden_size=8,
                               n_heads=2, e_layers=2, d_ff=16, use_norm=use_norm,
                               futr_exog_list=["promo"])
    nf = shoal.NeuralForecast([model], freq=1).fit(df)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    fcst = nf.predict(futr_df=futr)
    assert len(fcst) == 12 and np.isfinite(fcst["iTransformer"]).all()
    sd = model.state_dict()
    assert sd["enc_embedding.value_embedding.weight"].shape == (8, 10)
    assert sd["futr_embedding.weight"].shape == (8, 14)
    assert sd["encoder.attn_layers.1.attention.query_projection.weight"].shape == (8, 8)
    assert sd["encoder.attn_layers.0.conv1.weight"].shape == (16, 8, 1)  # torch's Conv1d shape
    assert sd["encoder.norm.weight"].shape == (8,)
    assert sd["projector.weight"].shape == (4, 8)


def test_historical_and_static_exogenous_are_refused_as_neuralforecast_does():
    with pytest.raises(ValueError, match="historical exogenous"):
        shoal.iTransformer(h=4, input_size=8, n_series=3, hist_exog_list=["temp"])


@pytest.mark.parametrize("args", [dict(hidden_size=4, n_heads=8), dict(dropout=1.0),
                                  dict(e_layers=-1)])
def test_unsupported_settings_fail_naming_the_argument(args):
    with pytest.raises(ValueError, match=list(args)[0]):
        shoal.NeuralForecast([shoal.iTransformer(h=4, input_size=8, n_series=3, max_steps=2,
                                                 **args)], freq=1).fit(_df())


def test_auto_itransformer_has_neuralforecasts_space():
    space = shoal.auto.AutoiTransformer.get_default_config(h=4, backend="ray", n_series=3)
    assert space["n_series"] == 3
    assert sorted(space["hidden_size"].categories) == [64, 128, 256]
    assert sorted(space["n_heads"].categories) == [4, 8]
    assert sorted(space["max_steps"].categories) == [500, 1000, 2000]
    assert sorted(space["input_size"].categories) == [4, 8, 12, 16, 20]
    assert sorted(space["step_size"].categories) == [1, 4]
