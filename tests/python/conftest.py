"""Small data for the Python suite: a few monthly series with a trend and a season, so that a
short fit is fast (CI has 2 cores) and its forecasts are still meaningful."""

import os
import pathlib

import numpy as np
import pandas as pd
import pytest

# The shared data sets (../shared/data beside the repository, or $SHOAL_DATA).
DATA = pathlib.Path(os.environ.get("SHOAL_DATA") or
                    pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data")


def make_panel(n_series=3, length=48, seed=0, exog=False, int_ds=False, ids=None):
    rng = np.random.default_rng(seed)
    frames = []
    ids = ids or [f"s{i}" for i in range(n_series)]
    for k, uid in enumerate(ids):
        n = length - 3 * k  # unequal lengths: the panel is left-padded
        t = np.arange(n)
        y = 10 + 0.2 * t + 3 * np.sin(2 * np.pi * t / 12) + rng.normal(scale=0.3, size=n) + k
        ds = np.arange(n) if int_ds else pd.date_range("2000-01-31", periods=n, freq="ME")
        f = pd.DataFrame({"unique_id": uid, "ds": ds, "y": y})
        if exog:
            f["promo"] = (t % 6 == 0).astype(float)
            f["temp"] = rng.normal(size=n)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def panel():
    return make_panel()


@pytest.fixture
def exog_panel():
    return make_panel(exog=True)


FAST = dict(max_steps=20, val_check_steps=10)
