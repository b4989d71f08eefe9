"""Forecasting model specs with neuralforecast's argument names and defaults.

A model object holds settings and, once fitted by :class:`shoal.NeuralForecast`, its trained
weights (safetensors bytes whose tensor names are neuralforecast's ``state_dict`` keys).
"""

from __future__ import annotations

import os
import warnings

from . import _weights
from .losses import loss_name

# neuralforecast arguments shoal accepts but cannot honour; a non-default value raises.
_UNSUPPORTED = {
    "exclude_insample_y": False,
    "valid_loss": None,
    "optimizer": None,
    "optimizer_kwargs": None,
    "lr_scheduler": None,
    "lr_scheduler_kwargs": None,
}
# Accepted and ignored: they tune PyTorch/Lightning data loading, not the result of a fit.
# (batch_size, valid_batch_size and inference_windows_batch_size do reach C++: a univariate
# model trained over many series draws batch_size series per step.)
_IGNORED = ("drop_last_loader", "val_monitor", "dataloader_kwargs")


class _ForecastModel:
    """A forecasting model of shoal's registry (C++ name `_model`), with neuralforecast's
    arguments. Subclasses name their own options in `_own_options`; every other argument is one
    every windowed model shares. An option left at None is not sent, so the C++ default (written
    once, in the model's Config) applies; tests/python check that the defaults shown in the
    signatures are those."""

    _model = ""  # the registry's name
    _own_options: tuple = ()

    def __init__(self, h, input_size, futr_exog_list=None, hist_exog_list=None,
                 stat_exog_list=None, exclude_insample_y=False, loss="mae", valid_loss=None,
                 max_steps=1000, learning_rate=1e-3, num_lr_decays=-1,
                 early_stop_patience_steps=-1, val_monitor="ptl/val_loss", val_check_steps=100,
                 batch_size=32, valid_batch_size=None, windows_batch_size=32,
                 inference_windows_batch_size=32, start_padding_enabled=False,
                 training_data_availability_threshold=0.0, step_size=1, scaler_type="identity",
                 random_seed=1, drop_last_loader=False, alias=None, optimizer=None,
                 optimizer_kwargs=None, lr_scheduler=None, lr_scheduler_kwargs=None,
                 dataloader_kwargs=None, own_options=None, **trainer_kwargs):
        given = dict(exclude_insample_y=exclude_insample_y, valid_loss=valid_loss,
                     optimizer=optimizer, optimizer_kwargs=optimizer_kwargs,
                     lr_scheduler=lr_scheduler, lr_scheduler_kwargs=lr_scheduler_kwargs)
        for name, default in _UNSUPPORTED.items():
            if given[name] is not default and given[name] != default:
                raise NotImplementedError(f"{type(self).__name__}: {name}={given[name]!r} is not "
                                          f"supported by shoal (leave it at {default!r})")
        for name, value in (("h", h), ("input_size", input_size), ("max_steps", max_steps)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{type(self).__name__}: {name} must be a positive integer, "
                                 f"got {value!r}")
        if trainer_kwargs:
            warnings.warn(f"{type(self).__name__}: Lightning trainer arguments are ignored by "
                          f"shoal: {sorted(trainer_kwargs)}", stacklevel=3)
        self.h = h
        self.input_size = input_size
        self.futr_exog_list = list(futr_exog_list or [])
        self.hist_exog_list = list(hist_exog_list or [])
        self.stat_exog_list = list(stat_exog_list or [])
        self.loss, self.huber_delta = loss_name(loss)
        self.max_steps = max_steps
        self.learning_rate = float(learning_rate)
        self.num_lr_decays = num_lr_decays
        self.early_stop_patience_steps = early_stop_patience_steps
        self.val_check_steps = val_check_steps
        self.windows_batch_size = windows_batch_size
        self.batch_size = batch_size
        self.valid_batch_size = valid_batch_size
        self.inference_windows_batch_size = inference_windows_batch_size
        self.start_padding_enabled = bool(start_padding_enabled)
        self.training_data_availability_threshold = float(training_data_availability_threshold)
        self.step_size = step_size
        self.scaler_type = scaler_type
        self.random_seed = random_seed
        self.alias = alias
        own = dict(own_options or {})
        assert set(own) == set(self._own_options), (own, self._own_options)
        for name, value in own.items():
            setattr(self, name, value)
        # Trained state: one blob for a joint model, or {unique_id: blob} per series.
        self._weights: bytes | None = None
        self._series_weights: dict | None = None

    def __repr__(self):
        return self.alias or type(self).__name__

    # The settings the C++ job reads: the registry's one key-value form (train/forecast.h).
    def _settings(self, val_size=0, test_size=0):
        settings = {
            "model": self._model, "h": self.h, "input_size": self.input_size,
            "step_size": self.step_size, "val_size": int(val_size), "test_size": int(test_size),
            "start_padding_enabled": self.start_padding_enabled,
            "training_data_availability_threshold": self.training_data_availability_threshold,
            "windows_batch_size": self.windows_batch_size, "scaler_type": self.scaler_type,
            "batch_size": self.batch_size,
            "valid_batch_size": 0 if self.valid_batch_size is None else self.valid_batch_size,
            "inference_windows_batch_size": self.inference_windows_batch_size,
            "hist_exog_list": self.hist_exog_list, "futr_exog_list": self.futr_exog_list,
            "stat_exog_list": self.stat_exog_list, "max_steps": self.max_steps,
            "learning_rate": self.learning_rate, "num_lr_decays": self.num_lr_decays,
            "val_check_steps": self.val_check_steps,
            "early_stop_patience_steps": self.early_stop_patience_steps, "loss": self.loss,
            "huber_delta": self.huber_delta, "random_seed": self.random_seed,
        }
        for name in self._own_options:
            value = getattr(self, name)
            if value is not None:
                settings[name] = value
        return settings

    @property
    def fitted(self):
        return self._weights is not None or self._series_weights is not None

    # --- weights -----------------------------------------------------------------------------
    def state_dict(self, unique_id=None):
        """Trained tensors as {neuralforecast state_dict name: float32 numpy array}.

        The arrays are read-only views of the stored bytes. A per-series model needs the
        `unique_id` of the series whose model to return.
        """
        return _weights.decode(self._blob(unique_id))

    def save_weights(self, path, unique_id=None):
        """Writes the trained weights to a safetensors file (torch/safetensors can read it)."""
        blob = self._blob(unique_id)
        tmp = f"{path}.tmp"
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)

    def load_weights(self, path, unique_id=None):
        """Loads safetensors weights (written by save_weights, or neuralforecast's state_dict
        saved with safetensors.torch.save_file). A later predict uses them; shapes are checked
        against the model there."""
        with open(path, "rb") as f:
            blob = f.read()
        _weights.decode(blob)  # header and sizes checked now, names and shapes at predict
        if unique_id is None:
            self._weights, self._series_weights = blob, None
        else:
            if self._series_weights is None:
                self._series_weights, self._weights = {}, None
            self._series_weights[unique_id] = blob
        return self

    def _blob(self, unique_id):
        if unique_id is not None:
            if not self._series_weights or unique_id not in self._series_weights:
                raise ValueError(f"{self!r} has no weights for unique_id {unique_id!r}")
            return self._series_weights[unique_id]
        if self._weights is None:
            if self._series_weights:
                raise ValueError(f"{self!r} holds one model per series: pass unique_id=")
            raise ValueError(f"{self!r} is not fitted")
        return self._weights


class _Mixer(_ForecastModel):
    """TSMixer and TSMixerx: n_series series modelled jointly (1 with per_series=True)."""

    _own_options = ("n_block", "ff_dim", "dropout", "revin")

    def __init__(self, h, input_size, n_series, futr_exog_list=None, hist_exog_list=None,
                 stat_exog_list=None, exclude_insample_y=False, n_block=2, ff_dim=64,
                 dropout=None, revin=True, **kwargs):
        if not isinstance(n_series, int) or isinstance(n_series, bool) or n_series < 1:
            raise ValueError(f"{type(self).__name__}: n_series must be a positive integer, "
                             f"got {n_series!r}")
        self.n_series = n_series
        super().__init__(h, input_size, futr_exog_list, hist_exog_list, stat_exog_list,
                         exclude_insample_y,
                         own_options=dict(n_block=n_block, ff_dim=ff_dim,
                                          dropout=None if dropout is None else float(dropout),
                                          revin=bool(revin)),
                         **kwargs)


class TSMixerx(_Mixer):
    """neuralforecast.models.TSMixerx: mixer with historical, future and static exogenous."""

    _model = "tsmixerx"

    def __init__(self, h, input_size, n_series, futr_exog_list=None, hist_exog_list=None,
                 stat_exog_list=None, exclude_insample_y=False, n_block=2, ff_dim=64,
                 dropout=0.0, revin=True, **kwargs):
        super().__init__(h, input_size, n_series, futr_exog_list, hist_exog_list,
                         stat_exog_list, exclude_insample_y, n_block, ff_dim, dropout, revin,
                         **kwargs)


class TSMixer(_Mixer):
    """neuralforecast.models.TSMixer: mixer on the target only (no exogenous inputs)."""

    _model = "tsmixer"

    def __init__(self, h, input_size, n_series, futr_exog_list=None, hist_exog_list=None,
                 stat_exog_list=None, exclude_insample_y=False, n_block=2, ff_dim=64,
                 dropout=0.9, revin=True, **kwargs):
        if futr_exog_list or hist_exog_list or stat_exog_list:
            raise ValueError("TSMixer takes no exogenous inputs; use TSMixerx")
        super().__init__(h, input_size, n_series, None, None, None, exclude_insample_y, n_block,
                         ff_dim, dropout, revin, **kwargs)


class NLinear(_ForecastModel):
    """neuralforecast.models.NLinear: one linear map of the window relative to its last value.
    Univariate: by default one model is trained globally over every series of the frame, as in
    neuralforecast (batch_size series per step); per_series=True fits one model per series."""

    _model = "nlinear"

    def __init__(self, h, input_size, stat_exog_list=None, hist_exog_list=None,
                 futr_exog_list=None, exclude_insample_y=False, loss="mae", valid_loss=None,
                 max_steps=5000, learning_rate=1e-4, num_lr_decays=-1,
                 early_stop_patience_steps=-1, val_monitor="ptl/val_loss", val_check_steps=100,
                 batch_size=32, valid_batch_size=None, windows_batch_size=1024,
                 inference_windows_batch_size=1024, start_padding_enabled=False,
                 training_data_availability_threshold=0.0, step_size=1, scaler_type="identity",
                 random_seed=1, drop_last_loader=False, alias=None, optimizer=None,
                 optimizer_kwargs=None, lr_scheduler=None, lr_scheduler_kwargs=None,
                 dataloader_kwargs=None, **trainer_kwargs):
        if futr_exog_list or hist_exog_list or stat_exog_list:
            raise ValueError("NLinear takes no exogenous inputs")
        super().__init__(
            h, input_size, None, None, None, exclude_insample_y, loss, valid_loss, max_steps,
            learning_rate, num_lr_decays, early_stop_patience_steps, val_monitor,
            val_check_steps, batch_size, valid_batch_size, windows_batch_size,
            inference_windows_batch_size, start_padding_enabled,
            training_data_availability_threshold, step_size, scaler_type, random_seed,
            drop_last_loader, alias, optimizer, optimizer_kwargs, lr_scheduler,
            lr_scheduler_kwargs, dataloader_kwargs, own_options={}, **trainer_kwargs)


def _check_categorical(model, cat_exog_list, categorical_cardinalities, cat_emb_dim):
    """neuralforecast embeds categorical exogenous columns; shoal takes continuous ones only."""
    for name, value, default in (("cat_exog_list", cat_exog_list, None),
                                 ("categorical_cardinalities", categorical_cardinalities, None),
                                 ("cat_emb_dim", cat_emb_dim, "fastai")):
        if value != default and not (default is None and not value):
            raise NotImplementedError(f"{model}: {name}={value!r} is not supported by shoal "
                                      f"(categorical exogenous embeddings; leave it at "
                                      f"{default!r})")


class MLP(_ForecastModel):
    """neuralforecast.models.MLP: ReLU layers over the window and its historical, future and
    static exogenous inputs. Univariate: one model trained globally over every series (or one
    per series with NeuralForecast(..., per_series=True)); MLPMultivariate mixes a panel."""

    _model = "mlp"
    _own_options = ("num_layers", "hidden_size")

    def __init__(self, h, input_size, stat_exog_list=None, hist_exog_list=None,
                 futr_exog_list=None, cat_exog_list=None, categorical_cardinalities=None,
                 cat_emb_dim="fastai", exclude_insample_y=False, num_layers=2, hidden_size=1024,
                 loss="mae", valid_loss=None, max_steps=1000, learning_rate=1e-3,
                 num_lr_decays=-1, early_stop_patience_steps=-1, val_monitor="ptl/val_loss",
                 val_check_steps=100, batch_size=32, valid_batch_size=None,
                 windows_batch_size=1024, inference_windows_batch_size=-1,
                 start_padding_enabled=False, training_data_availability_threshold=0.0,
                 step_size=1, scaler_type="identity", random_seed=1, drop_last_loader=False,
                 alias=None, optimizer=None, optimizer_kwargs=None, lr_scheduler=None,
                 lr_scheduler_kwargs=None, dataloader_kwargs=None, **trainer_kwargs):
        _check_categorical(type(self).__name__, cat_exog_list, categorical_cardinalities,
                           cat_emb_dim)
        super().__init__(
            h, input_size, futr_exog_list, hist_exog_list, stat_exog_list, exclude_insample_y,
            loss, valid_loss, max_steps, learning_rate, num_lr_decays,
            early_stop_patience_steps, val_monitor, val_check_steps, batch_size,
            valid_batch_size, windows_batch_size, inference_windows_batch_size,
            start_padding_enabled, training_data_availability_threshold, step_size,
            scaler_type, random_seed, drop_last_loader, alias, optimizer, optimizer_kwargs,
            lr_scheduler, lr_scheduler_kwargs, dataloader_kwargs,
            own_options=dict(num_layers=num_layers, hidden_size=hidden_size), **trainer_kwargs)


class MLPMultivariate(_ForecastModel):
    """neuralforecast.models.MLPMultivariate: one MLP over the windows of all n_series series
    (and their exogenous inputs), forecasting them jointly."""

    _model = "mlp_multivariate"
    _own_options = ("num_layers", "hidden_size")

    def __init__(self, h, input_size, n_series, stat_exog_list=None, hist_exog_list=None,
                 futr_exog_list=None, cat_exog_list=None, categorical_cardinalities=None,
                 cat_emb_dim="fastai", exclude_insample_y=False, num_layers=2, hidden_size=1024,
                 loss="mae", valid_loss=None, max_steps=1000, learning_rate=1e-3,
                 num_lr_decays=-1, early_stop_patience_steps=-1, val_monitor="ptl/val_loss",
                 val_check_steps=100, batch_size=32, valid_batch_size=None,
                 windows_batch_size=32, inference_windows_batch_size=32,
                 start_padding_enabled=False, training_data_availability_threshold=0.0,
                 step_size=1, scaler_type="identity", random_seed=1, drop_last_loader=False,
                 alias=None, optimizer=None, optimizer_kwargs=None, lr_scheduler=None,
                 lr_scheduler_kwargs=None, dataloader_kwargs=None, **trainer_kwargs):
        if not isinstance(n_series, int) or isinstance(n_series, bool) or n_series < 1:
            raise ValueError(f"{type(self).__name__}: n_series must be a positive integer, "
                             f"got {n_series!r}")
        _check_categorical(type(self).__name__, cat_exog_list, categorical_cardinalities,
                           cat_emb_dim)
        self.n_series = n_series
        super().__init__(
            h, input_size, futr_exog_list, hist_exog_list, stat_exog_list, exclude_insample_y,
            loss, valid_loss, max_steps, learning_rate, num_lr_decays,
            early_stop_patience_steps, val_monitor, val_check_steps, batch_size,
            valid_batch_size, windows_batch_size, inference_windows_batch_size,
            start_padding_enabled, training_data_availability_threshold, step_size,
            scaler_type, random_seed, drop_last_loader, alias, optimizer, optimizer_kwargs,
            lr_scheduler, lr_scheduler_kwargs, dataloader_kwargs,
            own_options=dict(num_layers=num_layers, hidden_size=hidden_size), **trainer_kwargs)


class DLinear(_ForecastModel):
    """neuralforecast.models.DLinear: a moving average splits the window into trend and
    remainder, each mapped to the horizon linearly. Univariate: one model trained globally over
    every series (or one per series with NeuralForecast(..., per_series=True))."""

    _model = "dlinear"
    _own_options = ("moving_avg_window",)

    def __init__(self, h, input_size, stat_exog_list=None, hist_exog_list=None,
                 futr_exog_list=None, exclude_insample_y=False, moving_avg_window=25,
                 loss="mae", valid_loss=None, max_steps=5000, learning_rate=1e-4,
                 num_lr_decays=-1, early_stop_patience_steps=-1, val_monitor="ptl/val_loss",
                 val_check_steps=100, batch_size=32, valid_batch_size=None,
                 windows_batch_size=1024, inference_windows_batch_size=1024,
                 start_padding_enabled=False, training_data_availability_threshold=0.0,
                 step_size=1, scaler_type="identity", random_seed=1, drop_last_loader=False,
                 alias=None, optimizer=None, optimizer_kwargs=None, lr_scheduler=None,
                 lr_scheduler_kwargs=None, dataloader_kwargs=None, **trainer_kwargs):
        if futr_exog_list or hist_exog_list or stat_exog_list:
            raise ValueError("DLinear takes no exogenous inputs")
        super().__init__(
            h, input_size, None, None, None, exclude_insample_y, loss, valid_loss, max_steps,
            learning_rate, num_lr_decays, early_stop_patience_steps, val_monitor,
            val_check_steps, batch_size, valid_batch_size, windows_batch_size,
            inference_windows_batch_size, start_padding_enabled,
            training_data_availability_threshold, step_size, scaler_type, random_seed,
            drop_last_loader, alias, optimizer, optimizer_kwargs, lr_scheduler,
            lr_scheduler_kwargs, dataloader_kwargs,
            own_options=dict(moving_avg_window=moving_avg_window), **trainer_kwargs)
