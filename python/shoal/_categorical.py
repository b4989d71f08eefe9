"""Categorical exogenous features, the Python side, as neuralforecast's NeuralForecast does it.

The models declare the columns (`cat_exog_list`, each also in a *_exog_list) and their
cardinalities. At fit, each column's values in the training frames (df, or static_df for a
static column) are sorted and coded 1..U; every frame a method receives is then read with those columns
as their codes (shoal._frames.Series), 0 for a value (or a missing one) the training data did
not have. The
codes go to C++ unscaled, where the trainer looks them up in learned embedding tables
(train/exog_embeddings.h); code 0 reads the mean of a table's learned rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def declared(models):
    """{column: cardinality} over every model; models naming one column must agree."""
    out = {}
    for m in models:
        cards = getattr(m, "categorical_cardinalities", None) or {}
        for col in getattr(m, "cat_exog_list", None) or []:
            card = cards.get(col)
            if card is None:
                continue
            if col in out and out[col] != card:
                raise ValueError(
                    f"Models declare conflicting `categorical_cardinalities` for '{col}': "
                    f"{out[col]} and {card}. All models must agree on a feature's cardinality.")
            out[col] = card
    return out


def build_vocab(models, df, static_df=None, holdout=0, id_col="unique_id", time_col="ds"):
    """{column: {value: code}} from the training frames (empty when no model declares any).
    holdout: the last rows of each series that are not training data (cross_validation's
    test_size), left out of df's columns as neuralforecast leaves them out."""
    vocab = {}
    cards = declared(models)
    if cards and holdout > 0:
        ordered = df.sort_values([id_col, time_col], kind="stable")
        df = ordered[ordered.groupby(id_col, sort=False).cumcount(ascending=False) >= holdout]
    for col, max_card in cards.items():
        frame = static_df if static_df is not None and col in static_df.columns else df
        if col not in frame.columns:
            raise ValueError(f"categorical exogenous column {col!r} is not in "
                             f"{'static_df' if frame is static_df else 'df'}")
        uniques = sorted(pd.unique(frame[col].dropna()).tolist())
        if len(uniques) > max_card:
            raise ValueError(
                f"Categorical feature '{col}' has {len(uniques)} distinct values in the "
                f"training data but `categorical_cardinalities` declares only {max_card}. "
                "Increase the declared cardinality.")
        vocab[col] = {v: i + 1 for i, v in enumerate(uniques)}
    return vocab


def to_json(vocab):
    """The vocabulary as JSON: per column, its values in code order (JSON keeps str, int,
    float and bool values as they are)."""
    return {col: [_plain(v) for v, _ in sorted(m.items(), key=lambda kv: kv[1])]
            for col, m in vocab.items()}


def from_json(data):
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError("model.json's categorical_vocab must map each column to its list of "
                         "values")
    return {col: {v: i + 1 for i, v in enumerate(values)} for col, values in data.items()}


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (str, int, float, bool)):
        return v
    raise ValueError(f"a categorical value {v!r} ({type(v).__name__}) cannot be saved; use "
                     "strings or numbers as categories")
