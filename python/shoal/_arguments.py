"""Checks of the arguments the Python API shares (counts, interval levels, quantiles): each
value is used as given or refused with TypeError (wrong type) or ValueError (out of range)
naming the argument, never rounded, wrapped or passed on to produce odd columns."""

from __future__ import annotations

import numbers
import os

import numpy as np


def count(value, name, lo=1, hi=2**31 - 1):
    """`value` as an int in [lo, hi]: 2.7, True or "3" raise TypeError, -3 ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    return int(value)


def thread_count(value, name):
    """`value` as a thread count: 0 (every CPU this process may use) up to those CPUs. More
    workers than CPUs only wait on each other, and thousands of them exhaust the process."""
    return count(value, name, 0, len(os.sched_getaffinity(0)))


def number(value, name):
    """`value` as a finite float: True or "0.5" raise TypeError, NaN and inf ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating,
                                                                     np.integer)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not np.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def _numbers(values, name):
    if hasattr(values, "detach"):  # a torch tensor (neuralforecast stores quantiles so)
        values = values.detach().cpu().numpy()
    if isinstance(values, (str, bytes, numbers.Number)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list of numbers, got {values!r}")
    out = []
    for v in np.asarray(values, dtype=object).reshape(-1):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.floating,
                                                                 np.integer)):
            raise TypeError(f"{name} must be a list of numbers, got {v!r} in it")
        out.append(v.item() if isinstance(v, np.generic) else v)
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out


def levels(level, name="level"):
    """Interval levels: numbers in [0, 100) (a level l spans the 50 ∓ l/2 percentiles)."""
    out = _numbers(level, name)
    for lv in out:
        if not 0 <= lv < 100:
            raise ValueError(f"{name} must lie in [0, 100), got {lv}")
    return out


def quantiles(values, name="quantiles"):
    """Quantiles: numbers in (0, 1)."""
    out = _numbers(values, name)
    for q in out:
        if not 0 < q < 1:
            raise ValueError(f"{name} must lie in (0, 1), got {q}")
    return [float(q) for q in out]
