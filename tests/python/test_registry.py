"""The Python model classes against the C++ registry: every model the registry lists has a
class, every class's signature shows the registry's defaults, and every option reaches C++."""

import inspect

import pytest

import shoal
from shoal import _core

# C++ options Python takes elsewhere (fit's val_size, cross_validation's test_size), from the
# loss objects (loss= and valid_loss=: HuberLoss(delta), QuantileLoss(q), MASE(seasonality),
# horizon_weight), or not at all (shoal-only: the init generator, seasonality for baselines; a
# global fit's threads are NeuralForecast's workers).
LOSS_PARAMETERS = {"huber_delta", "quantile", "loss_seasonality", "horizon_weight"}
CPP_ONLY = {"val_size", "test_size", "init_generator", "seasonality", "num_threads",
            "valid_loss"} | LOSS_PARAMETERS | {"valid_" + k for k in LOSS_PARAMETERS}


def as_python(text, kind):
    if kind == "flag":
        return text == "true"
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "list":
        return [] if text == "" else text.split(",")
    return text


CLASSES = {c._model: c for c in (shoal.TSMixerx, shoal.TSMixer, shoal.NLinear, shoal.DLinear,
                                  shoal.MLP, shoal.MLPMultivariate, shoal.NHITS, shoal.NBEATS,
                                  shoal.NBEATSx, shoal.TiDE, shoal.RNN, shoal.GRU, shoal.LSTM,
                                  shoal.TCN, shoal.DilatedRNN, shoal.iTransformer, shoal.BiTCN,
                                  shoal.PatchTST)}


@pytest.mark.parametrize("model", sorted(CLASSES))
def test_signature_defaults_are_the_registrys(model):
    """The signature is neuralforecast's; the C++ defaults (the CLI's and jobs files') must be
    the same values, so a model reads the same from every front end."""
    cls = CLASSES[model]
    params = inspect.signature(cls).parameters
    settings = cls(**{p: 4 for p in ("h", "input_size", "n_series")
                      if p in params and params[p].default is inspect.Parameter.empty})._settings()
    checked = 0
    for key, text, kind in _core.forecast_options(model):
        if key in CPP_ONLY or key not in params:
            continue
        default = params[key].default
        if default is inspect.Parameter.empty:  # required (h, input_size)
            continue
        if key == "input_size" and default == -1:
            # neuralforecast's 3 × h: Python resolves it at construction (the model's
            # input_size, as neuralforecast's), the C++ job when it is read
            assert as_python(text, kind) == -1 and settings[key] == 3 * 4, (text, settings[key])
            checked += 1
            continue
        sent = settings[key]
        if kind == "list":
            assert [str(v) for v in sent] == as_python(text, kind), (key, sent, text)
        else:
            assert sent == as_python(text, kind), f"{cls.__name__}.{key}: {sent} vs {text}"
        checked += 1
    assert checked >= 15


def test_every_registered_model_has_a_class():
    for name, class_name, neural in _core.forecast_models():
        if neural:
            assert name in CLASSES, f"registry model {name} ({class_name}) has no Python class"
            assert CLASSES[name].__name__ == class_name


def test_an_out_of_range_int_is_a_value_error():
    with pytest.raises(ValueError, match="random_seed"):
        from shoal.models import TSMixerx
        import pandas as pd
        df = pd.DataFrame({"unique_id": ["a"] * 30, "ds": range(30), "y": range(30)})
        shoal.NeuralForecast([TSMixerx(h=2, input_size=4, n_series=1, max_steps=2,
                                       random_seed=2**70)], freq=1).fit(df)


def test_nlinear_fits_per_series_or_globally():
    import numpy as np
    import pandas as pd
    t = np.arange(60)
    df = pd.DataFrame({"unique_id": np.repeat(["a", "b"], 60), "ds": np.tile(t, 2),
                       "y": np.concatenate([0.5 * t, 3.0 - 0.2 * t])})
    for per_series in (True, False):
        model = shoal.NLinear(h=4, input_size=8, max_steps=200, learning_rate=1e-2)
        nf = shoal.NeuralForecast([model], freq=1, per_series=per_series).fit(df)
        assert (model._weights is None) == per_series  # one global model unless per_series
        fcst = nf.predict()
        assert list(fcst.columns) == ["unique_id", "ds", "NLinear"]
        assert len(fcst) == 8
        a = fcst[fcst.unique_id == "a"]["NLinear"].to_numpy()
        assert np.all(np.abs(a - 0.5 * np.arange(60, 64)) < 1.0), (per_series, a)


def test_ncf_signature_defaults_are_the_cpp_ones():
    params = inspect.signature(shoal.NCF.__init__).parameters
    python_name = {"kind": "model"}
    checked = 0
    for key, text, kind in _core.ncf_options():
        name = python_name.get(key, key)
        if name not in params:
            continue  # CLI and jobs only (embedding_adam, top_k: evaluate's k)
        default = params[name].default
        if kind == "list":
            assert [int(x) for x in default] == [int(x) for x in text.split(",")], key
        else:
            assert default == as_python(text, kind), f"NCF.{name}: {default} vs {text}"
        checked += 1
    assert checked >= 7


def _trend_df(n_series=2, length=80):
    import numpy as np
    import pandas as pd
    t = np.arange(length)
    ys = [10.0 + (0.5 + 0.1 * k) * t + 2 * np.sin(2 * np.pi * t / 8) for k in range(n_series)]
    return pd.DataFrame({"unique_id": np.repeat([f"s{k}" for k in range(n_series)], length),
                         "ds": np.tile(t, n_series), "y": np.concatenate(ys)})


@pytest.mark.parametrize("cls", [shoal.MLP, shoal.DLinear])
def test_univariate_models_fit_per_series_or_globally(cls):
    import numpy as np
    df = _trend_df()
    kwargs = dict(hidden_size=16) if cls is shoal.MLP else dict(moving_avg_window=9)
    for per_series in (True, False):
        model = cls(h=4, input_size=16, max_steps=200, learning_rate=1e-2,
                    scaler_type="standard", **kwargs)
        fcst = shoal.NeuralForecast([model], freq=1, per_series=per_series).fit(df).predict()
        assert (model._weights is None) == per_series  # one global model unless per_series
        assert list(fcst.columns) == ["unique_id", "ds", cls.__name__]
        assert len(fcst) == 8
        got = fcst[fcst.unique_id == "s0"][cls.__name__].to_numpy()
        want = 10.0 + 0.5 * np.arange(80, 84) + 2 * np.sin(2 * np.pi * np.arange(80, 84) / 8)
        assert np.mean(np.abs(got - want)) < 2.0, (per_series, got, want)


def test_mlp_multivariate_fits_the_panel_jointly():
    df = _trend_df()
    model = shoal.MLPMultivariate(h=4, input_size=16, n_series=2, hidden_size=16, max_steps=100)
    fcst = shoal.NeuralForecast([model], freq=1).fit(df).predict()
    assert list(fcst.columns) == ["unique_id", "ds", "MLPMultivariate"]
    assert len(fcst) == 8
    assert sorted(model.state_dict()) == ["mlp.0.bias", "mlp.0.weight", "mlp.1.bias",
                                          "mlp.1.weight", "out.bias", "out.weight"]
    assert model.state_dict()["out.weight"].shape == (8, 16)


@pytest.mark.parametrize("arg", [dict(exclude_insample_y=True)])
def test_mlp_arguments_shoal_cannot_honour_raise_naming_them(arg):
    name = next(iter(arg))
    with pytest.raises(NotImplementedError, match=name):
        shoal.MLP(h=2, input_size=4, **arg)
    with pytest.raises(NotImplementedError, match=name):
        shoal.MLPMultivariate(h=2, input_size=4, n_series=2, **arg)


def test_dlinear_rejects_an_even_moving_average_window():
    with pytest.raises(ValueError, match="moving_avg_window"):
        shoal.NeuralForecast([shoal.DLinear(h=2, input_size=8, moving_avg_window=4,
                                            max_steps=2)], freq=1, per_series=True
                             ).fit(_trend_df(1, 30))
