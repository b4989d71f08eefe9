"""Inputs are checked at the edge, naming the column: splits refuse missing or mixed ids and
times and parse text times (never order them as text), a categorical column of another type
than the fit's is refused, and messages name the user's own ids."""

import numpy as np
import pandas as pd
import pytest

import shoal


def interactions():
    return pd.DataFrame({"user": [1, 1, 1, 2, 2, 3, 3],
                         "item": [10, 11, 12, 10, 13, 11, 12],
                         "timestamp": [5, 9, 10, 3, 4, 1, 2]})


SPLITS = [lambda df, **kw: shoal.split_leave_last_out(df, **kw),
          lambda df, **kw: shoal.split_chrono(df, ratio=0.5, **kw)]


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("times, match", [
    ([5, 9, np.nan, 3, 4, 1, 2], "column 'timestamp' has a missing timestamp at row 2"),
    (pd.to_datetime(["2024-01-05", "2024-01-09", None, "2024-01-03", "2024-01-04",
                     "2024-01-01", "2024-01-02"]), "missing timestamp at row 2"),
    ([5, 9, "10", 3, 4, 1, 2], "column 'timestamp' must hold numbers or datetimes"),
    (["5", "9", "10", "3", "4", "1", "2"], "column 'timestamp' holds times that do not parse"),
    (["2024-01-05", "01/09/2024", "2024-01-10", "2024-01-03", "2024-01-04", "2024-01-01",
      "2024-01-02"], "column 'timestamp' holds times that do not parse"),
    ([True, False, True, False, True, False, True], "column 'timestamp' must hold numbers"),
])
def test_bad_times_are_refused_naming_the_column(split, times, match):
    df = interactions().assign(timestamp=times)
    with pytest.raises(ValueError, match=match):
        split(df)


@pytest.mark.parametrize("split", SPLITS)
def test_text_times_are_parsed_as_dates_not_compared_as_text(split):
    """As text "2024-01-10" < "2024-01-9" would hold out the 9th; parsed, the 10th is last."""
    days = [5, 9, 10, 3, 4, 1, 2]
    as_text = interactions().assign(timestamp=[f"2024-01-{d}" for d in days])
    as_dates = interactions().assign(timestamp=pd.to_datetime(as_text["timestamp"]))
    as_numbers = interactions()
    want = split(as_numbers)
    for df in (as_text, as_dates):
        train, test = split(df)
        assert list(train.index) == list(want[0].index)
        assert list(test.index) == list(want[1].index)
    _, test = shoal.split_leave_last_out(as_text)
    assert test.loc[test["user"] == 1, "item"].tolist() == [12]


@pytest.mark.parametrize("column", ["user", "item"])
def test_missing_ids_are_refused_naming_the_column(column):
    df = interactions().astype({column: object})
    df.loc[3, column] = None
    with pytest.raises(ValueError, match=f"column '{column}' has a missing id at row 3"):
        shoal.split_leave_last_out(df)
    df = interactions().astype({column: float})
    df.loc[4, column] = np.nan
    with pytest.raises(ValueError, match=f"column '{column}' has a missing id at row 4"):
        shoal.split_random_leave_one_out(df, user_col=column)


def test_mixed_id_types_get_a_clear_error():
    df = interactions().astype({"user": object})
    df.loc[0, "user"] = "a"
    for split in (shoal.split_leave_last_out, shoal.split_random_leave_one_out):
        with pytest.raises(ValueError, match="column 'user' mixes ids of types int, str"):
            split(df)


def test_mixed_id_types_are_refused_by_ncf_fit():
    """Once, [1, "a"] became the text ids '1' and 'a' at recommend, so user 1 was unknown."""
    df = pd.DataFrame({"user": [1, "a", 2, 1], "item": [1, 2, 3, 2]})
    with pytest.raises(ValueError, match="train_df column 'user' mixes ids of types int, str"):
        shoal.NCF(epochs=1, threads=1).fit(df)


def test_string_ids_still_split():
    df = interactions().assign(user=lambda d: d["user"].map({1: "u1", 2: "u2", 3: "u3"}))
    train, test = shoal.split_leave_last_out(df)
    assert test["user"].tolist() == ["u1", "u2", "u3"]
    assert len(train) + len(test) == len(df)


def test_a_user_with_every_item_is_named_by_its_id():
    """Internal row 0 is user 777; the message names 777."""
    df = pd.DataFrame({"user": [777, 777, 5, 5], "item": ["a", "b", "a", "a"]})
    with pytest.raises(ValueError, match="user 777 has every one of the 2 items"):
        shoal.NCF(epochs=1, threads=1).fit(df)
    strings = df.assign(user=["x,y", "x,y", "z", "z"])
    with pytest.raises(ValueError, match="user 'x,y' has every one"):
        shoal.NCF(epochs=1, threads=1).fit(strings)
    shoal.NCF(epochs=1, threads=1).fit(df, items=["c"])  # one item left to sample


# ---- a categorical column's type in futr_df must be the fit's ----

H = 2


def categorical_frames(codes):
    """df and futr_df with a future categorical column 'day' holding `codes` (the fit's
    values), 2 series."""
    rows, futr = [], []
    for i in range(2):
        for k in range(30 + H):
            day = codes[k % len(codes)]
            (rows if k < 30 else futr).append((f"s{i}", k, float(k % 3 + i), day))
    df = pd.DataFrame(rows, columns=["unique_id", "ds", "y", "day"])
    fut = pd.DataFrame(futr, columns=["unique_id", "ds", "y", "day"]).drop(columns="y")
    return df, fut


def fitted(df):
    model = shoal.MLP(h=H, input_size=6, max_steps=2, futr_exog_list=["day"],
                      cat_exog_list=["day"], categorical_cardinalities={"day": 3})
    return shoal.NeuralForecast([model], freq=1).fit(df)


def test_futr_df_categorical_of_another_type_is_refused():
    df, futr = categorical_frames([1, 2, 3])
    nf = fitted(df)
    nf.predict(futr_df=futr)  # the fit's type: fine
    nf.predict(futr_df=futr.assign(day=futr["day"].astype(float)))  # numbers still match
    with pytest.raises(ValueError, match="futr_df column 'day' holds text values but the fit "
                                         "saw number ones"):
        nf.predict(futr_df=futr.assign(day=futr["day"].astype(str)))
    df, futr = categorical_frames(["a", "b", "c"])
    nf = fitted(df)
    with pytest.raises(ValueError, match="futr_df column 'day' holds number values"):
        nf.predict(futr_df=futr.assign(day=1))
    nf.predict(futr_df=futr.assign(day="unseen"))  # an unseen value of the fit's type: code 0
