"""shoal.utils' example data (neuralforecast.utils' AirPassengers frames) and calendar features,
checked against known values of the data set and of the calendar."""

import numpy as np
import pandas as pd
import pytest

from shoal.utils import (AirPassengers, AirPassengersDF, AirPassengersPanel,
                         AirPassengersStatic, augment_calendar_df)


def test_air_passengers():
    assert AirPassengers.dtype == np.float32 and AirPassengers.shape == (144,)
    assert AirPassengers[:3].tolist() == [112, 118, 132] and AirPassengers[-1] == 432
    assert AirPassengers.sum() == 40363  # mean 280.30, as R's datasets::AirPassengers
    assert AirPassengersDF["ds"].iloc[0] == pd.Timestamp("1949-01-31")
    assert AirPassengersDF["ds"].iloc[-1] == pd.Timestamp("1960-12-31")


def test_air_passengers_panel_and_static():
    p = AirPassengersPanel
    assert list(p.columns) == ["unique_id", "ds", "y", "trend", "y_[lag12]"]
    a1, a2 = p[p.unique_id == "Airline1"], p[p.unique_id == "Airline2"]
    np.testing.assert_array_equal(a2["y"].to_numpy() - 300, a1["y"].to_numpy())
    assert p["trend"].tolist() == list(range(288))
    # A year's lag, the first year filled with y itself.
    np.testing.assert_array_equal(a1["y_[lag12]"].to_numpy()[12:], a1["y"].to_numpy()[:-12])
    np.testing.assert_array_equal(a1["y_[lag12]"].to_numpy()[:12], a1["y"].to_numpy()[:12])
    assert AirPassengersStatic.to_dict("list") == {
        "unique_id": ["Airline1", "Airline2"], "airline1": [0, 1], "airline2": [1, 0]}


def test_augment_calendar_df():
    df = pd.DataFrame({"unique_id": 1, "ds": pd.to_datetime(["2021-01-01 00:00:00",
                                                             "2021-12-31 23:59:59"]), "y": 0.0})
    out, cols = augment_calendar_df(df, freq="S")
    assert cols == ["minutesecond", "hourminute", "dayhour", "weekday", "monthday", "yearday"]
    np.testing.assert_allclose(out[cols].iloc[0], [-0.5, -0.5, -0.5, 4 / 6 - 0.5, -0.5, -0.5])
    np.testing.assert_allclose(out[cols].iloc[1], [0.5, 0.5, 0.5, 4 / 6 - 0.5, 0.5, 364 / 365 - 0.5])
    out, cols = augment_calendar_df(AirPassengersPanel, freq="M")
    assert cols == ["month"] and out["month"].iloc[0] == -0.5 and out["month"].iloc[11] == 0.5
    assert list(out.columns[:5]) == list(AirPassengersPanel.columns)
    with pytest.raises(ValueError, match="frequency 'X'"):
        augment_calendar_df(df, freq="X")
