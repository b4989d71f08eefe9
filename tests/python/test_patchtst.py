"""PatchTST through the Python API: neuralforecast's defaults and names, a global fit with
RevIN and BatchNorm (the predictions from the running statistics), the settings shoal refuses
by name, and AutoPatchTST's space. (Its numbers against neuralforecast's: the C++ goldens of
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
    model = shoal.PatchTST(h=4, input_size=12)
    assert model.encoder_layers == 3 and model.n_heads == 16 and model.hidden_size == 128
    assert model.linear_hidden_size == 256 and model.dropout == 0.2 and model.fc_dropout == 0.2
    assert model.head_dropout == 0.0 and model.attn_dropout == 0.0
    assert model.patch_len == 16 and model.stride == 8
    assert model.revin is True and model.revin_affine is False
    assert model.revin_subtract_last is True and model.activation == "gelu"
    assert model.res_attention is True and model.batch_normalization is False
    assert model.learn_pos_embed is True
    assert model.max_steps == 5000 and model.learning_rate == 1e-4
    assert model.windows_batch_size == 1024 and model.scaler_type == "identity"


@pytest.mark.parametrize("extra", [dict(), dict(batch_normalization=True, revin_affine=True,
                                                res_attention=False, activation="relu")])
def test_fits_globally_and_names_its_weights(extra):
    model = shoal.PatchTST(h=4, input_size=12, max_steps=20, hidden_size=8, n_heads=2,
                           encoder_layers=2, linear_hidden_size=16, patch_len=4, stride=2,
                           **extra)
    nf = shoal.NeuralForecast([model], freq=1).fit(_df())
    fcst = nf.predict()
    assert len(fcst) == 12 and np.isfinite(fcst["PatchTST"]).all()
    sd = model.state_dict()
    patches = (12 - 4) // 2 + 2
    assert sd["model.backbone.W_P.weight"].shape == (8, 4)
    assert sd["model.backbone.W_pos"].shape == (patches, 8)
    assert sd["model.backbone.encoder.layers.1.self_attn.W_Q.weight"].shape == (8, 8)
    assert sd["model.backbone.encoder.layers.0.ff.0.weight"].shape == (16, 8)
    assert sd["model.backbone.encoder.layers.0.norm_attn.1.running_var"].shape == (8,)
    assert sd["model.head.linear.weight"].shape == (4, 8 * patches)
    assert ("model.revin_layer.affine_weight" in sd) == bool(extra)


def test_exogenous_inputs_are_refused_as_neuralforecast_does():
    with pytest.raises(ValueError, match="exogenous"):
        shoal.PatchTST(h=4, input_size=8, hist_exog_list=["temp"])


@pytest.mark.parametrize("args", [dict(hidden_size=6, n_heads=4), dict(dropout=1.0),
                                  dict(stride=0), dict(activation="tanh")])
def test_unsupported_settings_fail_naming_the_argument(args):
    with pytest.raises(ValueError, match=list(args)[0]):
        shoal.NeuralForecast([shoal.PatchTST(h=4, input_size=8, max_steps=2, **args)],
                             freq=1).fit(_df())


def test_auto_patchtst_has_neuralforecasts_space():
    space = shoal.auto.AutoPatchTST.get_default_config(h=4, backend="ray")
    assert sorted(space["hidden_size"].categories) == [16, 128, 256]
    assert sorted(space["n_heads"].categories) == [4, 16]
    assert sorted(space["patch_len"].categories) == [16, 24]
    assert sorted(space["revin"].categories) == [False, True]
    assert sorted(space["max_steps"].categories) == [500, 1000, 5000]
    assert sorted(space["input_size"].categories) == [4, 8, 12]
    assert "step_size" not in space
