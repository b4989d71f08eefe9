"""Forecasting models with neuralforecast's arguments, names and defaults.

Every class takes exactly the signature of its neuralforecast namesake: _nf_signatures.json,
written from neuralforecast's source by bench/peers/nf_signatures.py. Each argument is one of:

* sent to the C++ job under its own name, when shoal's registry knows it for the model (the
  model's options and the shared training options: `_core.forecast_options(model)`);
* read here (loss, valid_loss, alias, n_series, the trainer arguments that change nothing);
* refused: a value other than neuralforecast's default raises NotImplementedError naming the
  argument and what to use instead (`_REFUSED`).

A class whose signature holds an argument in none of these fails at import, so a new
neuralforecast argument cannot be dropped silently. A model object holds settings and, once
fitted by :class:`shoal.NeuralForecast`, its trained weights (safetensors bytes whose tensor
names are neuralforecast's ``state_dict`` keys).
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import warnings

from . import _core, _weights
from . import losses as _losses

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_nf_signatures.json")) as _f:
    _NF_SIGNATURES = json.load(_f)

# neuralforecast arguments shoal does not implement, with what to do instead. The value shown
# is neuralforecast's default, the only one accepted.
_REFUSED = {
    "exclude_insample_y": "the models always see the window's past values",
    "optimizer": "shoal trains with Adam; set learning_rate",
    "optimizer_kwargs": "shoal trains with Adam; set learning_rate",
    "lr_scheduler": "shoal's schedule is neuralforecast's default StepLR; set num_lr_decays",
    "lr_scheduler_kwargs": "shoal's schedule is neuralforecast's default StepLR; set "
                           "num_lr_decays",
    "val_monitor": "early stopping monitors the validation loss",
    "drop_last_loader": "every series batch of an epoch is trained on",
}
# Accepted with no effect on the result: they tune PyTorch's data loading, which shoal does not
# use (the series are read into C++ once).
_NO_EFFECT = ("dataloader_kwargs",)
# Lightning Trainer arguments (**trainer_kwargs) that leave a fit's result as it is; any other
# one raises NotImplementedError.
_TRAINER_NO_EFFECT = ("accelerator", "devices", "logger", "enable_model_summary",
                      "enable_checkpointing", "enable_progress_bar", "deterministic")
# Lightning trainer arguments shoal's trainer honours (C++ options of the same name).
_TRAINER_HONOURED = ("gradient_clip_val",)
# Read by the Python side rather than sent as a C++ option of the same name.
_PYTHON_SIDE = ("loss", "valid_loss", "alias", "n_series")
# Arguments neuralforecast itself ignores, with its warning.
_IGNORED_BY_NEURALFORECAST = {
    ("NBEATS", "n_polynomials"): "The parameter n_polynomials will be deprecated in favor of "
                                 "n_basis and basis and it is currently ignored.",
    ("GRU", "encoder_activation"): "The 'encoder_activation' argument is deprecated and will be "
                                   "removed in future versions. The activation function in GRU "
                                   "is frozen in PyTorch and it cannot be modified.",
    **{(m, "context_size"): "context_size is deprecated and will be removed in future versions."
       for m in ("RNN", "GRU", "LSTM")},
}
# What None means for the arguments neuralforecast lets be None, as the C++ option's value
# (given the model's other arguments): valid_batch_size None is batch_size (0),
# windows_batch_size None is every window (0), inference_windows_batch_size None is
# windows_batch_size (every window, -1, when that is None too). None for any other option is
# refused at construction rather than read as the option's default.
_NONE_MEANS = {
    # neuralforecast's TemporalNorm takes None as the identity (its Auto spaces draw it).
    "scaler_type": lambda args: "identity",
    "valid_batch_size": lambda args: 0,
    # The recurrent models: inference_input_size None is input_size (0), decoder_activation None
    # is ReLU.
    "inference_input_size": lambda args: 0,
    "decoder_activation": lambda args: "ReLU",
    "windows_batch_size": lambda args: 0,
    "inference_windows_batch_size": lambda args: (-1 if args.get("windows_batch_size") is None
                                                  else args["windows_batch_size"]),
}


def _flatten_pairs(units, args):
    """neuralforecast's mlp_units [[in, out], ...] as the C++ option's flat list."""
    return [int(u) for pair in units for u in pair]


def _cardinalities(cards, args):
    """categorical_cardinalities {column: U} as the C++ option's list, in cat_exog_list's
    order."""
    return [int(cards[c]) for c in args.get("cat_exog_list") or []]


def _dilations(value, args):
    """TCN's dilations as they are; DilatedRNN's groups ([[1, 2], [4, 8]]) as the C++ option's
    JSON text ("[[1,2],[4,8]]")."""
    if isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple)) for v in value):
        return json.dumps([[int(d) for d in g] for g in value], separators=(",", ":"))
    return value


# Arguments whose C++ option has another form: (value, the model's arguments) -> option value.
_TO_CPP = {"mlp_units": _flatten_pairs, "dilations": _dilations,
           "cat_exog_list": lambda v, args: list(v or []),
           "categorical_cardinalities": _cardinalities,
           "cat_emb_dim": lambda v, args: str(v)}


def _check_categorical(name, args):
    """neuralforecast's _check_categorical_exog and cat_emb_dim check, at construction."""
    cat = list(args.get("cat_exog_list") or [])
    if not cat:
        return
    listed = set()
    for kind in ("hist", "futr", "stat"):
        listed.update(args.get(f"{kind}_exog_list") or [])
    unknown = [c for c in cat if c not in listed]
    if unknown:
        raise ValueError(f"{name}: categorical features {unknown} must also be listed in "
                         "`hist_exog_list`, `futr_exog_list` or `stat_exog_list`.")
    cards = args.get("categorical_cardinalities") or {}
    missing = [c for c in cat if c not in cards]
    if missing:
        raise ValueError(f"{name}: missing `categorical_cardinalities` entries for categorical "
                         f"features {missing}.")
    for c in cat:
        _positive_int(name, f"categorical_cardinalities[{c!r}]", cards[c])
    dim = args.get("cat_emb_dim")
    if not (dim in ("fastai", "sqrt", "half") or
            (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1)):
        raise ValueError(f"{name}: unknown cat_emb_dim strategy {dim!r}. Use one of 'fastai', "
                         "'sqrt', 'half', or an integer.")


def _default(value):
    if isinstance(value, dict) and "call" in value:
        return getattr(_losses, value["call"])()
    return value


def _signature(nf_name):
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for entry in _NF_SIGNATURES["models"][nf_name]:
        if entry[0].startswith("**"):
            params.append(inspect.Parameter(entry[0][2:], inspect.Parameter.VAR_KEYWORD))
        else:
            default = inspect.Parameter.empty if len(entry) == 1 else _default(entry[1])
            params.append(inspect.Parameter(entry[0], inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=default))
    return inspect.Signature(params)


def _positive_int(model, name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{model}: {name} must be a positive integer, got {value!r}")


class _ForecastModel:
    """A forecasting model of shoal's registry (C++ name `_model`) with the signature of its
    neuralforecast namesake. A subclass named after a neuralforecast model gets that signature
    and `__init__`; a subclass of such a class (a user's) inherits them."""

    _model = ""  # the registry's name
    _exogenous = ""  # the exogenous kinds it takes: "f"utr, "h"ist, "s"tat
    _nf_name = ""
    _cpp_options: frozenset = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__name__ not in _NF_SIGNATURES["models"] or "_model" not in vars(cls):
            return
        cls._nf_name = cls.__name__
        cls._cpp_options = frozenset(k for k, _, _ in _core.forecast_options(cls._model))
        sig = _signature(cls.__name__)
        for p in sig.parameters.values():
            if p.name == "self" or p.kind == inspect.Parameter.VAR_KEYWORD:
                continue
            if not (p.name in cls._cpp_options or p.name in _PYTHON_SIDE
                    or p.name in _REFUSED or p.name in _NO_EFFECT
                    or (cls.__name__, p.name) in _IGNORED_BY_NEURALFORECAST):
                raise TypeError(f"{cls.__name__}({p.name}=...) is neither honoured nor refused")

        def __init__(self, *args, **kw):
            _ForecastModel._setup(self, sig.bind(self, *args, **kw))

        __init__.__signature__ = sig
        __init__.__doc__ = f"neuralforecast.models.{cls.__name__}'s arguments and defaults."
        __init__.__qualname__ = f"{cls.__name__}.__init__"
        cls.__init__ = __init__
        cls.__signature__ = inspect.Signature(list(sig.parameters.values())[1:])

    def _setup(self, bound):
        name = self._nf_name
        defaults = {p.name: p.default for p in bound.signature.parameters.values()}
        bound.apply_defaults()
        args = {k: v for k, v in bound.arguments.items() if k != "self"}
        trainer_kwargs = {}
        for p in bound.signature.parameters.values():
            if p.kind == inspect.Parameter.VAR_KEYWORD:
                trainer_kwargs = args.pop(p.name, {})
        for arg, advice in _REFUSED.items():
            if arg in args and not _is_default(args[arg], defaults[arg]):
                raise NotImplementedError(f"{name}: {arg}={args[arg]!r} is not supported by "
                                          f"shoal ({advice}; leave it at {defaults[arg]!r})")
        for kind in ("futr", "hist", "stat"):
            # NBEATS's signature lacks them, but neuralforecast passes its **trainer_kwargs on
            # to the base model, which refuses them for a model without exogenous inputs.
            if trainer_kwargs.get(f"{kind}_exog_list") is not None:
                args[f"{kind}_exog_list"] = trainer_kwargs.pop(f"{kind}_exog_list")
        # Likewise the categorical arguments: neuralforecast's base model refuses columns for a
        # model that cannot embed them, and ignores a cardinality or width with no column.
        if trainer_kwargs.pop("cat_exog_list", None):
            raise ValueError(f"{name} does not support categorical exogenous variables.")
        trainer_kwargs.pop("categorical_cardinalities", None)
        trainer_kwargs.pop("cat_emb_dim", None)
        for arg in trainer_kwargs:
            if arg not in _TRAINER_NO_EFFECT and arg not in _TRAINER_HONOURED:
                raise NotImplementedError(
                    f"{name}: the trainer argument {arg}={trainer_kwargs[arg]!r} is not "
                    f"supported by shoal (honoured: {', '.join(_TRAINER_HONOURED)}; accepted "
                    f"without effect: {', '.join(_TRAINER_NO_EFFECT)})")
        for (model, arg), message in _IGNORED_BY_NEURALFORECAST.items():
            if model == name and args.get(arg) is not None:
                warnings.warn(message, stacklevel=3)
        if (isinstance(args["input_size"], int) and not isinstance(args["input_size"], bool)
                and args["input_size"] < 1 and isinstance(args["h"], int)):
            # neuralforecast's base model, for every model (the recurrent ones default to -1).
            args["input_size"] = 3 * args["h"]
            warnings.warn("Input size too small. Automatically setting input size to 3 * horizon "
                          f"= {args['input_size']}", stacklevel=3)
        if (args.get("recurrent") and getattr(args["loss"], "horizon_weight", None) is not None
                and args.get("h_train") != args["h"]):
            # neuralforecast's base model: a horizon weight per step of the training windows.
            args["h_train"] = args["h"]
            warnings.warn(f"Setting h_train={args['h']} to match the horizon_weight length.",
                          stacklevel=3)
        for arg in ("h", "input_size", "max_steps") + (("n_series",) if "n_series" in args
                                                       else ()):
            _positive_int(name, arg, args[arg])
        for kind, label in (("futr", "future"), ("hist", "historical"), ("stat", "static")):
            given = args.get(f"{kind}_exog_list")
            if given and kind[0] not in self._exogenous:
                raise ValueError(f"{name} does not support {label} exogenous variables.")
            if f"{kind}_exog_list" in args:
                args[f"{kind}_exog_list"] = list(given or [])
        for k, v in args.items():
            if (v is None and k in self._cpp_options and k not in _NONE_MEANS
                    and k not in _PYTHON_SIDE and defaults[k] is not None):
                raise ValueError(f"{name}({k}=None): give a value (default "
                                 f"{defaults[k]!r})")
        _check_categorical(name, args)
        _losses.loss_settings(args["loss"])  # refuses a loss shoal lacks now, not at fit
        if args.get("valid_loss") is not None:
            _losses.loss_settings(args["valid_loss"], prefix="valid_")
        for k, v in args.items():
            setattr(self, k, copy.deepcopy(v))
        for kind in ("futr", "hist", "stat"):  # models without them (NBEATS) have none
            if not hasattr(self, f"{kind}_exog_list"):
                setattr(self, f"{kind}_exog_list", [])
        self.trainer_kwargs = dict(trainer_kwargs)
        self._args = args
        # Trained state: one blob for a joint model, or {unique_id: blob} per series.
        self._weights: bytes | None = None
        self._series_weights: dict | None = None

    def __repr__(self):
        return self.alias or type(self).__name__

    # The settings the C++ job reads: the registry's one key-value form (train/forecast_job.h).
    def _settings(self, val_size=0, test_size=0):
        settings = {"model": self._model, "val_size": int(val_size),
                    "test_size": int(test_size)}
        for k in self._args:
            if k in self._cpp_options:
                v = getattr(self, k)
                if v is None and k in _NONE_MEANS:
                    v = _NONE_MEANS[k](self._args)
                settings[k] = _TO_CPP[k](v, self._args) if k in _TO_CPP else v
        for k in _TRAINER_HONOURED:
            if self.trainer_kwargs.get(k) is not None:
                settings[k] = self.trainer_kwargs[k]
        # loss and valid_loss (None: the training loss) are objects here; their job settings.
        settings.pop("valid_loss", None)
        settings.update(_losses.loss_settings(self.loss))
        if getattr(self, "valid_loss", None) is not None:
            settings.update(_losses.loss_settings(self.valid_loss, prefix="valid_"))
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
        from . import _savedir

        _savedir.write_file(path, self._blob(unique_id))

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


def column_names(models):
    """The forecast columns of `models`, as neuralforecast names them: each model's repr (its
    alias or class name), a second model of the same name suffixed 1, a third 2, ..."""
    names, seen = [], {}
    for m in models:
        base = repr(m)
        k = seen.get(base, 0)
        names.append(base if k == 0 else f"{base}{k}")
        seen[base] = k + 1
    return names


def _is_default(value, default):
    if value is default:
        return True
    try:
        return bool(value == default)
    except Exception:  # an array or an object without a plain ==
        return False


class TSMixer(_ForecastModel):
    """neuralforecast.models.TSMixer: time and feature mixing over n_series series jointly (1
    with per_series=True); no exogenous inputs."""

    _model = "tsmixer"


class TSMixerx(_ForecastModel):
    """neuralforecast.models.TSMixerx: TSMixer with historical, future and static exogenous
    inputs."""

    _model = "tsmixerx"
    _exogenous = "fhs"


class MLP(_ForecastModel):
    """neuralforecast.models.MLP: ReLU layers over the window and its exogenous inputs.
    Univariate: one model trained globally over every series (or one per series with
    NeuralForecast(..., per_series=True)); MLPMultivariate mixes a panel."""

    _model = "mlp"
    _exogenous = "fhs"


class NLinear(_ForecastModel):
    """neuralforecast.models.NLinear: one linear map of the window relative to its last value.
    Univariate and trained globally, as MLP."""

    _model = "nlinear"


class DLinear(_ForecastModel):
    """neuralforecast.models.DLinear: a moving average splits the window into trend and
    remainder, each mapped to the horizon linearly. Univariate and trained globally, as MLP."""

    _model = "dlinear"


class MLPMultivariate(_ForecastModel):
    """neuralforecast.models.MLPMultivariate: one MLP over the windows of all n_series series
    (and their exogenous inputs), forecasting them jointly."""

    _model = "mlp_multivariate"
    _exogenous = "fhs"


class NHITS(_ForecastModel):
    """neuralforecast.models.NHITS: stacks of MLP blocks, each pooling its input at its own
    rate and interpolating its forecast from a few knots. Univariate and trained globally."""

    _model = "nhits"
    _exogenous = "fhs"


class NBEATS(_ForecastModel):
    """neuralforecast.models.NBEATS: identity, trend (polynomial or spline) and seasonality
    (Fourier) stacks of MLP blocks with doubly residual links. Univariate, no exogenous."""

    _model = "nbeats"


class NBEATSx(_ForecastModel):
    """neuralforecast.models.NBEATSx: NBEATS with exogenous inputs to every block and an
    exogenous stack type. Univariate and trained globally."""

    _model = "nbeatsx"
    _exogenous = "fhs"


class TiDE(_ForecastModel):
    """neuralforecast.models.TiDE: a dense residual encoder-decoder, a per-step temporal
    decoder over projected future exogenous, and a linear skip. Univariate, trained globally."""

    _model = "tide"
    _exogenous = "fhs"


class RNN(_ForecastModel):
    """neuralforecast.models.RNN: stacked Elman (tanh) layers over the window and its exogenous
    inputs, an MLP decoding every horizon step from the last hidden states (recurrent=False,
    neuralforecast's default), or, with recurrent=True, each step's state projected to the next
    step's forecast, trained on h_train steps and forecasting step by step. Univariate, trained
    globally."""

    _model = "rnn"
    _exogenous = "fhs"


class GRU(_ForecastModel):
    """neuralforecast.models.GRU: RNN with gated recurrent units."""

    _model = "gru"
    _exogenous = "fhs"


class LSTM(_ForecastModel):
    """neuralforecast.models.LSTM: RNN with long short-term memory cells."""

    _model = "lstm"
    _exogenous = "fhs"


class TCN(_ForecastModel):
    """neuralforecast.models.TCN: a stack of dilated causal convolutions over the window and its
    exogenous inputs, a Linear along time from the input steps to the horizon's, and an MLP
    decoding every horizon step. Univariate, trained globally."""

    _model = "tcn"
    _exogenous = "fhs"


class DilatedRNN(_ForecastModel):
    """neuralforecast.models.DilatedRNN: groups of dilated LSTM, GRU or RNN layers (each run over
    every r-th step, a residual link around every group but the first) over the window and its
    exogenous inputs, a Linear along time to the horizon's steps, and an MLP decoding every
    horizon step. Univariate, trained globally."""

    _model = "dilated_rnn"
    _exogenous = "fhs"


class iTransformer(_ForecastModel):
    """neuralforecast.models.iTransformer: each series' window (and each future exogenous
    input's sequence) is one token, a transformer encoder attends across the n_series series,
    and each series' token is projected to the horizon; use_norm normalises every window's
    series. Multivariate; future exogenous inputs only."""

    _model = "itransformer"
    _exogenous = "f"


class BiTCN(_ForecastModel):
    """neuralforecast.models.BiTCN: a backward-looking stack of temporal convolution cells over
    the window and its exogenous inputs and, with future exogenous inputs, a forward-looking
    one over their window and horizon; Linears along time to the horizon and an output Linear.
    Univariate, trained globally."""

    _model = "bitcn"
    _exogenous = "fhs"


class PatchTST(_ForecastModel):
    """neuralforecast.models.PatchTST: each window cut into overlapping patches, each patch a
    token of a transformer encoder (residual attention, BatchNorm) over that series alone, the
    encoded patches flattened and projected to the horizon; RevIN normalises every window.
    Univariate, trained globally; no exogenous inputs."""

    _model = "patchtst"


class VanillaTransformer(_ForecastModel):
    """neuralforecast.models.VanillaTransformer: Informer's full-attention baseline. A
    transformer encoder over the input window's steps (a circular convolution of the values,
    the sine/cosine positions and the future exogenous inputs embed each step) and a decoder
    over the window's last steps and the horizon's zeros, attending to the encoder, projected to
    each horizon step. Univariate, trained globally; future exogenous inputs only."""

    _model = "vanilla_transformer"
    _exogenous = "f"

def _rebuild(class_name, args, trainer_kwargs):
    """The model of shoal's class `class_name` built with `args` (neuralforecast argument name
    -> value) and the trainer arguments it was given: a saved forecaster's models."""
    cls = globals().get(class_name)
    if not (isinstance(cls, type) and issubclass(cls, _ForecastModel) and cls._nf_name):
        raise ValueError(f"{class_name!r} is not a shoal forecasting model")
    return cls(**args, **trainer_kwargs)


# Every forecasting model class above: `from shoal.models import *` and the package's names.
__all__ = [name for name, c in list(globals().items())
           if isinstance(c, type) and issubclass(c, _ForecastModel) and c._nf_name]
