"""BiTCN through the Python API: neuralforecast's defaults and names, a global fit with every
exogenous kind (the forward-looking stack built only with future exogenous inputs), and the
settings shoal refuses by name. (Its forecasts against neuralforecast's from the same weights:
bench/peers/shoal_weights_to_nf.py BiTCN, with the peers installed.)"""

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
    model = shoal.BiTCN(h=4, input_size=8)
    assert model.hidden_size == 16 and model.dropout == 0.5
    assert model.scaler_type == "identity" and model.max_steps == 1000
    assert model.learning_rate == 1e-3 and model.windows_batch_size == 1024
    assert model.inference_windows_batch_size == 1024


def test_fits_globally_with_exogenous_and_names_its_weights():
    df, static = _df()
    model = shoal.BiTCN(h=4, input_size=10, max_steps=20, hidden_size=8,
                        futr_exog_list=["promo"], hist_exog_list=["temp"],
                        stat_exog_list=["size"])
    nf = shoal.NeuralForecast([model], freq=1).fit(df, static_df=static)
    futr = nf.make_future_dataframe()
    futr["promo"] = 1.0
    fcst = nf.predict(futr_df=futr)
    assert len(fcst) == 12 and np.isfinite(fcst["BiTCN"]).all()
    sd = model.state_dict()
    assert sd["lin_hist.weight"].shape == (8, 4)
    # ceil(log2 10) = 4 backward cells, ceil(log2 14) = 4 forward ones.
    assert sd["net_bwd.3.conv1.weight"].shape == (8, 8, 2)
    assert sd["net_bwd.3.conv2.weight"].shape == (16, 8, 1)
    assert "net_bwd.4.conv1.weight" not in sd
    assert sd["net_fwd.3.conv1.bias"].shape == (8,)
    assert sd["lin_futr.weight"].shape == (8, 1)
    assert sd["temporal_lin1.weight"].shape == (8, 10)
    assert sd["temporal_lin2.weight"].shape == (4, 8)
    assert sd["output_lin.weight"].shape == (1, 24)


def test_without_future_exogenous_no_forward_stack():
    df, _ = _df()
    model = shoal.BiTCN(h=3, input_size=5, max_steps=5, hidden_size=4)
    shoal.NeuralForecast([model], freq=1).fit(df)
    sd = model.state_dict()
    assert not any(k.startswith(("net_fwd.", "lin_futr.")) for k in sd)
    assert sd["output_lin.weight"].shape == (1, 4)


@pytest.mark.parametrize("arg,value", [("input_size", 1), ("hidden_size", 0), ("dropout", 1.0)])
def test_unsupported_settings_fail_naming_the_argument(arg, value):
    df, _ = _df()
    args = dict(h=4, input_size=8, max_steps=2)
    args[arg] = value
    with pytest.raises(ValueError, match=arg):
        shoal.NeuralForecast([shoal.BiTCN(**args)], freq=1).fit(df)


def test_auto_bitcn_has_neuralforecasts_space():
    space = shoal.auto.AutoBiTCN.get_default_config(h=4, backend="ray")
    assert sorted(space["hidden_size"].categories) == [16, 32]
    assert sorted(space["windows_batch_size"].categories) == [128, 256, 512, 1024]
    assert sorted(space["max_steps"].categories) == [500, 1000, 2000]
    assert "step_size" not in space
