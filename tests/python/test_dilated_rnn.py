"""DilatedRNN through the Python API: neuralforecast's defaults and names, a global fit with every
exogenous kind, its nested dilations sent as the C++ option's JSON text, and the settings shoal
refuses by name. (Its forecasts against neuralforecast's from the same weights:
bench/peers/shoal_weights_to_nf.py DilatedRNN, with the peers installed.)"""

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
        model = shoal.DilatedRNN(h=4)
    assert model.input_size == 12 and model.scaler_type == "robust"
    assert model.cell_type == "LSTM" and model.dilations == [[1, 2], [4, 8]]
    assert model.num_lr_decays == 3 and model.windows_batch_size == 128
    assert model._settings()["dilations"] == "[[1,2],[4,8]]"


@pytest.mark.parametrize("cell,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
def test_fits_globally_with_exogenous_and_names_its_weights(cell, gates):
    df, static = _df()
    model = shoal.DilatedRNN(h=4, input_size=10, max_steps=20, cell_type=cell,
                             encoder_hidden_size=8, decoder_hidden_size=8,
                             dilations=[[1, 3], [4]], futr_exog_list=["promo"],
                             hist_exog_list=["temp"], stat_exog_list=["size"])
    nf = shoal.NeuralForecast([model], freq=1).fit(df, static_df=static)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    fcst = nf.predict(futr_df=futr)
    assert len(fcst) == 12 and np.isfinite(fcst["DilatedRNN"]).all()
    sd = model.state_dict()
    assert sd["rnn_stack.0.cells.0.weight_ih_l0"].shape == (gates * 8, 4)
    assert sd["rnn_stack.0.cells.1.weight_ih_l0"].shape == (gates * 8, 8)
    assert sd["rnn_stack.1.cells.0.bias_hh_l0"].shape == (gates * 8,)
    assert sd["context_adapter.weight"].shape == (4, 10)
    assert sd["mlp_decoder.layers.3.bias"].shape == (1,)


@pytest.mark.parametrize("arg,value", [("cell_type", "ResLSTM"), ("cell_type", "AttentiveLSTM"),
                                       ("dilations", [[1, 2], []]), ("dilations", [[0]])])
def test_unsupported_settings_fail_naming_the_argument(arg, value):
    df, _ = _df()
    with pytest.raises(ValueError, match=arg):
        shoal.NeuralForecast([shoal.DilatedRNN(h=4, input_size=8, max_steps=2, **{arg: value})],
                             freq=1).fit(df)


def test_auto_dilated_rnn_has_neuralforecasts_space():
    space = shoal.auto.AutoDilatedRNN.get_default_config(h=4, backend="ray")
    assert sorted(space["cell_type"].categories) == ["GRU", "LSTM"]
    assert space["dilations"].categories == [[[1, 2], [4, 8]], [[1, 2, 4, 8]]]
    assert "step_size" not in space and "context_size" not in space
