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

import numpy as np
import pandas as pd

from . import _core


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


def _split(df, how, user_col, item_col, time_col, ratio=0.8, seed=0, random_ties=False):
    """(train, test) from the C++ split (data/interaction_split.h): ids of any type become rows
    in id order, times their ranks (any sortable column: numbers, datetimes)."""
    cols = [user_col] + ([item_col] if item_col else []) + ([time_col] if time_col else [])
    _check_frame(df, cols, "df")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not \
            0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an integer in 0..2^64-1, got {seed!r}")
    users = IdMap.build(df[user_col]).rows(df[user_col].to_numpy(), "users")
    items = (IdMap.build(df[item_col]).rows(df[item_col].to_numpy(), "items") if item_col
             else np.zeros(len(df), dtype=np.int32))
    times = (np.unique(df[time_col].to_numpy(), return_inverse=True)[1].astype(np.float64)
             if time_col else np.zeros(0))
    test = _core.split_interactions(np.ascontiguousarray(users), np.ascontiguousarray(items),
                                    np.ascontiguousarray(times.reshape(-1)), how, float(ratio),
                                    int(seed), bool(random_ties)).astype(bool)
    return df[~test], df[test].sort_values(user_col, kind="mergesort")


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
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be ≥ 1, got {k}")
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
