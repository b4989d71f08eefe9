"""Every argument of neuralforecast's public API, as committed in shoal/_nf_signatures.json
(bench/peers/nf_signatures.py reads neuralforecast's source), is either honoured by shoal or
refused with NotImplementedError naming it: none is dropped silently."""

import inspect
import json
import os

import numpy as np
import pandas as pd
import pytest

import shoal
from shoal import _core

SIGNATURES = json.load(open(os.path.join(os.path.dirname(shoal.__file__),
                                         "_nf_signatures.json")))

# A value other than every model's default for each argument neuralforecast's models take. A
# new neuralforecast argument fails test_every_argument_has_a_probe until it is given one.
PROBES = {
    "h": 5, "input_size": 7, "n_series": 3, "futr_exog_list": ["x"], "hist_exog_list": ["x"],
    "stat_exog_list": ["x"], "cat_exog_list": ["c"], "categorical_cardinalities": {"c": 3},
    "cat_emb_dim": 4, "exclude_insample_y": True, "n_block": 3, "ff_dim": 32, "dropout": 0.4,
    "revin": False, "loss": shoal.MSE(), "valid_loss": shoal.MSE(), "max_steps": 7,
    "learning_rate": 0.01, "num_lr_decays": 2, "early_stop_patience_steps": 3,
    "val_monitor": "train_loss", "val_check_steps": 7, "batch_size": 8, "valid_batch_size": 8,
    "windows_batch_size": 64, "inference_windows_batch_size": 64, "start_padding_enabled": True,
    "training_data_availability_threshold": 0.5, "step_size": 2, "scaler_type": "standard",
    "random_seed": 7, "drop_last_loader": True, "alias": "mine", "optimizer": object(),
    "optimizer_kwargs": {"lr": 1.0}, "lr_scheduler": object(), "lr_scheduler_kwargs": {"a": 1},
    "dataloader_kwargs": {"num_workers": 2}, "num_layers": 3, "hidden_size": 24,
    "moving_avg_window": 5, "stack_types": ["identity", "identity"], "n_blocks": [2, 1, 1],
    "mlp_units": [[64, 64], [64, 64], [64, 64]], "n_pool_kernel_size": [4, 2, 1],
    "n_freq_downsample": [2, 1, 1], "pooling_mode": "AvgPool1d", "interpolation_mode": "nearest",
    "dropout_prob_theta": 0.1, "activation": "Tanh", "n_harmonics": 3, "n_polynomials": 3,
    "n_basis": 3, "basis": "changepoint", "shared_weights": True, "decoder_output_dim": 8,
    "temporal_decoder_dim": 16, "layernorm": False, "num_encoder_layers": 2,
    "num_decoder_layers": 2, "temporal_width": 2, "inference_input_size": 9, "h_train": 2,
    "encoder_n_layers": 3, "encoder_hidden_size": 16, "encoder_activation": "relu",
    "encoder_bias": False, "encoder_dropout": 0.1, "context_size": 5,
    "decoder_hidden_size": 16, "decoder_layers": 3, "decoder_activation": "GELU",
    "recurrent": True, "kernel_size": 3, "dilations": [1, 2],
    "cell_type": "GRU", "n_heads": 4, "e_layers": 3, "d_layers": 2, "d_ff": 64, "factor": 3,
    "use_norm": False, "encoder_layers": 1, "linear_hidden_size": 32, "fc_dropout": 0.1,
    "head_dropout": 0.1, "attn_dropout": 0.1, "patch_len": 4, "stride": 2, "revin_affine": True,
    "revin_subtract_last": False, "res_attention": False, "batch_normalization": True,
    "learn_pos_embed": False, "decoder_input_size_multiplier": 0.3, "n_head": 2,
    "conv_hidden_size": 16,
}
# Honoured on the Python side rather than as a job setting: how each shows.
PYTHON_SIDE = {
    "alias": lambda m: repr(m) == "mine",
    "n_series": lambda m: m.n_series == 3,
    "dataloader_kwargs": lambda m: True,  # no effect on a fit: shoal has no data loaders
}
REQUIRED = ("h", "input_size", "n_series")
# Arguments that need others to mean anything (neuralforecast refuses a categorical column not
# listed as exogenous, or without a cardinality): the model both sides of a probe are built with.
_CATEGORICAL = {"hist_exog_list": ["c"], "cat_exog_list": ["c"],
                "categorical_cardinalities": {"c": 2}}
COMPANIONS = {"cat_exog_list": {"hist_exog_list": ["c"], "categorical_cardinalities": {"c": 3}},
              "categorical_cardinalities": _CATEGORICAL, "cat_emb_dim": _CATEGORICAL}
# Arguments neuralforecast itself ignores with a warning; shoal does the same.
IGNORED_AS_NEURALFORECAST = {("NBEATS", "n_polynomials"), ("GRU", "encoder_activation"),
                             ("RNN", "context_size"), ("GRU", "context_size"),
                             ("LSTM", "context_size")}


def _cls(name):
    return getattr(shoal, name)


def test_every_model_of_the_list_is_exported():
    assert sorted(SIGNATURES["models"]) == sorted(
        n for n in shoal.__all__ if n in SIGNATURES["models"])


@pytest.mark.parametrize("name", sorted(SIGNATURES["models"]))
def test_the_signature_is_neuralforecasts(name):
    params = inspect.signature(_cls(name)).parameters
    nf = SIGNATURES["models"][name]
    assert [p for p in params] == [a[0].lstrip("*") for a in nf]
    for entry in nf:
        if len(entry) == 2 and not isinstance(entry[1], dict):
            assert params[entry[0]].default == entry[1], entry


@pytest.mark.parametrize("name", sorted(SIGNATURES["models"]))
def test_every_argument_has_a_probe(name):
    missing = [a[0] for a in SIGNATURES["models"][name]
               if not a[0].startswith("**") and a[0] not in PROBES]
    assert not missing, f"{name}: give these arguments a probe value: {missing}"


def _companions(cls, arg):
    """COMPANIONS[arg], its categorical column a future input for a model without historic ones
    (VanillaTransformer takes future exogenous inputs only)."""
    c = dict(COMPANIONS.get(arg, {}))
    if "hist_exog_list" in c and "h" not in cls._exogenous:
        c["futr_exog_list"] = c.pop("hist_exog_list")
    return c


def _base(cls):
    params = inspect.signature(cls).parameters
    return {p: 4 for p in REQUIRED if p in params}


CASES = [(name, a[0]) for name in sorted(SIGNATURES["models"])
         for a in SIGNATURES["models"][name] if not a[0].startswith("**")]


@pytest.mark.parametrize("name,arg", CASES)
def test_each_argument_is_honoured_or_refused_by_name(name, arg):
    cls = _cls(name)
    base = dict(_base(cls), **_companions(cls, arg))
    default_settings = cls(**base)._settings()
    kwargs = dict(base, **{arg: PROBES[arg]})
    if (name, arg) in IGNORED_AS_NEURALFORECAST:  # it warns and changes nothing
        with pytest.warns(UserWarning, match=arg):
            assert cls(**kwargs)._settings() == default_settings
        return
    try:
        model = cls(**kwargs)
    except NotImplementedError as e:
        assert arg in str(e), e
        return
    except ValueError as e:  # neuralforecast refuses these too: exogenous a model lacks
        assert "does not support" in str(e) and arg.endswith("_exog_list"), e
        assert arg.split("_")[0][0] not in cls._exogenous
        return
    if arg in PYTHON_SIDE:
        assert PYTHON_SIDE[arg](model), arg
        return
    settings = model._settings()
    changed = [k for k in settings if settings[k] != default_settings.get(k)]
    assert changed, f"{name}({arg}={PROBES[arg]!r}) changes no setting of the C++ job"
    # And the C++ job reads it: every changed key is one of the registry's options.
    known = {k for k, _, _ in _core.forecast_options(cls._model)}
    assert set(changed) <= known | {"huber_delta"}, changed


def test_nbeats_ignores_n_polynomials_as_neuralforecast_does():
    with pytest.warns(UserWarning, match="n_polynomials"):
        m = shoal.NBEATS(h=4, input_size=8, n_polynomials=3)
    assert m._settings() == shoal.NBEATS(h=4, input_size=8)._settings()


@pytest.mark.parametrize("name", sorted(SIGNATURES["models"]))
def test_trainer_arguments_are_known_or_refused(name):
    cls = _cls(name)
    cls(**_base(cls), accelerator="cpu", devices=1, enable_progress_bar=False, logger=False)
    with pytest.raises(NotImplementedError, match="max_epochs"):
        cls(**_base(cls), max_epochs=3)


# --- NeuralForecast's methods ------------------------------------------------------------------
def _df():
    t = np.arange(40)
    return pd.DataFrame({"unique_id": np.repeat(["a", "b"], 40), "ds": np.tile(t, 2),
                         "y": np.concatenate([np.sin(t / 3), np.cos(t / 3)])})


def _fitted():
    return shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)], freq=1).fit(_df())


# Arguments refused for now, by method: the value to pass.
REFUSED = {
    "fit": {"distributed_config": object()},
    "predict": {"engine": object()},
    "cross_validation": {"use_fitted": True, "level": [80], "quantiles": [0.5], "h": 3},
    "predict_insample": {"level": [80], "quantiles": [0.5]},
}
# Arguments honoured, with the test that shows it.
HONOURED = {
    "__init__": {"models": "test_forecast_api", "freq": "test_forecast_api",
                 "local_scaler_type": "test_local_scalers",
                 "local_static_scaler_type": "test_local_scalers"},
    "fit": {"df": "test_forecast_api", "static_df": "test_forecast_api",
            "val_size": "test_forecast_api", "val_df": "test_val_df",
            "use_init_models": "test_use_init_models_*",
            "verbose": "test_verbose_fit_prints_a_line_per_model",
            "prediction_intervals": "test_intervals",
            "id_col": "test_forecast_api", "time_col": "test_forecast_api",
            "target_col": "test_forecast_api"},
    "predict": {"df": "test_forecast_api", "static_df": "test_forecast_api",
                "futr_df": "test_forecast_api", "verbose": "(nothing to report)",
                "level": "test_intervals", "quantiles": "test_intervals",
                "h": "test_predict_beyond_the_horizon_is_recursive",
                "**data_kwargs": "test_data_kwargs_are_refused"},
    "cross_validation": {"df": "test_forecast_api", "static_df": "test_forecast_api",
                         "n_windows": "test_forecast_api", "step_size": "test_forecast_api",
                         "val_size": "test_forecast_api", "test_size": "test_forecast_api",
                         "use_init_models": "test_use_init_models_*", "verbose": "fit's",
                         "id_col": "test_forecast_api", "time_col": "test_forecast_api",
                         "target_col": "test_forecast_api",
                         "refit": "test_cv_refit",
                         "prediction_intervals": "test_cv_refit (with refit, as neuralforecast)",
                         "**data_kwargs": "test_data_kwargs_are_refused"},
    "predict_insample": {"step_size": "test_insample"},
    "make_future_dataframe": {"df": "test_make_and_missing_future", "h": "same"},
    "get_missing_future": {"futr_df": "test_make_and_missing_future", "df": "same",
                           "h": "same"},
    "save": {"path": "test_global_forecaster_with_exogenous_predicts_the_same_in_a_fresh_"
                     "process", "model_index": "test_model_index_saves_a_subset",
             "save_dataset": "test_without_the_dataset_predict_needs_df",
             "overwrite": "test_overwrite"},
    "load": {"path": "test_per_series_forecaster_predicts_the_same_in_a_fresh_process",
             "verbose": "test_load_arguments", "allow_pickle": "test_load_arguments (no "
             "effect: nothing is pickled)", "trust_remote": "test_load_arguments (a non-local "
             "path is refused)", "**kwargs": "test_load_arguments (refused by name)"},
}


@pytest.mark.parametrize("method", sorted(SIGNATURES["NeuralForecast"]))
def test_every_method_argument_is_accounted_for(method):
    params = inspect.signature(getattr(shoal.NeuralForecast, method)).parameters
    for entry in SIGNATURES["NeuralForecast"][method]:
        arg = entry[0].lstrip("*")
        assert arg in params, f"NeuralForecast.{method} lacks {arg}"
        key = entry[0] if entry[0].startswith("**") else arg
        assert key in REFUSED.get(method, {}) or key in HONOURED.get(method, {}), \
            f"NeuralForecast.{method}({key}) is neither refused nor shown honoured"


@pytest.mark.parametrize("method,arg", [(m, a) for m in REFUSED for a in REFUSED[m]])
def test_refused_method_arguments_name_themselves(method, arg):
    value = REFUSED[method][arg]
    with pytest.raises(NotImplementedError, match=arg):
        if method == "__init__":
            shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8)], freq=1, **{arg: value})
        elif method == "fit":
            shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)],
                                 freq=1).fit(_df(), **{arg: value})
        elif method == "cross_validation":
            shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)],
                                 freq=1).cross_validation(_df(), **{arg: value})
        else:
            getattr(_fitted(), method)(**{arg: value})


def test_data_kwargs_are_refused():
    with pytest.raises(NotImplementedError, match="num_partitions"):
        _fitted().predict(num_partitions=2)
    with pytest.raises(NotImplementedError, match="num_partitions"):
        shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)],
                             freq=1).cross_validation(_df(), num_partitions=2)


def test_make_and_missing_future():
    nf = _fitted()
    fut = nf.make_future_dataframe()
    assert list(fut.columns) == ["unique_id", "ds"] and len(fut) == 8
    assert list(nf.make_future_dataframe(h=2)["ds"]) == [40, 41, 40, 41]
    missing = nf.get_missing_future(fut.iloc[1:])
    assert missing.to_dict("list") == {"unique_id": ["a"], "ds": [40]}
    assert len(nf.get_missing_future(fut)) == 0


def test_verbose_fit_prints_a_line_per_model(capsys):
    shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2),
                          shoal.DLinear(h=4, input_size=8, max_steps=2)], freq=1).fit(
        _df(), verbose=True)
    err = capsys.readouterr().err
    assert "NLinear" in err and "DLinear" in err
    shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=2)], freq=1).fit(_df())
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("per_series", [False, True])
def test_use_init_models_false_continues_from_the_fitted_weights(per_series):
    model = shoal.NLinear(h=4, input_size=8, max_steps=300, learning_rate=1e-2)
    nf = shoal.NeuralForecast([model], freq=1, per_series=per_series, workers=1)
    trained = nf.fit(_df()).predict()["NLinear"].to_numpy()
    model.max_steps, model.learning_rate = 1, 1e-12  # a fit that cannot move the weights
    continued = nf.fit(_df()).predict()["NLinear"].to_numpy()
    np.testing.assert_allclose(continued, trained, rtol=1e-5, atol=1e-6)
    fresh = nf.fit(_df(), use_init_models=True).predict()["NLinear"].to_numpy()
    untrained = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=1,
                                                    learning_rate=1e-12)],
                                     freq=1, per_series=per_series, workers=1
                                     ).fit(_df()).predict()["NLinear"].to_numpy()
    np.testing.assert_allclose(fresh, untrained, rtol=1e-5, atol=1e-6)
    assert np.abs(fresh - trained).max() > 1e-2


def test_verbose_fits_show_a_progress_bar(capsys, monkeypatch):
    import shoal._progress
    monkeypatch.setattr(shoal._progress, "DELAY", 0.0)
    big = shoal.NLinear(h=4, input_size=8, max_steps=3000)
    shoal.NeuralForecast([big], freq=1).fit(_df(), verbose=True)
    err = capsys.readouterr().err
    assert "NLinear: 100%|" in err and "3000/3000 steps" in err and "loss" in err, err[-300:]
    shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=3000)], freq=1,
                         per_series=True).fit(_df(), verbose=True)
    assert "2/2 fits" in capsys.readouterr().err
    # Not asked for, and stderr is no terminal here (as in a Dask worker): silent.
    shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=3000)], freq=1).fit(_df())
    assert capsys.readouterr().err == ""


def test_the_bar_draws_steps_loss_and_time_left():
    import io
    from shoal._progress import ProgressBar
    out = io.StringIO()
    bar = ProgressBar("NHITS", stream=out, delay=0.0)
    bar(250, 1000, 0.5)
    bar.close(1000)
    text = out.getvalue()
    assert "NHITS:  25%|######------------------| 250/1000 steps" in text
    assert "loss 0.5]" in text and text.endswith("1000/1000 steps [00:00<--:--, loss 0.5]\n")
    bar(300, 1000, 0.4)  # closed: nothing more
    assert out.getvalue() == text


def test_predict_beyond_the_horizon_is_recursive():
    df = _df()
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=8, max_steps=50)], freq=1).fit(df)
    long = nf.predict(h=10)
    assert len(long) == 20 and list(long.ds[:10]) == list(range(40, 50))
    first = nf.predict()
    np.testing.assert_array_equal(long.NLinear.to_numpy().reshape(2, 10)[:, :4],
                                  first.NLinear.to_numpy().reshape(2, 4))
    # The second round forecasts from the series extended by the first round's forecasts.
    grown = pd.concat([df, first.rename(columns={"NLinear": "y"})]).sort_values(
        ["unique_id", "ds"])
    second = nf.predict(df=grown)
    np.testing.assert_allclose(long.NLinear.to_numpy().reshape(2, 10)[:, 4:8],
                               second.NLinear.to_numpy().reshape(2, 4), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="shorter"):
        nf.predict(h=2)
