"""Long-format frames (unique_id, ds, y, exogenous) checked and handed to the C++ core.

The series are ordered as neuralforecast orders them (sorted unique_id); the core sees each one
as a run of rows numbered 0..len-1 and the calendar stays here, with pandas' offsets. Columns that
are already float64 and in sorted order reach the core as views (one copy, into the core's own
table); otherwise they are sorted first.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from . import _core

AVAILABLE = "available_mask"  # neuralforecast's column marking observed target values
SAMPLE_WEIGHT = "sample_weight"  # neuralforecast's per-row training weight


def _require_frame(df, what):
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")


def _require_columns(df, columns, what):
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} is missing column {missing[0]!r} "
                         f"(has {', '.join(map(str, df.columns))})")


def _where(df, pos, id_col, time_col):
    return (f"row {df.index[pos]!r} (unique_id={df[id_col].iloc[pos]!r}, "
            f"ds={df[time_col].iloc[pos]!r})")


def _float_column(df, col, what, id_col, time_col, allow_nan=False, observed=None):
    """col as float64, finite on every row (on the `observed` rows only, when given)."""
    s = df[col]
    try:
        a = s.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} column {col!r} is not numeric ({s.dtype}): {e}") from None
    if not allow_nan:
        bad = ~np.isfinite(a)
        bad = np.flatnonzero(bad if observed is None else bad & observed)
        if bad.size:
            kind = "NaN" if np.isnan(a[bad[0]]) else "an infinite value"
            raise ValueError(f"{what} column {col!r} has {kind} at "
                             f"{_where(df, bad[0], id_col, time_col)}"
                             + (f" and {bad.size - 1} more rows" if bad.size > 1 else ""))
    return a


def _value_kind(v):
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return "number"
    return "text" if isinstance(v, str) else type(v).__name__


def category_codes(column, vocab, what="df"):
    """A categorical column's codes (its values' 1..U; 0 for an unseen or missing one). Values
    of a kind the fit never saw (text for a column fitted on integers) could only read as
    unseen, every one: refused, naming the column."""
    if vocab:
        fitted = {_value_kind(v) for v in vocab}
        given = {_value_kind(v) for v in pd.unique(column.dropna())}
        if given - fitted:
            raise ValueError(
                f"{what} column {column.name!r} holds {' and '.join(sorted(given))} values "
                f"but the fit saw {' and '.join(sorted(fitted))} ones, so none would match a "
                f"category; give the column the fit's type")
    return column.map(vocab).fillna(0).to_numpy(np.float64)


class Series:
    """A checked long frame: series in sorted id order, rows sorted by ds within each."""

    def __init__(self, df, id_col="unique_id", time_col="ds", target_col="y", exog=(),
                 what="df", require_y=True, categories=None):
        """categories: {column: {value: code}}, the categorical exogenous columns, read as
        their codes (shoal._categorical); self.df keeps the values."""
        _require_frame(df, what)
        needed = [id_col, time_col] + ([target_col] if require_y else []) + list(exog)
        _require_columns(df, needed, what)
        if len(df) == 0:
            raise ValueError(f"{what} has no rows")
        if df[id_col].isna().any():
            pos = int(np.flatnonzero(df[id_col].isna().to_numpy())[0])
            raise ValueError(f"{what} column {id_col!r} is missing at row {df.index[pos]!r}")
        ds = df[time_col]
        if ds.isna().any():
            pos = int(np.flatnonzero(ds.isna().to_numpy())[0])
            raise ValueError(f"{what} column {time_col!r} is missing at row {df.index[pos]!r}")
        if not (pd.api.types.is_datetime64_any_dtype(ds) or pd.api.types.is_integer_dtype(ds)):
            raise ValueError(f"{what} column {time_col!r} must hold timestamps or integers, "
                             f"got {ds.dtype}")
        codes, uniques = pd.factorize(df[id_col], sort=True)
        t = ds.to_numpy().view(np.int64) if pd.api.types.is_datetime64_any_dtype(ds) \
            else ds.to_numpy(dtype=np.int64)
        in_order = bool(np.all(np.diff(codes) >= 0)) and bool(
            np.all((np.diff(t) > 0) | (np.diff(codes) > 0)))
        order = None if in_order else np.lexsort((t, codes))
        if order is not None:
            df = df.iloc[order]
            codes, t = codes[order], t[order]
        same = (np.diff(codes) == 0) & (np.diff(t) == 0)
        if same.any():
            pos = int(np.flatnonzero(same)[0]) + 1
            raise ValueError(f"{what} has duplicate ({id_col}, {time_col}) at "
                             f"{_where(df, pos, id_col, time_col)}")
        self.df = df  # sorted
        self.id_col, self.time_col, self.target_col = id_col, time_col, target_col
        self.n_series = len(uniques)
        counts = np.bincount(codes, minlength=self.n_series)
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.lengths = counts.astype(np.int64)
        self.ids = uniques  # sorted unique ids (an Index)
        first = self.offsets[:-1]
        self.id_values = df[id_col].array.take(first)  # the input's id dtype
        self.ds_values = df[time_col].array  # sorted
        self.last_ds = df[time_col].array.take(self.offsets[1:] - 1)
        # neuralforecast's available_mask column: 1 where y was observed, 0 where it is missing
        # (y may then be NaN or anything). Other columns are checked on observed rows only, as
        # neuralforecast checks them; the core reads a missing row like padding (y 0, mask 0).
        self.available = None
        if require_y and AVAILABLE in df.columns:
            self.available = _float_column(df, AVAILABLE, what, id_col, time_col) != 0
        obs = self.available
        self.y = _float_column(df, target_col, what, id_col, time_col, observed=obs) \
            if require_y else None
        categories = categories or {}
        self.exog = {c: (category_codes(df[c], categories[c], what) if c in categories else
                         _float_column(df, c, what, id_col, time_col, observed=obs))
                     for c in exog}
        if obs is not None:  # a missing row's non-finite exogenous values read as 0
            self.exog = {c: np.where(obs | np.isfinite(a), a, 0.0) for c, a in self.exog.items()}
        # neuralforecast's sample_weight column: each training and validation window's loss
        # terms weighted by the mean weight of its output rows. Checked on observed rows.
        self.sample_weight = None
        if require_y and SAMPLE_WEIGHT in df.columns:
            w = pd.to_numeric(df[SAMPLE_WEIGHT], errors="coerce").to_numpy(np.float64)
            seen = w if obs is None else w[obs]
            if np.isnan(seen).any():
                raise ValueError("sample_weight column contains NaN values.")
            if (seen < 0).any():
                raise ValueError("sample_weight column must be non-negative.")
            self.sample_weight = np.where(np.isfinite(w), w, 0.0)
        # Rows at the end of each series that the local scalers neither read nor scale:
        # neuralforecast appends fit(val_df=...)'s rows in data scale (append_validation).
        self.unscaled_tail = 0

    def core(self, exog_names, first_ds=None):
        y = self.y if self.y is not None else np.zeros(len(self.df))
        first = np.zeros(0, dtype=np.int64) if first_ds is None else np.asarray(first_ds, np.int64)
        return core_series(self.offsets, y, [self.exog[c] for c in exog_names], exog_names,
                           first, self.available, self.sample_weight)

    def position_of(self, ids):
        """Ordinals of `ids` among this frame's series (-1 where absent)."""
        return self.ids.get_indexer(ids)


def core_series(offsets, y, exog, exog_names, first_ds, available=None, sample_weight=None):
    """The core's series; y of missing rows (available False) is zeroed so that nothing there,
    NaN included, reaches the core. sample_weight: [rows] or None."""
    if available is not None:
        y = np.where(available, y, 0.0)
        available = available.astype(np.float64)
    return _core.make_series(offsets, np.ascontiguousarray(y, np.float64), list(exog),
                             list(exog_names), first_ds, available, sample_weight)


def future_ds(last_ds, freq, h, polars=False):
    """[n, h] ds after each series' last one, with pandas' offsets (neuralforecast's dates), or
    polars' for a polars frame (freq "1mo", "1d", ...: utilsforecast's offset_times)."""
    if isinstance(freq, (int, np.integer)):
        base = np.asarray(last_ds, dtype=np.int64)
        return [base + k * int(freq) for k in range(1, h + 1)]
    if polars:
        return _polars_future_ds(last_ds, freq, h)
    offset = pd.tseries.frequencies.to_offset(freq)
    last = pd.DatetimeIndex(last_ds)
    return [last + k * offset for k in range(1, h + 1)]


def _polars_future_ds(last_ds, freq, h):
    import polars as pl

    match = re.fullmatch(r"(\d+)(\w+)", freq)
    if match is None:
        raise ValueError(f"freq {freq!r} is not a polars interval such as '1d' or '1mo'")
    n, unit = int(match.group(1)), match.group(2)
    last = pl.Series(pd.DatetimeIndex(last_ds).to_numpy())
    # Month steps keep month ends when every series ends on one (utilsforecast does the same).
    month_ends = "mo" in unit and bool((last.dt.offset_by("1d").dt.month() != last.dt.month()).all())
    out = []
    for k in range(1, h + 1):
        t = last.dt.offset_by(f"{n * k}{unit}")
        out.append(pd.DatetimeIndex((t.dt.month_end() if month_ends else t).to_numpy()))
    return out


def is_polars(frame):
    return type(frame).__module__.split(".")[0] == "polars"


def to_pandas(frame):
    """A polars DataFrame as pandas (other values unchanged)."""
    return frame.to_pandas() if is_polars(frame) else frame


def to_polars(frame):
    import polars as pl

    return pl.from_pandas(frame)


def long_frame(series, id_col, time_col, n_rows_each, ds_columns, values):
    """unique_id, ds, then `values` columns: n_rows_each rows per series of `series` (the ids of
    a Series, in order); ds_columns[k][i] is row k of series i."""
    n = len(series.id_values)
    idx = np.repeat(np.arange(n), n_rows_each)
    k = np.tile(np.arange(n_rows_each), n)
    ds_all = [np.asarray(c) for c in ds_columns]
    ds = np.stack(ds_all, axis=1)[idx, k] if ds_all else np.array([])
    out = {id_col: series.id_values.take(idx), time_col: ds}
    out.update(values)
    frame = pd.DataFrame(out)
    if pd.api.types.is_datetime64_any_dtype(series.ds_values.dtype):
        frame[time_col] = frame[time_col].astype(series.ds_values.dtype)
    return frame


class Statics:
    """static_df rows for the series of a Series, in its order."""

    def __init__(self, static_df, series, columns, id_col="unique_id", categories=None):
        _require_frame(static_df, "static_df")
        _require_columns(static_df, [id_col] + list(columns), "static_df")
        dup = static_df[id_col].duplicated()
        if dup.any():
            pos = int(np.flatnonzero(dup.to_numpy())[0])
            raise ValueError(f"static_df has more than one row for unique_id "
                             f"{static_df[id_col].iloc[pos]!r} (row {static_df.index[pos]!r})")
        pos = pd.Index(static_df[id_col]).get_indexer(series.ids)
        if (pos < 0).any():
            raise ValueError(f"static_df has no row for unique_id "
                             f"{series.ids[int(np.flatnonzero(pos < 0)[0])]!r}")
        values = np.empty((series.n_series, len(columns)))
        categories = categories or {}
        for j, c in enumerate(columns):
            values[:, j] = (category_codes(static_df[c], categories[c], "static_df")
                            if c in categories else
                            _float_column(static_df, c, "static_df", id_col, id_col))[pos]
        self.values = values
        self.core = _core.make_static(np.ascontiguousarray(values), list(columns))
