"""Recommender helpers over frames of interactions: id maps, splits and full-ranking metrics.

    train, test = shoal.split_leave_last_out(df, time_col="timestamp")
    shoal.metrics(test, model.recommend(test["user"].unique(), k=10), k=10)

Splits (each deterministic for a seed; the C++ data/interaction_split.h does them, as for
`shoal ncf split`):
  split_leave_last_out  each user's latest interaction is its test row (ties: the larger item id,
                        or random by seed with ties="random"); users with one interaction stay
                        in train.
  split_random_leave_one_out  one random interaction per user (of users with ≥ 2).
  split_chrono          per user, the earliest `ratio` of its interactions (by time, ties by seed)
                        in train, the rest in test.
metrics(truth_df, recs_df, k): HR@K, NDCG@K, Precision@K, Recall@K, MAP@K as defined in
include/shoal/train/ranking.h (computed there), averaged over truth_df's users.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from . import _arguments, _core


class IdMap:
    """Ids (any hashable: ints, strings) <-> dense rows 0..n-1, in a fixed order (sorted where
    the ids sort, else first appearance)."""

    def __init__(self, ids):
        self.index = pd.Index(ids)
        if not self.index.is_unique:
            raise ValueError("ids of an IdMap must be distinct")

    @classmethod
    def build(cls, *columns):
        values = pd.concat([pd.Series(np.asarray(c)) for c in columns], ignore_index=True)
        uniq = pd.unique(values)
        try:
            uniq = np.sort(uniq)
        except TypeError:
            pass
        return cls(uniq)

    def __len__(self):
        return len(self.index)

    def rows(self, values, what):
        """Rows of `values` (-1 where unknown)."""
        return self.index.get_indexer(pd.Index(np.asarray(values))).astype(np.int32)

    def ids(self, rows):
        return self.index[np.asarray(rows)].to_numpy()

    def to_list(self):
        return [v.item() if isinstance(v, np.generic) else v for v in self.index]


def _check_frame(df, cols, what):
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    for c in cols:
        if c not in df.columns:
            raise ValueError(f"{what} is missing column {c!r} "
                             f"(has {', '.join(map(str, df.columns))})")


def _first_missing(column):
    return column.index[column.isna().to_numpy()][0]


def _checked_ids(df, col, what="df"):
    """df[col] as ids: none missing, all numbers or all text (mixed ones have no order that
    Python, pandas and the C++ id map share)."""
    column = df[col]
    if column.isna().any():
        raise ValueError(f"{what} column {col!r} has a missing id at row "
                         f"{_first_missing(column)!r}")
    kind = pd.api.types.infer_dtype(column, skipna=False)
    if kind in ("mixed", "mixed-integer"):
        types = sorted({type(v).__name__ for v in column})
        raise ValueError(f"{what} column {col!r} mixes ids of types {', '.join(types)}: give "
                         f"ids of one type (e.g. {what}[{col!r}].astype(str))")
    return column


def _time_ranks(df, col):
    """Ranks of df[col]'s times: numbers or datetimes, or text parsed as datetimes
    (pd.to_datetime); text that does not parse, missing times and mixed kinds are refused,
    naming the column, never ordered as text or read as the latest."""
    column = df[col]
    if column.isna().any():
        raise ValueError(f"df column {col!r} has a missing timestamp at row "
                         f"{_first_missing(column)!r}")
    kind = pd.api.types.infer_dtype(column, skipna=False)
    if kind in ("integer", "floating", "mixed-integer-float", "decimal"):
        values = pd.to_numeric(column)
    elif kind in ("datetime64", "datetime", "date", "string"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pandas' note on inferring the format
                values = pd.to_datetime(column)
        except (ValueError, TypeError, OverflowError) as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ValueError(f"df column {col!r} holds times that do not parse as datetimes "
                             f"({reason}); give numbers, datetimes or text of one date "
                             f"format") from None
    else:
        raise ValueError(f"df column {col!r} must hold numbers or datetimes (or text of "
                         f"dates), got {kind} values")
    return pd.factorize(values, sort=True)[0].astype(np.float64)


def _split(df, how, user_col, item_col, time_col, ratio=0.8, seed=0, random_ties=False):
    """(train, test) from the C++ split (data/interaction_split.h): ids of any type become rows
    in id order, times their ranks (any sortable column: numbers, datetimes)."""
    cols = [user_col] + ([item_col] if item_col else []) + ([time_col] if time_col else [])
    _check_frame(df, cols, "df")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not \
            0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an integer in 0..2^64-1, got {seed!r}")
    user_ids = _checked_ids(df, user_col)
    users = IdMap.build(user_ids).rows(user_ids.to_numpy(), "users")
    if item_col:
        item_ids = _checked_ids(df, item_col)
        items = IdMap.build(item_ids).rows(item_ids.to_numpy(), "items")
    else:
        items = np.zeros(len(df), dtype=np.int32)
    times = _time_ranks(df, time_col) if time_col else np.zeros(0)
    test = _core.split_interactions(np.ascontiguousarray(users), np.ascontiguousarray(items),
                                    np.ascontiguousarray(times.reshape(-1)), how, float(ratio),
                                    int(seed), bool(random_ties)).astype(bool)
    # The test rows by user in id order (the rows' order), not by comparing the ids again.
    order = np.argsort(users[test], kind="stable")
    return df[~test], df[test].iloc[order]


def split_leave_last_out(df, user_col="user", item_col="item", time_col="timestamp",
                         ties="item", seed=0):
    """(train, test): each user's latest interaction (by time_col) held out. Among interactions
    at the same latest time, ties="item" holds out the one with the largest item id (the NCF
    data's rule), ties="random" a random one (seed)."""
    if ties not in ("item", "random"):
        raise ValueError(f"ties must be 'item' or 'random', got {ties!r}")
    return _split(df, "leave-last-out", user_col, item_col, time_col, seed=seed,
                  random_ties=ties == "random")


def split_random_leave_one_out(df, user_col="user", seed=0):
    """(train, test): one interaction per user (of users with ≥ 2) held out at random (seed)."""
    return _split(df, "random", user_col, None, None, seed=seed)


def split_chrono(df, ratio=0.8, user_col="user", time_col="timestamp", seed=0):
    """(train, test): per user, the first floor(ratio · n) of its interactions by time (ties in a
    random order of the seed; at least one) in train, the rest in test."""
    if not isinstance(ratio, (int, float, np.floating)) or not 0 < float(ratio) < 1:
        raise ValueError(f"ratio must be in (0, 1), got {ratio!r}")
    return _split(df, "chrono", user_col, None, time_col, ratio=ratio, seed=seed)


def _csr(user_rows, item_rows, n):
    order = np.argsort(user_rows, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(user_rows, minlength=n), out=offsets[1:])
    return offsets, np.ascontiguousarray(item_rows[order], dtype=np.int32)


def metrics(truth_df, recs_df, k=10, user_col="user", item_col="item", rank_col="rank",
            score_col="score"):
    """Full-ranking HR@k, NDCG@k, Precision@k, Recall@k and MAP@k (ranking.h) of recs_df (one row
    per recommendation: user, item and rank, or score, or else in order) against truth_df (the
    held-out interactions), averaged over truth_df's users. Returns a dict with "users"."""
    _check_frame(truth_df, [user_col, item_col], "truth_df")
    _check_frame(recs_df, [user_col, item_col], "recs_df")
    k = _arguments.count(k, "k")
    users = IdMap.build(truth_df[user_col])
    items = IdMap.build(truth_df[item_col], recs_df[item_col])
    recs = recs_df
    if rank_col in recs.columns:
        recs = recs.sort_values(rank_col, kind="mergesort")
    elif score_col in recs.columns:
        recs = recs.sort_values(score_col, ascending=False, kind="mergesort")
    ru = users.rows(recs[user_col].to_numpy(), "recs_df user")
    keep = ru >= 0
    ro, ri = _csr(ru[keep], items.rows(recs[item_col].to_numpy()[keep], "item"), len(users))
    to, ti = _csr(users.rows(truth_df[user_col].to_numpy(), "user"),
                  items.rows(truth_df[item_col].to_numpy(), "item"), len(users))
    return _core.ranking_metrics(ro, ri, to, ti, k)
