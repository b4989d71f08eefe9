"""Calendar features as neuralforecast.utils.augment_calendar_df adds them: each a value in
[-0.5, 0.5] of the date's position in a larger period, the set chosen by frequency."""

from __future__ import annotations

import numpy as np
import pandas as pd

# feature name -> position in [-0.5, 0.5] of a DatetimeIndex
_FEATURES = {
    "minutesecond": lambda ix: ix.second / 59.0 - 0.5,
    "hourminute": lambda ix: ix.minute / 59.0 - 0.5,
    "dayhour": lambda ix: ix.hour / 23.0 - 0.5,
    "weekday": lambda ix: ix.day_of_week / 6.0 - 0.5,
    "monthday": lambda ix: (ix.day - 1) / 30.0 - 0.5,
    "yearday": lambda ix: (ix.day_of_year - 1) / 365.0 - 0.5,
    "month": lambda ix: (ix.month - 1) / 11.0 - 0.5,
    "yearweek": lambda ix: (ix.isocalendar().week.to_numpy() - 1) / 52.0 - 0.5,
}
_BY_FREQ = {
    "Q": ["month"], "M": ["month"], "MS": ["month"],
    "W": ["monthday", "yearweek"],
    "D": ["weekday", "monthday", "yearday"], "B": ["weekday", "monthday", "yearday"],
    "H": ["dayhour", "weekday", "monthday", "yearday"],
    "T": ["hourminute", "dayhour", "weekday", "monthday", "yearday"],
    "S": ["minutesecond", "hourminute", "dayhour", "weekday", "monthday", "yearday"],
}


def augment_calendar_df(df: pd.DataFrame, freq: str = "H"):
    """df with the calendar columns of `freq` added (Q, M, MS, W, D, B, H, T, S), and their
    names: (frame, columns)."""
    if freq not in _BY_FREQ:
        raise ValueError(f"augment_calendar_df: frequency {freq!r} is not supported "
                         f"(use one of {', '.join(_BY_FREQ)})")
    ix = pd.DatetimeIndex(pd.to_datetime(df.ds.values))
    cols = _BY_FREQ[freq]
    feats = pd.DataFrame({c: np.asarray(_FEATURES[c](ix), dtype=np.float64) for c in cols})
    return pd.concat([df.copy(), feats], axis=1), list(cols)
