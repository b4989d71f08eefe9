"""The small data sets neuralforecast's examples use (neuralforecast.utils), so that they run on
shoal with only their imports changed.

AirPassengers: Box & Jenkins' monthly international airline passengers (thousands), January
1949 to December 1960, 144 values. AirPassengersDF is that series as one long-format frame
(unique_id 1.0, month-end dates); AirPassengersPanel holds two series, "Airline1" (the data) and
"Airline2" (the data + 300), with a future exogenous "trend" (the row number over the whole
panel) and "y_[lag12]" (y twelve months before, y itself in the first year);
AirPassengersStatic gives each airline two dummies, airline1 (0, 1) and airline2 (1, 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

AirPassengers = np.array([
    112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118,
    115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140,
    145, 150, 178, 163, 172, 178, 199, 199, 184, 162, 146, 166,
    171, 180, 193, 181, 183, 218, 230, 242, 209, 191, 172, 194,
    196, 196, 236, 235, 229, 243, 264, 272, 237, 211, 180, 201,
    204, 188, 235, 227, 234, 264, 302, 293, 259, 229, 203, 229,
    242, 233, 267, 269, 270, 315, 364, 347, 312, 274, 237, 278,
    284, 277, 317, 313, 318, 374, 413, 405, 355, 306, 271, 306,
    315, 301, 356, 348, 355, 422, 465, 467, 404, 347, 305, 336,
    340, 318, 362, 348, 363, 435, 491, 505, 404, 359, 310, 337,
    360, 342, 406, 396, 420, 472, 548, 559, 463, 407, 362, 405,
    417, 391, 419, 461, 472, 535, 622, 606, 508, 461, 390, 432,
], dtype=np.float32)

_MONTHS = pd.date_range(start="1949-01-01", periods=len(AirPassengers), freq=pd.offsets.MonthEnd())

AirPassengersDF = pd.DataFrame(
    {"unique_id": np.ones(len(AirPassengers)), "ds": _MONTHS, "y": AirPassengers})


def _panel() -> pd.DataFrame:
    n = len(AirPassengers)
    panel = pd.DataFrame({
        "unique_id": np.repeat(["Airline1", "Airline2"], n),
        "ds": np.tile(_MONTHS.to_numpy(), 2),
        "y": np.concatenate([AirPassengers, AirPassengers + 300]),
    })
    lag12 = panel.groupby("unique_id")["y"].shift(periods=12).reset_index(drop=True)
    panel["trend"] = range(len(panel))
    panel["y_[lag12]"] = lag12.fillna(panel["y"])
    return panel


AirPassengersPanel = _panel()

AirPassengersStatic = pd.DataFrame(
    {"unique_id": ["Airline1", "Airline2"], "airline1": [0, 1], "airline2": [1, 0]})
