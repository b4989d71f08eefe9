"""One CSV dialect both ways (RFC 4180): ids holding a comma, a quote or a line break survive
pandas -> `shoal ncf train --save` -> `shoal ncf recommend` -> pandas, `shoal ncf split` and
`shoal forecast` unchanged, and the model saved by the CLI knows them in Python too."""

import os
import subprocess

import numpy as np
import pandas as pd
import pytest

import shoal

SHOAL = os.path.join(os.path.dirname(__file__), "..", "..", "build", "release", "shoal")
ODD = ["a,b", 'say "hi"', 'x","y', "two\nlines", "plain"]

pytestmark = pytest.mark.skipif(not os.path.exists(SHOAL), reason="no build/release/shoal")


def cli(*args):
    return subprocess.run([SHOAL, *map(str, args)], capture_output=True, text=True, check=True)


def test_ids_survive_train_save_recommend_output_pandas(tmp_path):
    rng = np.random.default_rng(0)
    users = ODD + [f"u{i}" for i in range(15)]
    items = ["i,1", 'i"2'] + [f"i{i}" for i in range(18)]
    rows = [(users[rng.integers(len(users))], items[rng.integers(len(items))])
            for _ in range(400)]
    rows += [(u, items[0]) for u in users]
    pd.DataFrame(rows, columns=["user", "item"]).to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame({"user": ODD}).to_csv(tmp_path / "users.csv", index=False)
    cli("ncf", "train", "--train", tmp_path / "train.csv", "--epochs", 1, "--factors", 4,
        "--layers", "8,4", "--threads", 1, "--save", tmp_path / "model")
    cli("ncf", "recommend", "--model", tmp_path / "model", "--users", tmp_path / "users.csv",
        "--k", 3, "--include-seen", "--out", tmp_path / "recs.csv")
    recs = pd.read_csv(tmp_path / "recs.csv", keep_default_na=False)
    assert list(recs.columns) == ["user", "item", "score", "rank"]
    assert list(dict.fromkeys(recs["user"])) == ODD
    assert set(recs["item"]) <= set(items)
    # The model the CLI saved holds the ids as they were, for Python as well.
    m = shoal.NCF.load(tmp_path / "model")
    assert set(m.user_map.to_list()) == set(users)
    got = m.recommend(ODD, k=3, exclude_seen=False)
    assert list(got["item"]) == list(recs["item"])


def test_split_keeps_quoted_rows_and_header(tmp_path):
    frame = pd.DataFrame({"user": ["a,b", "a,b", 'q"', 'q"'], "item": ["x", "y,z", "x", "w"],
                          "timestamp": [1, 2, 1, 2]})
    frame.to_csv(tmp_path / "inter.csv", index=False)
    cli("ncf", "split", "--data", tmp_path / "inter.csv", "--train-out", tmp_path / "tr.csv",
        "--test-out", tmp_path / "te.csv")
    te = pd.read_csv(tmp_path / "te.csv")
    tr = pd.read_csv(tmp_path / "tr.csv")
    assert sorted(te["item"]) == ["w", "y,z"] and sorted(tr["user"]) == ["a,b", 'q"']


def test_forecast_ids_with_commas_and_quotes(tmp_path):
    t = np.arange(30)
    frame = pd.concat([pd.DataFrame({"unique_id": uid, "ds": t, "y": 10.0 + k + np.sin(t)})
                       for k, uid in enumerate(["a,b", 'say "hi"', "plain"])])
    frame.to_csv(tmp_path / "series.csv", index=False)
    cli("forecast", "--data", tmp_path / "series.csv", "--model", "seasonal_naive", "--h", 3,
        "--seasonality", 6, "--out", tmp_path / "f.csv")
    out = pd.read_csv(tmp_path / "f.csv")
    assert list(out.columns) == ["unique_id", "ds", "seasonal_naive"]
    assert sorted(set(out["unique_id"])) == sorted(["a,b", 'say "hi"', "plain"])
    assert len(out) == 9
