"""shoal.NCF: GMF / MLP / NeuMF recommenders (He et al. 2017) with optional context features,
trained on every core by the C++ NCF trainer.

    model = NCF(model="neumf", epochs=5).fit(train_df)   # columns user, item[, context]; any ids
    model.recommend(["u1", "u2"], k=10)                  # frame user, item, score, rank
    model.evaluate(test_df, k=10)                        # full ranking: hr, ndcg, precision, ...
    model.evaluate(test_df, negatives)                   # the NCF paper's sampled HR / NDCG
    model.score(pairs_df)                                # pairs_df with a "score" column
    model.save("model_dir"); NCF.load("model_dir")       # docs/ncf.md: the directory layout

Users and items may be any integers or strings: fit maps the distinct ids to dense table rows
(recsys.IdMap, kept with the model). An id the model does not know raises ValueError, or with
on_unknown="skip" is left out (score: NaN) and reported in a warning and model.skipped.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd

from . import _arguments, _core, _weights, profiling
from .recsys import IdMap, _checked_ids, _csr


def _int(name, v, lo, hi=2**31 - 1):
    """An integer argument in [lo, hi], exactly (no wrap, no rounding), else ValueError."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {v}")
    return int(v)


def _count(value, name):
    """`value` as an int in [1, 2^31 - 1] (None stays None), else TypeError or ValueError."""
    return None if value is None else _arguments.count(value, name)


class NCF:
    def __init__(self, model="neumf", factors=8, layers=(64, 32, 16, 8), epochs=20,
                 batch_size=256, num_negatives=4, learning_rate=1e-3, seed=1, threads=0,
                 user_col="user", item_col="item", context_cols=None, on_unknown="raise"):
        """model: "gmf", "mlp" or "neumf"; factors: GMF width; layers: MLP widths (the first
        even); threads: 0 = every allowed core. context_cols: numeric columns of train_df fed to
        the MLP tower (None: none). on_unknown: "raise" or "skip" (ids the model does not know at
        predict time)."""
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
        self.threads = _arguments.thread_count(threads, "threads")
        self.user_col, self.item_col = user_col, item_col
        self.context_cols = list(context_cols or [])
        if on_unknown not in ("raise", "skip"):
            raise ValueError(f"on_unknown must be 'raise' or 'skip', got {on_unknown!r}")
        self.on_unknown = on_unknown
        self._trainer = None
        self.losses = []
        self.user_map = self.item_map = None
        self.skipped = {}

    def _settings(self):
        return {"kind": self.model, "factors": self.factors, "layers": self.layers,
                "epochs": self.epochs, "batch_size": self.batch_size,
                "num_negatives": self.num_negatives, "learning_rate": self.learning_rate}

    def _rows(self, idmap, values, what, on_unknown=None):
        """(rows, known mask) of ids; unknown ids raise or, skipping, are reported."""
        values = np.asarray(values)
        if values.ndim == 0:
            values = values.reshape(1)
        rows = idmap.rows(values, what)
        known = rows >= 0
        if not known.all():
            bad = [v.item() if isinstance(v, np.generic) else v
                   for v in pd.unique(values[~known])]
            if (on_unknown or self.on_unknown) == "raise":
                shown = ", ".join(map(repr, bad[:5])) + (" ..." if len(bad) > 5 else "")
                raise ValueError(f"{len(bad)} {what} outside the model (not fitted on): {shown}; "
                                 f"on_unknown='skip' leaves them out")
            self.skipped[what] = bad
            warnings.warn(f"skipped {len(bad)} unknown {what}", stacklevel=3)
        return rows, known

    def fit(self, train_df, num_users=None, num_items=None, users=None, items=None,
            eval_df=None, eval_k=10, eval_negatives=None):
        """train_df: one row per positive (user, item[, context columns]); ids of any one type.
        users / items: further ids the model should know (e.g. the whole catalog, items with no
        interactions yet); num_users / num_items: shorthand for the integer ids 0..n-1.
        eval_df: evaluated after every epoch (evaluate(eval_df, eval_negatives, eval_k): full
        ranking, or sampled with eval_negatives) into self.history, one dict per epoch with
        its "epoch" and "loss"; training is the same with or without it."""
        if not isinstance(train_df, pd.DataFrame):
            raise ValueError(f"train_df must be a pandas DataFrame, got {type(train_df).__name__}")
        for c in [self.user_col, self.item_col] + self.context_cols:
            if c not in train_df.columns:
                raise ValueError(f"train_df is missing column {c!r} "
                                 f"(has {', '.join(map(str, train_df.columns))})")
        if len(train_df) == 0:
            raise ValueError("train_df has no rows")
        for c in (self.user_col, self.item_col):
            col = _checked_ids(train_df, c, "train_df")
            if col.dtype.kind == "f":
                raise ValueError(f"train_df column {c!r} must hold integer ids or strings, "
                                 f"got {col.dtype}")
        num_users = _count(num_users, "num_users")
        num_items = _count(num_items, "num_items")
        extra_u = [np.arange(num_users)] if num_users is not None else []
        extra_i = [np.arange(num_items)] if num_items is not None else []
        extra_u += [np.asarray(users)] if users is not None else []
        extra_i += [np.asarray(items)] if items is not None else []
        self.user_map = IdMap.build(train_df[self.user_col].to_numpy(), *extra_u)
        self.item_map = IdMap.build(train_df[self.item_col].to_numpy(), *extra_i)
        urows = self.user_map.rows(train_df[self.user_col].to_numpy(), "users")
        irows = self.item_map.rows(train_df[self.item_col].to_numpy(), "items")
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
        nu, ni = len(self.user_map), len(self.item_map)
        self._check_negatives_exist(urows, irows, nu, ni)
        self.num_users, self.num_items = nu, ni
        self._trainer = _core.NcfTrainer(urows, irows, ctx, self.context_cols, nu, ni,
                                         self._settings(), self.seed, self.threads)
        self._seen = _csr(urows, irows, nu)
        self.history = []
        if eval_df is None:
            r = self._trainer.fit(self.epochs, profile=profiling.spec("ncf"))
            profiling.record(r["profile"])
            self.losses = r["losses"]
            return self
        self.losses = []
        for e in range(self.epochs):
            self.losses += self._trainer.fit(1)["losses"]
            m = self.evaluate(eval_df, eval_negatives, eval_k)
            self.history.append({"epoch": e + 1, "loss": self.losses[-1], **m})
        return self

    def _check_negatives_exist(self, urows, irows, nu, ni):
        """A user with every item as a positive leaves no negative to draw: refused, naming the
        user's own id (the sampler knows only its row)."""
        pairs = np.unique(urows.astype(np.int64) * ni + irows)
        full = np.flatnonzero(np.bincount(pairs // ni, minlength=nu) >= ni)
        if full.size:
            user = self.user_map.ids([full[0]])[0]
            user = user.item() if isinstance(user, np.generic) else user
            raise ValueError(f"train_df: user {user!r} has every one of the {ni} items as a "
                             f"positive; no negative can be sampled (give more items with "
                             f"items= or num_items=, or leave the user out)")

    def _fitted(self):
        if self._trainer is None:
            raise ValueError("NCF is not fitted: call fit first")
        return self._trainer

    def evaluate(self, test_df, negatives=None, k=10):
        """Without negatives: full ranking (the standard): every item ranked for each test user,
        its training items excluded, and HR@k, NDCG@k, Precision@k, Recall@k, MAP@k of the
        top k against test_df's (user, item) rows (shoal.metrics). With negatives: the NCF
        paper's protocol, test_df holding one positive per row and negatives[i] the sampled
        negative items of row i ([rows, K] array-like): {"hr", "ndcg", "users"}."""
        from .recsys import metrics

        t = self._fitted()
        if not isinstance(test_df, pd.DataFrame):
            raise ValueError(f"test_df must be a pandas DataFrame, got {type(test_df).__name__}")
        for c in (self.user_col, self.item_col):
            if c not in test_df.columns:
                raise ValueError(f"test_df is missing column {c!r}")
        if negatives is None:
            users = pd.unique(test_df[self.user_col])
            recs = self.recommend(users, k=k)
            return metrics(test_df, recs, k, user_col=self.user_col, item_col=self.item_col)
        neg = np.asarray(negatives)
        if neg.ndim != 2 or neg.shape[0] != len(test_df):
            raise ValueError(f"negatives must be [{len(test_df)}, K] (one row per test_df row), "
                             f"got shape {neg.shape}")
        u, _ = self._rows(self.user_map, test_df[self.user_col].to_numpy(), "users", "raise")
        i, _ = self._rows(self.item_map, test_df[self.item_col].to_numpy(), "items", "raise")
        n, _ = self._rows(self.item_map, neg.reshape(-1), "items", "raise")
        return t.evaluate(u, i, np.ascontiguousarray(n.reshape(neg.shape)), int(k))

    def _context_rows(self, urows, context, n, what):
        """The [n, C] context of n request rows: the model's user rows (None), a frame of
        user + context columns (one row per user), or an [n, C] array."""
        c = len(self.context_cols)
        if c == 0:
            if context is not None:
                raise ValueError("the model has no context columns; pass context=None")
            return np.zeros((n, 0), dtype=np.float32)
        if context is None:
            return np.ascontiguousarray(self._fitted().user_context()[urows])
        if isinstance(context, pd.DataFrame):
            for col in [self.user_col] + self.context_cols:
                if col not in context.columns:
                    raise ValueError(f"context is missing column {col!r}")
            per_user = context.drop_duplicates(self.user_col, keep="last")
            rows = self.user_map.rows(per_user[self.user_col].to_numpy(), "users")
            table = self._fitted().user_context().copy()
            ok = rows >= 0
            table[rows[ok]] = per_user[self.context_cols].to_numpy(dtype=np.float32)[ok]
            out = table[urows]
        else:
            out = np.asarray(context, dtype=np.float32)
            if out.shape != (n, c):
                raise ValueError(f"context must be [{n}, {c}] ({what}), got {out.shape}")
        if not np.isfinite(out).all():
            raise ValueError("context has NaN or inf")
        return np.ascontiguousarray(out, dtype=np.float32)

    def recommend(self, users, k=10, exclude_seen=True, items=None, context=None,
                  on_unknown=None):
        """The k best items for each of `users` (ids), scored over the whole catalog or the
        candidate ids `items`, on every core; exclude_seen leaves out each user's training
        items. context (contextual models): None uses each user's mean training context; a
        frame of user + context columns gives some users theirs; an [len(users), C] array one
        row per request. Returns a frame user, item, score (probability), rank (1-based),
        best first; fewer than k rows where fewer items are left."""
        t = self._fitted()
        k = _count(k, "k")
        if k is None:
            raise TypeError("k must be an integer ≥ 1, got None")
        user_ids = np.asarray(users)
        if user_ids.ndim == 0:
            user_ids = user_ids.reshape(1)
        urows, known = self._rows(self.user_map, user_ids, "users", on_unknown)
        ctx = self._context_rows(urows, context, len(user_ids), "one row per user")
        urows, user_ids, ctx = urows[known], user_ids[known], ctx[known]
        if items is None:
            cands = np.zeros(0, dtype=np.int32)
        else:
            cands, ok = self._rows(self.item_map, items, "items", on_unknown)
            cands = np.ascontiguousarray(pd.unique(cands[ok]), dtype=np.int32)
            if len(cands) == 0:
                raise ValueError("no known candidate items")
        if exclude_seen:
            off, seen = self._seen
            lo, hi = off[urows], off[urows + 1]
            soff = np.zeros(len(urows) + 1, dtype=np.int64)
            np.cumsum(hi - lo, out=soff[1:])
            sitems = (np.concatenate([seen[a:b] for a, b in zip(lo, hi)]) if len(urows)
                      else np.zeros(0, np.int32))
            sitems = np.ascontiguousarray(sitems, dtype=np.int32)
        else:
            soff, sitems = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
        given = ctx if context is not None else np.zeros((0, 0), dtype=np.float32)
        k = min(k, len(cands) if len(cands) else self.num_items)  # no slots past the catalog
        item_rows, scores, counts = t.top_k(np.ascontiguousarray(urows, dtype=np.int32), k,
                                            cands, soff, sitems, given)
        mask = np.arange(k)[None, :] < counts[:, None]
        return pd.DataFrame({
            self.user_col: np.repeat(user_ids, counts),
            self.item_col: self.item_map.ids(item_rows[mask]),
            "score": scores[mask],
            "rank": np.tile(np.arange(1, k + 1), len(counts))[mask.reshape(-1)],
        })

    def score(self, users, items=None, context=None, on_unknown=None):
        """σ(logit) of (user, item) pairs. score(frame): frame's user and item columns (and its
        context columns, where it has them) → a copy of frame with a "score" column;
        score(users, items): float32 array. Unknown ids raise, or score NaN when skipped."""
        t = self._fitted()
        frame = users if isinstance(users, pd.DataFrame) else None
        if frame is not None:
            for c in (self.user_col, self.item_col):
                if c not in frame.columns:
                    raise ValueError(f"frame is missing column {c!r}")
            users, items = frame[self.user_col].to_numpy(), frame[self.item_col].to_numpy()
            if context is None and self.context_cols and all(
                    c in frame.columns for c in self.context_cols):
                context = frame[self.context_cols].to_numpy(dtype=np.float32)
        elif items is None:
            raise ValueError("score takes a frame of pairs, or users and items")
        users, items = np.asarray(users).reshape(-1), np.asarray(items).reshape(-1)
        if len(users) != len(items):
            raise ValueError(f"{len(users)} users but {len(items)} items")
        u, ku = self._rows(self.user_map, users, "users", on_unknown)
        i, ki = self._rows(self.item_map, items, "items", on_unknown)
        ok = ku & ki
        ctx = self._context_rows(np.where(ok, u, 0), context, len(u), "one row per pair")
        out = np.full(len(u), np.nan, dtype=np.float32)
        out[ok] = t.score(np.ascontiguousarray(u[ok]), np.ascontiguousarray(i[ok]),
                          np.ascontiguousarray(ctx[ok]))
        if frame is None:
            return out
        return frame.assign(score=out)

    def state_dict(self):
        return _weights.decode(self._fitted().weights())

    def save_weights(self, path):
        from . import _savedir

        _savedir.write_file(path, self._fitted().weights())

    def load_weights(self, path):
        with open(path, "rb") as f:
            self._fitted().load_weights(f.read())
        return self

    def save(self, path):
        """The whole model into directory `path` (docs/ncf.md, "Saved model layout"): settings,
        id maps, weights, each user's context row and training items. Written into a sibling
        temporary directory, then swapped in: an interrupted save leaves the old model. Replaces
        only an earlier NCF save (or an empty folder): a folder holding anything else, `.` or
        the current directory raise ValueError and are left as they are."""
        t = self._fitted()
        _core.save_ncf_model(os.fspath(path), t, self._settings(), self.seed, self.threads,
                             self.user_col, self.item_col, list(self.context_cols),
                             self.on_unknown, self.user_map.to_list(), self.item_map.to_list(),
                             np.ascontiguousarray(self._seen[0], dtype=np.int64),
                             np.ascontiguousarray(self._seen[1], dtype=np.int32),
                             list(map(float, self.losses)), "path")
        return path

    @classmethod
    def load(cls, path, threads=None):
        """A model saved by save(), ready to recommend, score and evaluate (not to train on).
        A missing, damaged or foreign file raises shoal.ModelFileError naming it. threads:
        the saved count, or every CPU where this process may use fewer than were saved."""
        from . import _savedir

        with _savedir.reading(path):
            saved = _core.load_ncf_model(os.fspath(path))
            st = dict(saved["settings"])
            if threads is not None:
                st["threads"] = threads
            elif st.get("threads", 0) > len(os.sched_getaffinity(0)):
                st["threads"] = 0
            m = cls(**st)
            m.losses = saved["losses"]
            m.user_map = IdMap(saved["users"])
            m.item_map = IdMap(saved["items"])
            m.num_users, m.num_items = len(m.user_map), len(m.item_map)
            m._seen = (saved["seen_offsets"], saved["seen_items"])
            m._trainer = _core.NcfTrainer.for_inference(m._settings(), m.num_users, m.num_items,
                                                        len(m.context_cols), m.threads)
            m._trainer.load_weights(saved["weights"])
            if m.context_cols:
                m._trainer.set_user_context(saved["user_context"])
        return m
