"""Bad frames raise ValueError naming the column and the row."""

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import make_panel


def nf(n_series=3, **kw):
    return shoal.NeuralForecast([shoal.TSMixerx(h=4, input_size=12, n_series=n_series,
                                                max_steps=2, **kw)], freq="ME")


def test_missing_column(panel):
    with pytest.raises(ValueError, match=r"df is missing column 'y'"):
        nf().fit(panel.drop(columns="y"))
    with pytest.raises(ValueError, match=r"missing column 'promo'"):
        nf(futr_exog_list=["promo"]).fit(panel)


def test_nan_in_y_names_row(panel):
    panel.loc[17, "y"] = np.nan
    with pytest.raises(ValueError, match=r"column 'y' has NaN at row 17 \(unique_id='s0'"):
        nf().fit(panel)


def test_duplicate_id_ds_names_row(panel):
    dup = pd.concat([panel, panel.iloc[[5]]], ignore_index=True)
    with pytest.raises(ValueError, match=r"duplicate \(unique_id, ds\) at row .*unique_id='s0'"):
        nf().fit(dup)


def test_wrong_types(panel):
    with pytest.raises(ValueError, match="pandas DataFrame"):
        nf().fit(panel.to_numpy())
    bad = panel.assign(ds=panel["ds"].astype(str))
    with pytest.raises(ValueError, match="column 'ds' must hold timestamps or integers"):
        nf().fit(bad)
    with pytest.raises(ValueError, match="integer freq"):
        shoal.NeuralForecast([shoal.TSMixer(h=2, input_size=4, n_series=3)], freq=1).fit(panel)


def test_n_series_mismatch(panel):
    with pytest.raises(ValueError, match=r"n_series=2 but df has 3 series.*per_series=True"):
        nf(n_series=2).fit(panel)
    with pytest.raises(ValueError, match="needs n_series=1"):
        shoal.NeuralForecast([shoal.TSMixer(h=2, input_size=4, n_series=3)], freq="ME",
                             per_series=True)


def test_futr_df_rows_missing(exog_panel):
    f = nf(futr_exog_list=["promo"]).fit(exog_panel)
    with pytest.raises(ValueError, match="needs futr_df"):
        f.predict()
    futr = f.make_future_dataframe().assign(promo=1.0).iloc[1:]
    with pytest.raises(ValueError, match=r"futr_df lacks column 'promo' for unique_id 's0'"):
        f.predict(futr_df=futr)


def test_static_df_problems(panel):
    m = nf(stat_exog_list=["size"])
    with pytest.raises(ValueError, match="needs static_df"):
        m.fit(panel)
    static = pd.DataFrame({"unique_id": ["s0", "s1"], "size": [1.0, 2.0]})
    with pytest.raises(ValueError, match="static_df has no row for unique_id 's2'"):
        m.fit(panel, static_df=static)


def test_too_short_series_is_a_value_error():
    df = make_panel(length=10)
    with pytest.raises(ValueError, match="too short|short"):
        nf(n_series=3).fit(df)


def test_unsupported_arguments():
    with pytest.raises(NotImplementedError, match="exclude_insample_y"):
        shoal.TSMixerx(h=2, input_size=4, n_series=1, exclude_insample_y=True)
    with pytest.raises(ValueError, match="h must be a positive integer"):
        shoal.TSMixerx(h=0, input_size=4, n_series=1)


def test_predict_before_fit(panel):
    with pytest.raises(ValueError, match="not fitted|needs df"):
        nf().predict()


def test_out_of_range_ints_are_value_errors(panel):
    # Never a C++ cast error or a nanobind signature dump, and never a wrapped value.
    for bad in (-1, 2**64, 1.5, True):
        with pytest.raises(ValueError, match=r"seed must be"):
            shoal.NCF(seed=bad)
    for kw in ({"threads": -1}, {"threads": 2**40}, {"epochs": 0}, {"factors": 2**31}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            shoal.NCF(**kw)
    assert shoal.NCF(seed=2**64 - 1).seed == 2**64 - 1
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match=r"random_seed"):
            nf(random_seed=bad).fit(panel)


def test_integer_freq_must_be_positive():
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match=r"freq"):
            shoal.NeuralForecast([shoal.TSMixerx(h=4, input_size=12, n_series=1)], freq=bad)
    with pytest.raises(ValueError, match=r"workers"):
        shoal.NeuralForecast([shoal.TSMixerx(h=4, input_size=12, n_series=1)], freq=1,
                             workers=-1)
