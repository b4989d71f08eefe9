"""RNN, GRU and LSTM through the Python API: neuralforecast's defaults and names, a global fit
with every exogenous kind, and the arguments shoal refuses or, as neuralforecast, ignores.
(Their forecasts against neuralforecast's from the same weights:
bench/peers/shoal_weights_to_nf.py RNN|GRU|LSTM, and RNN-recurrent|GRU-recurrent|
LSTM-recurrent for recurrent=True, with the peers installed.)"""

import warnings

import numpy as np
import pandas as pd
import pytest

import shoal
import shoal.losses


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


@pytest.mark.parametrize("cls", [shoal.RNN, shoal.GRU, shoal.LSTM])
def test_fits_globally_with_exogenous_and_names_its_weights(cls):
    df, static = _df()
    with pytest.warns(UserWarning, match="3 \\* horizon"):
        model = cls(h=4, max_steps=20, encoder_hidden_size=8, decoder_hidden_size=8,
                    futr_exog_list=["promo"], hist_exog_list=["temp"], stat_exog_list=["size"])
    assert model.input_size == 12 and model.scaler_type == "robust"
    nf = shoal.NeuralForecast([model], freq=1).fit(df, static_df=static)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    fcst = nf.predict(futr_df=futr)
    assert len(fcst) == 12 and np.isfinite(fcst[cls.__name__]).all()
    names = set(model.state_dict())
    assert {"hist_encoder.weight_ih_l0", "hist_encoder.weight_hh_l1", "hist_encoder.bias_ih_l0",
            "mlp_decoder.layers.0.weight", "mlp_decoder.layers.3.bias"} <= names
    # [y | hist | stat | futr] per step, neuralforecast's encoder input.
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[cls.__name__]
    assert model.state_dict()["hist_encoder.weight_ih_l0"].shape == (gates * 8, 4)


def test_an_upsampled_horizon_and_one_decoder_layer():
    df, _ = _df()
    model = shoal.LSTM(h=6, input_size=3, max_steps=10, encoder_n_layers=1,
                       encoder_hidden_size=4, decoder_layers=1)
    shoal.NeuralForecast([model], freq=1).fit(df)
    sd = model.state_dict()
    assert sd["upsample_sequence.weight"].shape == (6, 3)
    assert sd["mlp_decoder.layers.0.weight"].shape == (1, 4)


@pytest.mark.parametrize("cls", [shoal.RNN, shoal.GRU, shoal.LSTM])
def test_recurrent_true_projects_each_state_and_forecasts_step_by_step(cls):
    df, static = _df()
    model = cls(h=4, input_size=8, max_steps=10, recurrent=True, h_train=2,
                encoder_hidden_size=6, futr_exog_list=["promo"], hist_exog_list=["temp"],
                stat_exog_list=["size"])
    nf = shoal.NeuralForecast([model], freq=1).fit(df, static_df=static)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    fcst = nf.predict(futr_df=futr)
    assert len(fcst) == 12 and np.isfinite(fcst[cls.__name__]).all()
    sd = model.state_dict()
    assert not any(k.startswith("mlp_decoder.") for k in sd)
    if cls is shoal.LSTM:  # torch's proj_size: the state is the forecast
        assert sd["hist_encoder.weight_hr_l0"].shape == (1, 6)
        assert sd["hist_encoder.weight_hh_l0"].shape == (24, 1)
    else:
        assert sd["proj.weight"].shape == (1, 6)


def test_deprecated_arguments_warn_as_neuralforecast():
    with pytest.warns(UserWarning, match="context_size"):
        shoal.GRU(h=4, context_size=10)
    with pytest.warns(UserWarning, match="encoder_activation"):
        shoal.GRU(h=4, encoder_activation="tanh")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shoal.RNN(h=4, input_size=8, encoder_activation="relu")  # stored, no effect, no warning


def test_an_unsupported_decoder_activation_fails_naming_the_choices():
    df, _ = _df()
    with pytest.raises(ValueError, match="decoder_activation"):
        shoal.NeuralForecast([shoal.RNN(h=4, input_size=8, max_steps=2,
                                        decoder_activation="Softsign")], freq=1).fit(df)


def test_recurrent_true_refuses_a_distribution_without_a_mean_output():
    df, _ = _df()
    model = shoal.LSTM(h=4, input_size=8, max_steps=2, recurrent=True,
                       loss=shoal.losses.DistributionLoss("Poisson"))
    with pytest.raises(ValueError, match="recurrent=true feeds each forecast's mean back"):
        shoal.NeuralForecast([model], freq=1).fit(df)


def test_a_horizon_weight_trains_recurrent_windows_of_h_steps_as_neuralforecast():
    df, _ = _df()
    with pytest.warns(UserWarning, match="Setting h_train=4"):
        model = shoal.GRU(h=4, input_size=8, max_steps=3, recurrent=True, h_train=1,
                          encoder_hidden_size=6,
                          loss=shoal.losses.MAE(horizon_weight=[1.0, 2.0, 1.0, 0.5]))
    assert model.h_train == 4
    fcst = shoal.NeuralForecast([model], freq=1).fit(df).predict()
    assert np.isfinite(fcst["GRU"]).all()
