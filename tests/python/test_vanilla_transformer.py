"""VanillaTransformer through the Python API: neuralforecast's defaults and names, a global fit
with and without future exogenous inputs, the settings shoal refuses by name, and
AutoVanillaTransformer's space. (Its numbers against neuralforecast's: the C++ goldens of
bench/peers/forecast_golden.py.)"""

import numpy as np
import pandas as pd
import pytest

import shoal


def _df(n_series=3, length=60):
    t = np.arange(length)
    rows = []
    for k in range(n_series):
        rows.append(pd.DataFrame({"unique_id": f"s{k}", "ds": t,
                                  "y": 10 + 0.2 * t + 3 * np.sin(2 * np.pi * t / 12) + k,
                                  "temp": np.cos(t / 3.0 + k)}))
    return pd.concat(rows, ignore_index=True)


def test_defaults_are_neuralforecasts():
    model = shoal.VanillaTransformer(h=4, input_size=12)
    assert model.decoder_input_size_multiplier == 0.5 and model.hidden_size == 128
    assert model.dropout == 0.05 and model.n_head == 4 and model.conv_hidden_size == 32
    assert model.activation == "gelu" and model.encoder_layers == 2
    assert model.decoder_layers == 1
    assert model.max_steps == 5000 and model.learning_rate == 1e-4
    assert model.windows_batch_size == 1024 and model.scaler_type == "identity"


@pytest.mark.parametrize("futr", [False, True])
def test_fits_globally_and_names_its_weights(futr):
    exog = dict(futr_exog_list=["temp"]) if futr else {}
    model = shoal.VanillaTransformer(h=4, input_size=12, max_steps=20, hidden_size=8, n_head=2,
                                     conv_hidden_size=16, decoder_layers=2, **exog)
    df = _df()
    nf = shoal.NeuralForecast([model], freq=1).fit(df if futr else df.drop(columns="temp"))
    futr_df = None
    if futr:
        futr_df = nf.make_future_dataframe()
        futr_df["temp"] = 0.5
    fcst = nf.predict(futr_df=futr_df)
    assert len(fcst) == 12 and np.isfinite(fcst["VanillaTransformer"]).all()
    sd = model.state_dict()
    assert sd["enc_embedding.value_embedding.tokenConv.weight"].shape == (8, 1, 3)
    assert ("enc_embedding.temporal_embedding.embed.weight" in sd) == futr
    assert sd["encoder.attn_layers.1.conv1.weight"].shape == (16, 8, 1)
    assert sd["decoder.layers.1.cross_attention.key_projection.weight"].shape == (8, 8)
    assert sd["decoder.layers.0.norm3.bias"].shape == (8,)
    assert sd["decoder.projection.weight"].shape == (1, 8)
    assert not any(k.endswith("position_embedding.pe") for k in sd)


@pytest.mark.parametrize("kind", ["hist_exog_list", "stat_exog_list"])
def test_exogenous_inputs_are_refused_as_neuralforecast_does(kind):
    with pytest.raises(ValueError, match="exogenous"):
        shoal.VanillaTransformer(h=4, input_size=8, **{kind: ["temp"]})


@pytest.mark.parametrize("args", [dict(hidden_size=7, n_head=1), dict(dropout=1.0),
                                  dict(decoder_input_size_multiplier=1.0),
                                  dict(decoder_input_size_multiplier=0.0),
                                  dict(decoder_input_size_multiplier=0.95),
                                  dict(activation="tanh")])
def test_unsupported_settings_fail_naming_the_argument(args):
    with pytest.raises(ValueError, match=list(args)[0]):
        shoal.NeuralForecast([shoal.VanillaTransformer(h=4, input_size=8, max_steps=2, **args)],
                             freq=1).fit(_df().drop(columns="temp"))


def test_auto_vanilla_transformer_has_neuralforecasts_space():
    space = shoal.auto.AutoVanillaTransformer.get_default_config(h=4, backend="ray")
    assert sorted(space["hidden_size"].categories) == [64, 128, 256]
    assert sorted(space["n_head"].categories) == [4, 8]
    assert sorted(space["max_steps"].categories) == [500, 1000, 2000]
    assert sorted(space["input_size"].categories) == [4, 8, 12, 16, 20]
