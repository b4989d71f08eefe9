"""shoal.NCF: GMF / MLP / NeuMF recommenders (He et al. 2017) with optional context features,
trained on every core by the C++ NCF trainer.

    model = NCF(model="neumf", epochs=5).fit(train_df)        # columns user, item[, context]
    model.evaluate(test_df, negatives)                         # {"hr": ..., "ndcg": ...}
    model.score(users, items)                                  # probabilities, float32
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from . import _core, _weights, profiling


def _ids(values, what):
    a = np.asarray(values)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{what} must hold integer ids, got {a.dtype}")
    if a.size and (a.min() < 0 or a.max() > np.iinfo(np.int32).max):
        pos = int(np.flatnonzero((a < 0) | (a > np.iinfo(np.int32).max))[0])
        raise ValueError(f"{what} has id {a[pos]} at position {pos}; ids are 0-based int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def _int(name, v, lo, hi=2**31 - 1):
    """An integer argument in [lo, hi], exactly (no wrap, no rounding), else ValueError."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {v}")
    return int(v)


class NCF:
    def __init__(self, model="neumf", factors=8, layers=(64, 32, 16, 8), epochs=20,
                 batch_size=256, num_negatives=4, learning_rate=1e-3, seed=1, threads=0,
                 user_col="user", item_col="item", context_cols=None):
        """model: "gmf", "mlp" or "neumf"; factors: GMF width; layers: MLP widths (the first
        even); threads: 0 = every allowed core. context_cols: numeric columns of train_df fed to
        the MLP tower (None: none)."""
        if model not in ("gmf", "mlp", "neumf"):
            raise ValueError(f"model must be 'gmf', 'mlp' or 'neumf', got {model!r}")
        self.model = model
        self.factors = _int("factors", factors, 1)
        self.layers = [_int("layers", x, 1) for x in layers]
        self.epochs, self.batch_size = _int("epochs", epochs, 1), _int("batch_size", batch_size, 1)
        self.num_negatives = _int("num_negatives", num_negatives, 1)
        self.learning_rate = float(learning_rate)
        if not (np.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be a finite number > 0, got {learning_rate!r}")
        self.seed = _int("seed", seed, 0, 2**64 - 1)
        self.threads = _int("threads", threads, 0)
        self.user_col, self.item_col = user_col, item_col
        self.context_cols = list(context_cols or [])
        self._trainer = None
        self.losses = []

    def fit(self, train_df, num_users=None, num_items=None):
        """train_df: one row per positive (user, item[, context columns]). num_users / num_items
        default to the largest id + 1; pass them when test ids go beyond the training ones."""
        if not isinstance(train_df, pd.DataFrame):
            raise ValueError(f"train_df must be a pandas DataFrame, got {type(train_df).__name__}")
        for c in [self.user_col, self.item_col] + self.context_cols:
            if c not in train_df.columns:
                raise ValueError(f"train_df is missing column {c!r} "
                                 f"(has {', '.join(map(str, train_df.columns))})")
        users = _ids(train_df[self.user_col].to_numpy(), f"train_df column {self.user_col!r}")
        items = _ids(train_df[self.item_col].to_numpy(), f"train_df column {self.item_col!r}")
        if len(users) == 0:
            raise ValueError("train_df has no rows")
        if self.context_cols:
            ctx = train_df[self.context_cols].to_numpy(dtype=np.float32)
            bad = np.argwhere(~np.isfinite(ctx))
            if bad.size:
                r, c = bad[0]
                raise ValueError(f"train_df column {self.context_cols[c]!r} has NaN or inf at "
                                 f"row {train_df.index[r]!r}")
            ctx = np.ascontiguousarray(ctx)
        else:
            ctx = np.zeros((0, 0), dtype=np.float32)
        nu = int(num_users if num_users is not None else users.max() + 1)
        ni = int(num_items if num_items is not None else items.max() + 1)
        if users.max() >= nu or items.max() >= ni:
            raise ValueError(f"ids reach user {users.max()} / item {items.max()} but num_users="
                             f"{nu}, num_items={ni}")
        self.num_users, self.num_items = nu, ni
        settings = {"kind": self.model, "factors": self.factors, "layers": self.layers,
                    "epochs": self.epochs, "batch_size": self.batch_size,
                    "num_negatives": self.num_negatives, "learning_rate": self.learning_rate}
        self._trainer = _core.NcfTrainer(users, items, ctx, self.context_cols, nu, ni, settings,
                                         self.seed, self.threads)
        r = self._trainer.fit(self.epochs, profile=profiling.spec("ncf"))
        profiling.record(r["profile"])
        self.losses = r["losses"]
        return self

    def _fitted(self):
        if self._trainer is None:
            raise ValueError("NCF is not fitted: call fit first")
        return self._trainer

    def evaluate(self, test_df, negatives, k=10):
        """Leave-one-out HR@k and NDCG@k: test_df holds one (user, item) positive per test user,
        negatives[i] the sampled negative items of row i ([users, K] array-like)."""
        t = self._fitted()
        if not isinstance(test_df, pd.DataFrame):
            raise ValueError(f"test_df must be a pandas DataFrame, got {type(test_df).__name__}")
        for c in (self.user_col, self.item_col):
            if c not in test_df.columns:
                raise ValueError(f"test_df is missing column {c!r}")
        neg = np.asarray(negatives)
        if neg.ndim != 2 or neg.shape[0] != len(test_df):
            raise ValueError(f"negatives must be [{len(test_df)}, K] (one row per test_df row), "
                             f"got shape {neg.shape}")
        return t.evaluate(_ids(test_df[self.user_col].to_numpy(), "test_df user"),
                          _ids(test_df[self.item_col].to_numpy(), "test_df item"),
                          _ids(neg, "negatives"), int(k))

    def score(self, users, items):
        """σ(logit) of each (user, item) pair, float32 [n]."""
        return self._fitted().score(_ids(users, "users"), _ids(items, "items"))

    def state_dict(self):
        return _weights.decode(self._fitted().weights())

    def save_weights(self, path):
        blob = self._fitted().weights()
        with open(f"{path}.tmp", "wb") as f:
            f.write(blob)
        os.replace(f"{path}.tmp", path)

    def load_weights(self, path):
        with open(path, "rb") as f:
            self._fitted().load_weights(f.read())
        return self
