"""neuralforecast.utils' pieces: the example data sets (AirPassengers, AirPassengersDF,
AirPassengersPanel, AirPassengersStatic), augment_calendar_df, and the prediction intervals:
`PredictionIntervals` (what fit calibrates) and the conformal intervals predict adds for models
trained with a point loss.

Conformal calibration (neuralforecast's): fit runs a cross_validation of `n_windows` windows
`step_size` apart on the training frame and keeps each model's absolute errors, the conformity
scores s[series, window, step]. predict then widens each point forecast ŷ:
  conformal_distribution: the quantiles, over the 2·n_windows values ŷ ± s[·, w, t], at the
                          cuts of the requested levels (numpy's linear interpolation);
  conformal_error:        ŷ ∓ the quantile of s over the windows at the same cuts.
A level l gives the cuts (100 − l) / 200 and 1 − (100 − l) / 200, and the columns
"<model>-lo-<l>" (widest first) and "<model>-hi-<l>"; quantiles q give "<model>-ql<q>".
"""

from __future__ import annotations

import numpy as np

from . import _arguments
from ._calendar import augment_calendar_df  # noqa: F401
from ._datasets import (AirPassengers, AirPassengersDF, AirPassengersPanel,  # noqa: F401
                        AirPassengersStatic)


class PredictionIntervals:
    """Settings of conformal prediction intervals, with neuralforecast's names and defaults."""

    def __init__(self, n_windows: int = 2, method: str = "conformal_distribution",
                 step_size: int = 1):
        _arguments.count(n_windows, "n_windows", lo=0)
        if n_windows < 2:
            raise ValueError("You need at least two windows to compute conformal intervals")
        allowed_methods = ["conformal_error", "conformal_distribution"]
        if method not in allowed_methods:
            raise ValueError(f"method must be one of {allowed_methods}")
        if _arguments.count(step_size, "step_size", lo=0) < 1:
            raise ValueError("step_size must be at least 1")
        self.n_windows = n_windows
        self.method = method
        self.step_size = step_size

    def __repr__(self):
        return (f"PredictionIntervals(n_windows={self.n_windows}, method='{self.method}', "
                f"step_size={self.step_size})")


def level_to_quantiles(level):
    """[80, 90] -> [0.05, 0.1, 0.9, 0.95]."""
    return sorted({q for lv in set(level) for q in ((50 - lv / 2) / 100, (50 + lv / 2) / 100)})


def quantiles_to_level(quantiles):
    """[0.1, 0.5, 0.9] -> [0, 80]."""
    return sorted({int(round(100 - 200 * (q * (q < 0.5) + (1 - q) * (q >= 0.5)), 2))
                   for q in set(quantiles)})


def _cuts(level, quantiles):
    if quantiles is not None:
        return list(quantiles)
    alphas = [100 - lv for lv in level]
    return [a / 200 for a in reversed(alphas)] + [1 - a / 200 for a in alphas]


def _columns(model, level, quantiles, cuts):
    if quantiles is not None:
        return [f"{model}-ql{q}" for q in cuts]
    return [f"{model}-lo-{lv}" for lv in reversed(level)] + [f"{model}-hi-{lv}" for lv in level]


def conformal_intervals(method, forecasts, scores, model, level=None, quantiles=None):
    """{column: values} of the intervals around `forecasts` [n_series, h] from the conformity
    scores [n_series, n_windows, h], in neuralforecast's column order."""
    cuts = _cuts(level, quantiles)
    mean = forecasts[None, :, :]  # [1, n, h]
    s = scores.transpose(1, 0, 2)  # [windows, n, h]
    if method == "conformal_distribution":
        q = np.quantile(np.concatenate([mean - s, mean + s]), cuts, axis=0)  # [cuts, n, h]
    else:
        sq = np.quantile(s, cuts, axis=0)
        q = np.stack([mean[0] - sq[::-1][i] if c < 0.5 else mean[0] + sq[i] if c > 0.5
                      else mean[0] for i, c in enumerate(cuts)])
    return dict(zip(_columns(model, level, quantiles, cuts), q))
