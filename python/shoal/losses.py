"""Point losses by neuralforecast's class names and arguments, so `loss=MAE()` reads the same in
both, and `loss_settings`, which turns a loss object (shoal's or neuralforecast's) into the job
settings the C++ trainer reads (train/forecast.cpp: loss, huber_delta, quantile,
loss_seasonality, horizon_weight; with prefix "valid_", those of valid_loss)."""


def _weights(horizon_weight):
    """A horizon weight (None, a list, a numpy array or a torch tensor) as a list of floats."""
    if horizon_weight is None:
        return None
    if hasattr(horizon_weight, "detach"):  # torch.Tensor (neuralforecast stores one)
        horizon_weight = horizon_weight.detach().cpu().numpy()
    if hasattr(horizon_weight, "reshape"):
        horizon_weight = horizon_weight.reshape(-1).tolist()
    return [float(w) for w in horizon_weight]


class _PointLoss:
    # neuralforecast's flags, read by its examples' plotting code.
    is_distribution_output = False
    outputsize_multiplier = 1

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
        self.seasonality = int(seasonality)

    def _args(self):
        return [f"seasonality={self.seasonality}"]


class HuberLoss(_PointLoss):
    """torch's Huber loss with threshold delta."""

    def __init__(self, delta=1.0, horizon_weight=None):
        super().__init__(horizon_weight)
        self.delta = float(delta)

    def _args(self):
        return [f"delta={self.delta}"]


class QuantileLoss(_PointLoss):
    """Pinball loss of quantile q in (0, 1)."""

    def __init__(self, q, horizon_weight=None):
        super().__init__(horizon_weight)
        self.q = float(q)

    def _args(self):
        return [f"q={self.q}"]


# neuralforecast's losses that need a model with several outputs per step (or a distribution
# head): shoal trains single-output models only, so they are refused by name.
_MULTI_OUTPUT = ("MQLoss", "IQLoss", "DistributionLoss", "PMM", "GMM", "NBMM", "HuberQLoss",
                 "HuberMQLoss", "HuberIQLoss", "sCRPS")
# Single-output losses of neuralforecast that shoal does not implement.
_OTHER = ("relMSE", "TukeyLoss", "Accuracy", "FreDF")


def _refuse(name):
    if name in _MULTI_OUTPUT:
        return NotImplementedError(
            f"{name} needs a multi-output model, which shoal does not train yet; use MAE, MSE, "
            f"RMSE, MAPE, SMAPE, MASE, HuberLoss or QuantileLoss")
    return NotImplementedError(
        f"loss {name} is not supported by shoal (MAE, MSE, RMSE, MAPE, SMAPE, MASE, HuberLoss "
        f"or QuantileLoss)")


def _refused_class(name):
    def __init__(self, *args, **kwargs):
        raise _refuse(name)
    return type(name, (), {"__init__": __init__, "__doc__": f"Not supported: {name}."})


for _name in _MULTI_OUTPUT + _OTHER:
    globals()[_name] = _refused_class(_name)
del _name

_NAMES = {"MAE": "mae", "MSE": "mse", "RMSE": "rmse", "MAPE": "mape", "SMAPE": "smape",
          "MASE": "mase", "HuberLoss": "huber", "QuantileLoss": "quantile"}


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
    if kind not in _NAMES:
        raise _refuse(kind)
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
