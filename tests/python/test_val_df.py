"""fit(val_df=...) as neuralforecast 3.3.0 runs it: val_df's rows are appended to each series
of df whatever their dates, the fit validates on them as on the last val_size rows (early
stopping included), and a later predict forecasts after val_df's end."""

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import make_panel

H = 3


def model():
    return shoal.NLinear(h=H, input_size=6, random_seed=2, max_steps=60, val_check_steps=5,
                         early_stop_patience_steps=2)


def split(df, n_val):
    pos = df.groupby("unique_id").cumcount()
    size = df.groupby("unique_id")["y"].transform("size")
    return df[pos < size - n_val], df[pos >= size - n_val]


def test_val_df_is_val_size_on_the_appended_rows():
    df = make_panel(n_series=3, length=36)
    train, val = split(df, 6)
    a = shoal.NeuralForecast([model()], freq="ME")
    fa = a.fit(train, val_df=val).predict()
    b = shoal.NeuralForecast([model()], freq="ME")
    fb = b.fit(df, val_size=6).predict()
    pd.testing.assert_frame_equal(fa, fb)
    assert a.fit_info[0]["val_losses"] == b.fit_info[0]["val_losses"]
    assert a.fit_info[0]["val_losses"]  # validated (and stopped early or ran out)
    # forecasts follow val_df's end, as neuralforecast's last_dates do
    last = val.groupby("unique_id")["ds"].max()
    first = fa.groupby("unique_id")["ds"].min()
    assert (first == last + pd.offsets.MonthEnd(1)).all()


def test_val_df_dates_do_not_matter():
    df = make_panel(n_series=2, length=36)
    train, val = split(df, 6)
    early = val.assign(ds=val["ds"] - pd.offsets.MonthEnd(300))
    a = shoal.NeuralForecast([model()], freq="ME").fit(train, val_df=val)
    b = shoal.NeuralForecast([model()], freq="ME").fit(train, val_df=early)
    assert a.fit_info[0]["val_losses"] == b.fit_info[0]["val_losses"]
    np.testing.assert_array_equal(a.predict()["NLinear"], b.predict()["NLinear"])


def test_val_df_errors():
    df = make_panel(n_series=2, length=36)
    train, val = split(df, 6)
    nf = shoal.NeuralForecast([model()], freq="ME")
    with pytest.raises(ValueError, match="cannot be set together"):
        nf.fit(train, val_df=val, val_size=3)
    with pytest.raises(ValueError, match="equal length"):
        nf.fit(train, val_df=val.iloc[1:])
    with pytest.raises(ValueError, match="different number of groups"):
        nf.fit(train, val_df=val[val["unique_id"] == "s0"])
