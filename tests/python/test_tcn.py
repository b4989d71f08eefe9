"""TCN through the Python API: neuralforecast's defaults and names, a global fit with every
exogenous kind, the context adapter along time, and the settings shoal refuses by name.
(Its forecasts against neuralforecast's from the same weights:
bench/peers/shoal_weights_to_nf.py TCN, with the peers installed.)"""

import warnings

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
    static = pd.DataFrame({"unique_id": [f"s{k}" for k in range(n_series)],
                           "size": np.arange(1.0, n_series + 1)})
    return pd.concat(rows, ignore_index=True), static


def test_defaults_are_neuralforecasts():
    with pytest.warns(UserWarning, match="3 \\* horizon"):
        model = shoal.TCN(h=4)
    assert model.input_size == 12 and model.scaler_type == "robust"
    assert model.kernel_size == 2 and model.dilations == [1, 2, 4, 8, 16]
    assert model.encoder_hidden_size == 128 and model.encoder_activation == "ReLU"
    assert model.windows_batch_size == 128 and model.learning_rate == 1e-3


def test_fits_globally_with_exogenous_and_names_its_weights():
    df, static = _df()
    model = shoal.TCN(h=4, input_size=12, max_steps=20, encoder_hidden_size=8,
                      decoder_hidden_size=8, dilations=[1, 2, 4], kernel_size=3,
                      futr_exog_list=["promo"], hist_exog_list=["temp"],
                      stat_exog_list=["size"])
    nf = shoal.NeuralForecast([model], freq=1).fit(df, static_df=static)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    fcst = nf.predict(futr_df=futr)
    assert len(fcst) == 12 and np.isfinite(fcst["TCN"]).all()
    sd = model.state_dict()
    # [y | hist | stat | futr] per step into the first convolution, torch's [O, I, K].
    assert sd["hist_encoder.tcn.0.conv.weight"].shape == (8, 4, 3)
    assert sd["hist_encoder.tcn.2.conv.weight"].shape == (8, 8, 3)
    assert sd["context_adapter.weight"].shape == (4, 12)
    assert sd["mlp_decoder.layers.0.weight"].shape == (8, 9)  # encoder channels + futr
    assert sd["mlp_decoder.layers.3.bias"].shape == (1,)


def test_tanh_encoder_and_one_decoder_layer():
    df, _ = _df()
    model = shoal.TCN(h=6, input_size=8, max_steps=10, encoder_hidden_size=4,
                      encoder_activation="Tanh", decoder_layers=1)
    fcst = shoal.NeuralForecast([model], freq=1).fit(df).predict()
    assert np.isfinite(fcst["TCN"]).all()
    assert model.state_dict()["mlp_decoder.layers.0.weight"].shape == (1, 4)


def test_context_size_is_stored_without_effect_or_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shoal.TCN(h=4, input_size=8, context_size=50)


@pytest.mark.parametrize("arg,value", [("encoder_activation", "PReLU"), ("kernel_size", 1),
                                       ("dilations", [])])
def test_unsupported_settings_fail_naming_the_argument(arg, value):
    df, _ = _df()
    with pytest.raises(ValueError, match=arg):
        shoal.NeuralForecast([shoal.TCN(h=4, input_size=8, max_steps=2, **{arg: value})],
                             freq=1).fit(df)


def test_auto_tcn_has_neuralforecasts_space():
    space = shoal.auto.AutoTCN.get_default_config(h=4, backend="ray")
    assert shoal.auto.AutoTCN.default_config["input_size_multiplier"] == [-1, 4, 16, 64]
    assert sorted(space["encoder_hidden_size"].categories) == [16, 32, 64, 128]
    assert sorted(space["decoder_hidden_size"].categories) == [32, 64]
    assert "step_size" not in space and "context_size" not in space
