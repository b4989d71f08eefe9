"""Point losses by neuralforecast's class names, so `loss=MAE()` reads the same in both."""


class MAE:
    def __repr__(self):
        return "MAE()"


class MSE:
    def __repr__(self):
        return "MSE()"


class HuberLoss:
    def __init__(self, delta=1.0):
        self.delta = float(delta)

    def __repr__(self):
        return f"HuberLoss(delta={self.delta})"


def loss_name(loss):
    """(shoal loss name, huber delta) of a string or a loss object (shoal's or neuralforecast's,
    recognised by class name)."""
    if isinstance(loss, str):
        name = loss.lower()
        if name in ("mae", "mse", "huber"):
            return name, 1.0
    else:
        kind = type(loss).__name__
        if kind == "MAE":
            return "mae", 1.0
        if kind == "MSE":
            return "mse", 1.0
        if kind == "HuberLoss":
            return "huber", float(getattr(loss, "delta", 1.0))
    raise NotImplementedError(f"loss {loss!r} is not supported by shoal (MAE, MSE or HuberLoss)")
