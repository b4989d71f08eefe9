"""cross_validation(refit=...) as neuralforecast 3.3.0 runs it: windows 0, refit, 2 * refit...
fit on the data up to their cutoff (continuing from the previous fit), the others predict from
the data up to their cutoff with the last fit; the frame is laid out as with refit=False."""

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import FAST, make_panel


def model():
    return shoal.NLinear(h=3, input_size=6, random_seed=4, **FAST)


def upto(df, rows_dropped):
    pos = df.groupby("unique_id").cumcount()
    size = df.groupby("unique_id")["y"].transform("size")
    return df[pos < size - rows_dropped]


def manual(df, n_windows, step, refit):
    nf = shoal.NeuralForecast([model()], freq="ME")
    test_size = 3 + step * (n_windows - 1)
    folds = []
    for k in range(n_windows):
        train = upto(df, test_size - k * step)
        if k % refit == 0:
            nf.fit(train)
            p = nf.predict()
        else:
            p = nf.predict(df=train)
        folds.append(p["NLinear"].to_numpy())
    return folds


@pytest.mark.parametrize("refit", [True, 2])
def test_refit_windows_fit_up_to_their_cutoff(refit):
    df = make_panel(n_series=2, length=30)
    cv = shoal.NeuralForecast([model()], freq="ME").cross_validation(
        df, n_windows=3, step_size=2, refit=refit)
    want = manual(df, 3, 2, int(refit))
    window = cv.groupby("unique_id")["cutoff"].rank(method="dense").astype(int) - 1
    for k in range(3):  # the series have unequal ends: window k's cutoffs differ per series
        np.testing.assert_array_equal(cv.loc[window == k, "NLinear"], want[k])
    if refit == 2:  # window 1 predicted with window 0's fit, window 2 refitted
        assert not np.array_equal(want[1], manual(df, 3, 2, 1)[1])


def test_refit_frame_has_the_layout_of_refit_false():
    df = make_panel(n_series=3, length=30)
    a = shoal.NeuralForecast([model()], freq="ME").cross_validation(df, n_windows=3, step_size=2)
    b = shoal.NeuralForecast([model()], freq="ME").cross_validation(df, n_windows=3, step_size=2,
                                                                    refit=True)
    assert list(a.columns) == list(b.columns)
    assert (a.dtypes == b.dtypes).all()
    pd.testing.assert_frame_equal(a.drop(columns="NLinear"), b.drop(columns="NLinear"))
    assert not np.array_equal(a["NLinear"], b["NLinear"])
    c = shoal.NeuralForecast([model()], freq="ME").cross_validation(df, n_windows=3, step_size=2,
                                                                    refit=False)
    np.testing.assert_array_equal(a["NLinear"], c["NLinear"])


def test_refit_arguments():
    df = make_panel(n_series=2, length=30)
    nf = shoal.NeuralForecast([model()], freq="ME")
    with pytest.raises(ValueError, match="refit"):
        nf.cross_validation(df, refit=-1)
    with pytest.raises(Exception, match="only supported with refit=True"):
        nf.cross_validation(df, prediction_intervals=shoal.utils.PredictionIntervals(),
                            level=[80])


def test_refit_with_prediction_intervals_adds_the_interval_columns():
    df = make_panel(n_series=2, length=40)
    cv = shoal.NeuralForecast([model()], freq="ME").cross_validation(
        df, n_windows=2, step_size=3, refit=True,
        prediction_intervals=shoal.utils.PredictionIntervals(n_windows=2), level=[80])
    assert list(cv.columns) == ["unique_id", "ds", "cutoff", "NLinear", "NLinear-lo-80",
                                "NLinear-hi-80", "y"]
    assert (cv["NLinear-lo-80"] <= cv["NLinear"]).all()
    assert (cv["NLinear"] <= cv["NLinear-hi-80"]).all()
