"""neuralforecast's losses by their class names and arguments, so `loss=MAE()` reads the same in
both: the point losses, MQLoss, DistributionLoss (Normal, StudentT, Poisson) and GMM.
`loss_settings` turns a loss object (shoal's or neuralforecast's) into the job settings the C++
trainer reads (train/forecast_job.cpp: loss, huber_delta, quantile, loss_seasonality,
horizon_weight, loss_quantiles, num_samples, return_params, loss_n_components, loss_weighted;
with prefix "valid_", those of valid_loss), and
`output_names` gives the forecast columns' suffixes."""

import warnings

import numpy as np

from . import _arguments


def _quantiles_of(loss):
    """A multi-output loss's quantiles (a list, or neuralforecast's torch parameter)."""
    q = loss.quantiles
    if hasattr(q, "detach"):
        q = q.detach().cpu().numpy()
    return [float(v) for v in np.asarray(q, dtype=np.float64).reshape(-1)]


def _weights(horizon_weight):
    """A horizon weight (None, a list, a numpy array or a torch tensor) as a list of floats."""
    if horizon_weight is None:
        return None
    if hasattr(horizon_weight, "detach"):  # torch.Tensor (neuralforecast stores one)
        horizon_weight = horizon_weight.detach().cpu().numpy()
    if hasattr(horizon_weight, "reshape"):
        horizon_weight = horizon_weight.reshape(-1).tolist()
    weights = [float(w) for w in horizon_weight]
    # A negative weight rewards error; all zero trains on nothing.
    for w in weights:
        if not (np.isfinite(w) and w >= 0):
            raise ValueError(f"horizon_weight must hold finite weights ≥ 0, got {w}")
    if weights and not any(weights):
        raise ValueError("horizon_weight is all zero: no horizon step would be trained on")
    return weights


class _PointLoss:
    # neuralforecast's flags, read by its examples' plotting code.
    is_distribution_output = False
    outputsize_multiplier = 1
    output_names = [""]

    def __init__(self, horizon_weight=None):
        self.horizon_weight = _weights(horizon_weight)

    def _args(self):
        return []

    def __repr__(self):
        args = self._args()
        if self.horizon_weight is not None:
            args.append(f"horizon_weight={self.horizon_weight}")
        return f"{type(self).__name__}({', '.join(args)})"


class MAE(_PointLoss):
    """Mean absolute error."""


class MSE(_PointLoss):
    """Mean squared error."""


class RMSE(_PointLoss):
    """Root mean squared error: the square root of the (weighted) MSE."""


class MAPE(_PointLoss):
    """Mean absolute percentage error: |y − ŷ| / |y| (0 where y = 0)."""


class SMAPE(_PointLoss):
    """Symmetric MAPE: 2 |y − ŷ| / (|y| + |ŷ|) (0 where both are 0)."""


class MASE(_PointLoss):
    """Mean absolute scaled error against the seasonal naive errors of the window's insample y,
    as neuralforecast 3.3.0 computes it (docs/derivations/losses.md)."""

    def __init__(self, seasonality, horizon_weight=None):
        super().__init__(horizon_weight)
        self.seasonality = _arguments.count(seasonality, "seasonality")

    def _args(self):
        return [f"seasonality={self.seasonality}"]


class HuberLoss(_PointLoss):
    """torch's Huber loss with threshold delta."""

    def __init__(self, delta=1.0, horizon_weight=None):
        super().__init__(horizon_weight)
        self.delta = _arguments.number(delta, "delta")
        if not self.delta > 0:
            raise ValueError(f"delta must be > 0, got {delta}")

    def _args(self):
        return [f"delta={self.delta}"]


class QuantileLoss(_PointLoss):
    """Pinball loss of quantile q in (0, 1)."""

    def __init__(self, q, horizon_weight=None):
        super().__init__(horizon_weight)
        self.q = _arguments.number(q, "q")
        if not 0 < self.q < 1:
            raise ValueError(f"q must lie in (0, 1), got {q}")

    def _args(self):
        return [f"q={self.q}"]


def _float32(values):
    """Each value rounded to float32, as torch.Tensor(...) stores neuralforecast's quantiles."""
    return [float(np.float32(v)) for v in values]


def _unique(values, what):
    unique = list(dict.fromkeys(values))
    if len(unique) < len(values):
        warnings.warn(f"Duplicate {what} detected. Using unique {what}: {unique}")
    return unique


def level_to_outputs(level):
    """neuralforecast's level_to_outputs: the median, then the 50 ∓ l/2 percentiles of each
    level sorted, as float32 fractions, and their column suffixes (-median, -lo-80, ...)."""
    level = _unique(list(level), "levels")
    qs = sum([[50 - lv / 2, 50 + lv / 2] for lv in level], [])
    names = sum([[f"-lo-{lv}", f"-hi-{lv}"] for lv in level], [])
    order = np.argsort(qs)
    quantiles = [50.0] + [qs[i] for i in order]
    return ([float(np.float32(q) / np.float32(100)) for q in quantiles],
            ["-median"] + [names[i] for i in order])


def quantiles_to_outputs(quantiles):
    """neuralforecast's quantiles_to_outputs: the quantiles (repeats dropped) and their column
    suffixes (-lo-80 for 0.1, -median for 0.5, -hi-80 for 0.9)."""
    quantiles = _unique(list(quantiles), "quantiles")
    names = []
    for q in quantiles:
        if q < 0.5:
            names.append(f"-lo-{np.round(100 - 200 * q, 2)}")
        elif q > 0.5:
            names.append(f"-hi-{np.round(100 - 200 * (1 - q), 2)}")
        else:
            names.append("-median")
    return _float32(quantiles), names


def _checked(level, quantiles, num_samples=1):
    """The arguments of a multi-output loss checked before anything reads them: quantiles
    replace level (as in neuralforecast), so a level other than the default beside them would
    be unread and is refused."""
    if quantiles is not None and not _is_default_level(level):
        raise ValueError(f"level={list(level)!r} is unread when quantiles are given: give one "
                         f"of level and quantiles")
    _outputs(level, quantiles)
    _arguments.count(num_samples, "num_samples")


def _is_default_level(level):
    try:
        return [float(v) for v in level] == [80.0, 90.0]
    except (TypeError, ValueError):
        return False


def _outputs(level, quantiles):
    if quantiles is not None:
        return quantiles_to_outputs(_arguments.quantiles(quantiles))
    return level_to_outputs(_arguments.levels(level))


class MQLoss:
    """Multi-quantile loss: the model forecasts each quantile (the median and the bounds of each
    level, or the given quantiles) and is trained on the sum of their pinball losses, as
    neuralforecast 3.3.0 computes it (docs/derivations/losses.md). Forecast columns
    <model>-median, <model>-lo-80, <model>-hi-80, ..."""

    is_distribution_output = False

    def __init__(self, level=[80, 90], quantiles=None, horizon_weight=None):  # noqa: B006
        _checked(level, quantiles)
        self._init_args = dict(level=list(level), quantiles=quantiles,
                               horizon_weight=_weights(horizon_weight))
        self.quantiles, self.output_names = _outputs(level, quantiles)
        self.outputsize_multiplier = len(self.quantiles)
        self.horizon_weight = _weights(horizon_weight)

    def __repr__(self):
        return f"MQLoss(quantiles={self.quantiles})"


_DISTRIBUTIONS = {"Normal": ("normal", ["-loc", "-scale"]),
                  "StudentT": ("studentt", ["-df", "-loc", "-scale"]),
                  "Poisson": ("poisson", ["-loc"])}


class DistributionLoss:
    """Negative log-likelihood of a Normal, StudentT or Poisson whose parameters the model
    forecasts (scaled back with each window's scaler statistics, neuralforecast's
    scale_decouple). The forecast is the mean of num_samples draws (column <model>), their
    quantiles (<model>-median, <model>-lo-80, ...) and with return_params the parameters
    (<model>-loc, <model>-scale; StudentT also <model>-df; Poisson's rate is <model>-loc). The
    draws are shoal's own: the same distribution as neuralforecast's, not the same numbers."""

    is_distribution_output = True

    def __init__(self, distribution, level=[80, 90], quantiles=None,  # noqa: B006
                 num_samples=1000, return_params=False, horizon_weight=None,
                 **distribution_kwargs):
        if distribution not in _DISTRIBUTIONS:
            raise NotImplementedError(
                f"DistributionLoss({distribution!r}) is not supported by shoal; use "
                f"'Normal', 'StudentT' or 'Poisson'")
        if distribution_kwargs:
            raise NotImplementedError(
                f"DistributionLoss arguments {sorted(distribution_kwargs)} are not supported "
                f"by shoal (Normal, StudentT and Poisson take none)")
        _checked(level, quantiles, num_samples)
        if quantiles is not None:
            quantiles = sorted(quantiles)
        self._init_args = dict(distribution=distribution, level=list(level),
                               quantiles=quantiles, num_samples=int(num_samples),
                               return_params=bool(return_params),
                               horizon_weight=_weights(horizon_weight))
        self.quantiles, names = _outputs(level, quantiles)
        self.distribution = distribution
        self.num_samples = int(num_samples)
        if self.num_samples < 1:
            raise ValueError(f"num_samples must be ≥ 1, got {num_samples}")
        self.return_params = bool(return_params)
        self.param_names = list(_DISTRIBUTIONS[distribution][1])
        self.output_names = [""] + names + (self.param_names if self.return_params else [])
        self.outputsize_multiplier = len(self.param_names)
        self.horizon_weight = _weights(horizon_weight)

    def __repr__(self):
        return f"DistributionLoss({self.distribution!r}, quantiles={self.quantiles})"


class GMM:
    """Gaussian mixture of n_components Normals per forecast value (neuralforecast's GMM): the
    model forecasts each component's mean and scale (and with weighted=True its weight; else
    the weights are equal), scaled back as DistributionLoss's Normal, and is trained on the
    mixture's negative log-likelihood. Forecast columns as DistributionLoss's, with
    return_params <model>-mu-1, <model>-std-1 (, <model>-weight-1), <model>-mu-2, ...
    batch_correlation and horizon_correlation are refused (shoal scores each value alone)."""

    is_distribution_output = True

    def __init__(self, n_components=1, level=[80, 90], quantiles=None,  # noqa: B006
                 num_samples=1000, return_params=False, batch_correlation=False,
                 horizon_correlation=False, weighted=False):
        for name, flag in (("batch_correlation", batch_correlation),
                           ("horizon_correlation", horizon_correlation)):
            if flag:
                raise NotImplementedError(f"GMM({name}=True) is not supported by shoal")
        _checked(level, quantiles, num_samples)
        self.n_components = _arguments.count(n_components, "n_components", 1, 32)
        self._init_args = dict(n_components=self.n_components, level=list(level),
                               quantiles=quantiles, num_samples=int(num_samples),
                               return_params=bool(return_params), weighted=bool(weighted))
        self.quantiles, names = _outputs(level, quantiles)
        self.num_samples = int(num_samples)
        if self.num_samples < 1:
            raise ValueError(f"num_samples must be ≥ 1, got {num_samples}")
        self.return_params = bool(return_params)
        self.weighted = bool(weighted)
        self.batch_correlation = self.horizon_correlation = False
        parts = ["mu", "std"] + (["weight"] if self.weighted else [])
        self.param_names = [f"-{p}-{i}" for i in range(1, self.n_components + 1) for p in parts]
        self.output_names = [""] + names + (self.param_names if self.return_params else [])
        self.n_outputs = len(parts)
        self.outputsize_multiplier = self.n_outputs * self.n_components
        self.horizon_weight = None

    def __repr__(self):
        return (f"GMM(n_components={self.n_components}, weighted={self.weighted}, "
                f"quantiles={self.quantiles})")


# neuralforecast's losses shoal does not train yet, refused by name.
_MULTI_OUTPUT = ("IQLoss", "PMM", "NBMM", "HuberQLoss", "HuberMQLoss", "HuberIQLoss", "sCRPS")
# Single-output losses of neuralforecast that shoal does not implement.
_OTHER = ("relMSE", "TukeyLoss", "Accuracy", "FreDF")
_SUPPORTED = ("MAE, MSE, RMSE, MAPE, SMAPE, MASE, HuberLoss, QuantileLoss, MQLoss, "
              "DistributionLoss('Normal', 'StudentT' or 'Poisson') or GMM")


def _refuse(name):
    return NotImplementedError(f"loss {name} is not supported by shoal; use {_SUPPORTED}")


def _refused_class(name):
    def __init__(self, *args, **kwargs):
        raise _refuse(name)
    return type(name, (), {"__init__": __init__, "__doc__": f"Not supported: {name}."})


for _name in _MULTI_OUTPUT + _OTHER:
    globals()[_name] = _refused_class(_name)
del _name

_NAMES = {"MAE": "mae", "MSE": "mse", "RMSE": "rmse", "MAPE": "mape", "SMAPE": "smape",
          "MASE": "mase", "HuberLoss": "huber", "QuantileLoss": "quantile"}


def output_columns(name, loss, fc):
    """Forecasts [..., C] of a model named `name` trained with `loss` as {column: [...]}: C = 1
    for a point loss (the column is the model's name), else one column per output, named as
    neuralforecast names them (NHITS-median, NHITS-lo-80, ...; a DistributionLoss's mean is
    the model's name)."""
    suffixes = output_names(loss)
    if fc.shape[-1] != len(suffixes):
        raise RuntimeError(f"{name}: {fc.shape[-1]} values per step for the columns {suffixes}")
    return {name + sfx: fc[..., k] for k, sfx in enumerate(suffixes)}


def output_names(loss):
    """The column suffixes of a model trained with `loss` (neuralforecast's output_names):
    [""] for a point loss."""
    if isinstance(loss, str) or type(loss).__name__ in _NAMES:
        return [""]
    return list(loss.output_names)


def loss_settings(loss, prefix=""):
    """The job settings of a loss: a shoal or neuralforecast loss object (recognised by class
    name and attributes) or a name ("mae", "mse", "rmse", "mape", "smape", "huber"). Keys are
    loss, huber_delta, quantile, loss_seasonality and horizon_weight, each with `prefix`
    ("valid_" for valid_loss); only the parameters the loss has are given."""
    if isinstance(loss, str):
        name = loss.lower()
        if name not in ("mae", "mse", "rmse", "mape", "smape", "huber"):
            raise ValueError(f"loss {loss!r}: give a loss object for mase and quantile, or one "
                             f"of mae, mse, rmse, mape, smape, huber")
        return {prefix + "loss": name}
    kind = type(loss).__name__
    if kind == "MQLoss":
        out = {prefix + "loss": "mqloss", prefix + "loss_quantiles": _quantiles_of(loss)}
    elif kind == "DistributionLoss":
        dist = getattr(loss, "distribution", None)
        if dist not in _DISTRIBUTIONS:
            raise NotImplementedError(f"DistributionLoss({dist!r}) is not supported by shoal; "
                                      f"use 'Normal', 'StudentT' or 'Poisson'")
        out = {prefix + "loss": _DISTRIBUTIONS[dist][0],
               prefix + "loss_quantiles": _quantiles_of(loss),
               prefix + "num_samples": int(loss.num_samples),
               prefix + "return_params": bool(loss.return_params)}
    elif kind == "GMM":
        for name in ("batch_correlation", "horizon_correlation"):
            if getattr(loss, name, False):
                raise NotImplementedError(f"GMM({name}=True) is not supported by shoal")
        out = {prefix + "loss": "gmm",
               prefix + "loss_quantiles": _quantiles_of(loss),
               prefix + "num_samples": int(loss.num_samples),
               prefix + "return_params": bool(loss.return_params),
               prefix + "loss_n_components": int(loss.n_components),
               prefix + "loss_weighted": bool(loss.weighted)}
    elif kind not in _NAMES:
        raise _refuse(kind)
    else:
        out = {prefix + "loss": _NAMES[kind]}
    if kind == "HuberLoss":
        out[prefix + "huber_delta"] = float(getattr(loss, "delta", 1.0))
    elif kind == "QuantileLoss":
        out[prefix + "quantile"] = float(loss.q)
    elif kind == "MASE":
        out[prefix + "loss_seasonality"] = int(loss.seasonality)
    weights = _weights(getattr(loss, "horizon_weight", None))
    if weights is not None:
        out[prefix + "horizon_weight"] = weights
    return out
