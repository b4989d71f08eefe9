"""Recommender use as a user meets it: string ids, recommend, full-ranking metrics (against a
plain reference), splits (the ml-100k split reproduced), save / load in a fresh process."""

import io
import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import DATA

from test_ncf import GROUPS, ITEMS, USERS, planted


def named(df):
    """The planted data with string users and sparse, large integer items."""
    return df.assign(user="u" + df["user"].astype(str), item=df["item"] * 1000 + 7)


@pytest.fixture(scope="module")
def fitted():
    train, test, _ = planted()
    train, test = named(train), named(test)
    model = shoal.NCF(model="neumf", factors=8, layers=(16, 8), epochs=8, batch_size=64,
                      learning_rate=0.01, threads=2, seed=3, context_cols=["ctx"])
    return model.fit(train), train, test


def ref_metrics(truth, recs, k):
    """Plain per-user loops over the ranking.h definitions."""
    out = dict(hr=0.0, ndcg=0.0, precision=0.0, recall=0.0, map=0.0)
    users = truth["user"].unique()
    for u in users:
        t = set(truth.loc[truth["user"] == u, "item"])
        r = list(recs.loc[recs["user"] == u].sort_values("rank")["item"])[:k]
        hits = [x in t for x in r]
        out["hr"] += any(hits)
        out["precision"] += sum(hits) / k
        out["recall"] += sum(hits) / len(t)
        idcg = sum(1 / math.log2(j + 2) for j in range(min(len(t), k)))
        out["ndcg"] += sum(h / math.log2(j + 2) for j, h in enumerate(hits)) / idcg
        ap = sum(sum(hits[:j + 1]) / (j + 1) for j, h in enumerate(hits) if h)
        out["map"] += ap / min(len(t), k)
    return {key: v / len(users) for key, v in out.items()}


def test_string_ids_and_dense_tables(fitted):
    model, train, _ = fitted
    assert model.num_users == USERS and model.num_items == train["item"].nunique()
    assert model.state_dict()["embed_item_gmf.weight"].shape[0] == model.num_items
    with pytest.raises(ValueError, match="1 users outside the model \\(not fitted on\\): 'nobody'"):
        model.recommend(["u0", "nobody"])
    with pytest.warns(UserWarning, match="skipped 1 unknown users"):
        recs = model.recommend(["u0", "nobody"], on_unknown="skip")
    assert set(recs["user"]) == {"u0"} and model.skipped["users"] == ["nobody"]
    with pytest.warns(UserWarning, match="skipped 1 unknown users"):
        s = model.score(pd.DataFrame({"user": ["u0", "zz"], "item": [7, 7]}), on_unknown="skip")
    assert np.isfinite(s["score"][0]) and np.isnan(s["score"][1])
    with pytest.raises(ValueError, match="integer ids or strings"):
        shoal.NCF().fit(train.assign(item=train["item"].astype(float)))


def test_recommend(fitted):
    model, train, test = fitted
    users = test["user"].to_numpy()
    recs = model.recommend(users, k=5)
    assert list(recs.columns) == ["user", "item", "score", "rank"]
    assert len(recs) == 5 * len(users)
    assert recs.groupby("user")["rank"].apply(lambda r: list(r) == [1, 2, 3, 4, 5]).all()
    assert (recs.groupby("user")["score"].apply(lambda s: s.is_monotonic_decreasing)).all()
    seen = set(zip(train["user"], train["item"]))
    assert not any((u, i) in seen for u, i in zip(recs["user"], recs["item"]))
    # The planted groups: a trained model recommends its users' own group's items.
    group = recs["user"].str[1:].astype(int) % GROUPS
    assert ((recs["item"] // 1000) % GROUPS == group).mean() > 0.8
    # Scores agree with score() on the same pairs.
    s = model.score(recs[["user", "item"]])
    np.testing.assert_allclose(s["score"], recs["score"], rtol=1e-5)
    # Without exclusion the top items are training items; candidates restrict the ranking.
    n_seen = (train["user"] == "u0").sum()
    every = model.recommend(["u0"], k=10**6, exclude_seen=False)
    assert len(every) == model.num_items and every["item"].is_unique
    assert len(model.recommend(["u0"], k=10**6)) == model.num_items - n_seen
    cands = [7, 1007, 2007, 3007]
    c = model.recommend(["u1", "u2"], k=10, items=cands, exclude_seen=False)
    assert len(c) == 8 and set(c["item"]) == set(cands)
    # Per-request context moves the scores; a frame gives a user its own.
    a = model.recommend(["u0"], k=3, context=np.array([[5.0]], dtype=np.float32))
    b = model.recommend(["u0"], k=3, context=pd.DataFrame({"user": ["u0"], "ctx": [5.0]}))
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["score"], model.recommend(["u0"], k=3)["score"])


def test_metrics_against_reference(fitted):
    model, train, test = fitted
    recs = model.recommend(test["user"].unique(), k=10)
    # Several held-out items per user too, and a user without recommendations.
    truth = pd.concat([test, train.groupby("user").head(2)], ignore_index=True)
    truth = pd.concat([truth, pd.DataFrame({"user": ["ghost"], "item": [7]})], ignore_index=True)
    for k in (1, 5, 10):
        got = shoal.metrics(truth, recs, k)
        want = ref_metrics(truth, recs, k)
        assert got["users"] == truth["user"].nunique()
        for key, v in want.items():
            assert got[key] == pytest.approx(v, abs=1e-12), (k, key)
    full = model.evaluate(test, k=10)
    assert full == shoal.metrics(test, recs, 10)
    assert full["hr"] > 0.5 and full["hr"] == pytest.approx(full["recall"])


def test_per_epoch_evaluation():
    train, test, negatives = planted()
    train, test = named(train), named(test)
    kw = dict(model="gmf", epochs=3, batch_size=64, threads=2, seed=4)
    plain = shoal.NCF(**kw).fit(train)
    watched = shoal.NCF(**kw).fit(train, eval_df=test, eval_k=5)
    assert watched.losses == plain.losses and plain.history == []
    assert [h["epoch"] for h in watched.history] == [1, 2, 3]
    assert watched.history[-1] == {"epoch": 3, "loss": plain.losses[-1],
                                    **plain.evaluate(test, k=5)}
    sampled = shoal.NCF(**kw).fit(train, eval_df=test, eval_negatives=negatives * 1000 + 7)
    assert set(sampled.history[0]) == {"epoch", "loss", "hr", "ndcg", "users"}


def test_splits():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"user": rng.integers(0, 20, 400), "item": rng.integers(0, 50, 400),
                       "timestamp": rng.integers(0, 30, 400)})
    tr, te = shoal.split_leave_last_out(df)
    assert len(tr) + len(te) == len(df) and te["user"].is_unique
    last = df.groupby("user")["timestamp"].max()
    assert (te.set_index("user")["timestamp"] == last[te["user"]]).all()
    for split in (lambda d, s: shoal.split_random_leave_one_out(d, seed=s),
                  lambda d, s: shoal.split_chrono(d, 0.7, seed=s),
                  lambda d, s: shoal.split_leave_last_out(d, ties="random", seed=s)):
        a, b = split(df, 1), split(df, 1)
        pd.testing.assert_frame_equal(a[1], b[1])
        assert len(a[0]) + len(a[1]) == len(df)
    r1, r2 = shoal.split_random_leave_one_out(df, seed=1), shoal.split_random_leave_one_out(df, seed=2)
    assert not r1[1].equals(r2[1]) and r1[1]["user"].is_unique
    ctr, cte = shoal.split_chrono(df, 0.7)
    for u, g in cte.groupby("user"):
        assert g["timestamp"].min() >= ctr.loc[ctr["user"] == u, "timestamp"].max()
    n = df.groupby("user").size()
    assert (ctr.groupby("user").size() == np.maximum(np.floor(n * 0.7), 1).astype(int)).all()


ML100K = DATA / "ncf" / "ml-100k"


@pytest.mark.skipif(not (ML100K / "u.data").exists(), reason="no ml-100k in the shared data")
def test_leave_last_out_reproduces_ml100k():
    raw = pd.read_csv(ML100K / "u.data", sep="\t", names=["user", "item", "rating", "timestamp"])
    raw["user"] -= 1
    raw["item"] -= 1
    train, test = shoal.split_leave_last_out(raw)
    cols = ["user", "item", "rating", "timestamp"]
    want_test = pd.read_csv(ML100K / "ml-100k.test.rating", sep="\t", names=cols)
    want_train = pd.read_csv(ML100K / "ml-100k.train.rating", sep="\t", names=cols)
    assert len(test) == 943
    np.testing.assert_array_equal(test[cols].to_numpy(), want_test.to_numpy())
    got = train.sort_values(["user", "timestamp", "item"])[cols].to_numpy()
    np.testing.assert_array_equal(got, want_train.to_numpy())


SCRIPT = """
import sys, pandas as pd, shoal
m = shoal.NCF.load(sys.argv[1])
users = ["u0", "u5", "u17"]
print(m.recommend(users, k=7).to_json())
"""


def test_save_load_fresh_process(fitted, tmp_path):
    model, _, test = fitted
    path = tmp_path / "model"
    model.save(path)
    model.save(path)  # over an existing save
    assert sorted(os.listdir(tmp_path)) == ["model"]
    assert sorted(os.listdir(path)) == ["items.json", "model.json", "state.safetensors",
                                        "users.json", "weights.safetensors"]
    want = model.recommend(["u0", "u5", "u17"], k=7)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True,
                         text=True, check=True, env=os.environ)
    got = pd.read_json(io.StringIO(out.stdout.strip().splitlines()[-1]))
    assert list(got["user"]) == list(want["user"]) and list(got["item"]) == list(want["item"])
    np.testing.assert_array_equal(got["score"].to_numpy(np.float32), want["score"].to_numpy())
    loaded = shoal.NCF.load(path)
    pd.testing.assert_frame_equal(loaded.recommend(test["user"], k=5),
                                  model.recommend(test["user"], k=5))
    assert loaded.evaluate(test, k=10) == model.evaluate(test, k=10)
    with pytest.raises(ValueError, match="for inference"):
        loaded._trainer.fit(1)


def test_damaged_saves(fitted, tmp_path):
    model, _, _ = fitted
    path = tmp_path / "m"
    model.save(path)
    w = path / "weights.safetensors"
    b = bytearray(w.read_bytes())
    b[len(b) // 2] ^= 1
    w.write_bytes(bytes(b))
    with pytest.raises(shoal.ModelFileError, match="weights.safetensors is damaged"):
        shoal.NCF.load(path)
    model.save(path)
    (path / "items.json").unlink()
    with pytest.raises(shoal.ModelFileError, match="items.json"):
        shoal.NCF.load(path)
    model.save(path)
    meta = json.loads((path / "model.json").read_text())
    (path / "model.json").write_text(json.dumps({**meta, "version": 99}))
    with pytest.raises(shoal.ModelFileError, match="version 99"):
        shoal.NCF.load(path)
    with pytest.raises(shoal.ModelFileError, match="not a saved shoal model"):
        shoal.NCF.load(tmp_path)


def test_walkthrough_runs():
    """docs/ncf.md's walkthrough (examples/python/ncf_walkthrough.py) on its planted data."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "ncf_walkthrough.py"
    spec = importlib.util.spec_from_file_location("ncf_walkthrough", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    scores = mod.main(["--quick"])
    # Random: 10 of ~230 unseen items, HR@10 ≈ 0.04; knowing the groups alone, ≈ 10 / 47 ≈ 0.21.
    assert scores["users"] == 200 and scores["hr"] > 0.12


SHOAL = os.path.join(os.path.dirname(__file__), "..", "..", "build", "release", "shoal")


def cli(*args):
    return subprocess.run([SHOAL, *map(str, args)], capture_output=True, text=True, check=True)


@pytest.mark.skipif(not os.path.exists(SHOAL), reason="no build/release/shoal")
def test_cli_and_python_share_saved_models(fitted, tmp_path):
    """A model saved by Python recommends the same through `shoal ncf recommend`, and one
    trained and saved by `shoal ncf train --save` loads in Python and recommends what the CLI
    does (string ids, a contextual model, seen items excluded)."""
    model, train, _ = fitted
    model.save(tmp_path / "py")
    users = ["u0", "u5", "u17", "u3"]
    pd.DataFrame({"user": users}).to_csv(tmp_path / "users.csv", index=False)
    cli("ncf", "recommend", "--model", tmp_path / "py", "--users", tmp_path / "users.csv",
        "--k", 7, "--out", tmp_path / "recs.csv")
    got = pd.read_csv(tmp_path / "recs.csv")
    want = model.recommend(users, k=7)
    assert list(got["user"]) == list(want["user"]) and list(got["item"]) == list(want["item"])
    assert list(got["rank"]) == list(want["rank"])
    np.testing.assert_allclose(got["score"], want["score"], rtol=1e-5)

    train[["user", "item", "ctx"]].to_csv(tmp_path / "train.csv", index=False)
    cli("ncf", "train", "--train", tmp_path / "train.csv", "--model", "neumf", "--layers",
        "16,8", "--epochs", 2, "--batch-size", 64, "--threads", 2, "--save", tmp_path / "cli")
    loaded = shoal.NCF.load(tmp_path / "cli")
    assert loaded.context_cols == ["ctx"] and loaded.num_items == train["item"].nunique()
    cli("ncf", "recommend", "--model", tmp_path / "cli", "--users", tmp_path / "users.csv",
        "--k", 5, "--out", tmp_path / "recs2.csv")
    got = pd.read_csv(tmp_path / "recs2.csv")
    want = loaded.recommend(users, k=5)
    assert list(got["item"]) == list(want["item"])
    np.testing.assert_allclose(got["score"], want["score"], rtol=1e-5)
    seen = set(zip(train["user"], train["item"]))
    assert not any((u, i) in seen for u, i in zip(got["user"], got["item"]))

    # Damage is named, by either side.
    w = tmp_path / "cli" / "state.safetensors"
    w.write_bytes(w.read_bytes()[:-4])
    with pytest.raises(subprocess.CalledProcessError) as e:
        cli("ncf", "recommend", "--model", tmp_path / "cli", "--users", tmp_path / "users.csv",
            "--out", tmp_path / "r3.csv")
    assert "state.safetensors is damaged" in e.value.stderr
    with pytest.raises(shoal.ModelFileError, match="state.safetensors is damaged"):
        shoal.NCF.load(tmp_path / "cli")


@pytest.mark.skipif(not os.path.exists(SHOAL), reason="no build/release/shoal")
@pytest.mark.parametrize("how", ["leave-last-out", "random", "chrono"])
def test_cli_split_is_pythons(tmp_path, how):
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"user": rng.choice(["a", "b", "c", "d"], 200),
                       "item": rng.integers(0, 40, 200), "timestamp": rng.integers(0, 30, 200)})
    df.to_csv(tmp_path / "d.csv", index=False)
    cli("ncf", "split", "--data", tmp_path / "d.csv", "--how", how, "--seed", 9, "--ratio", 0.6,
        "--train-out", tmp_path / "tr.csv", "--test-out", tmp_path / "te.csv")
    split = {"leave-last-out": lambda: shoal.split_leave_last_out(df, seed=9),
             "random": lambda: shoal.split_random_leave_one_out(df, seed=9),
             "chrono": lambda: shoal.split_chrono(df, 0.6, seed=9)}[how]
    tr, te = split()
    got_tr, got_te = pd.read_csv(tmp_path / "tr.csv"), pd.read_csv(tmp_path / "te.csv")
    pd.testing.assert_frame_equal(got_tr, tr.reset_index(drop=True))
    assert sorted(map(tuple, got_te.to_numpy())) == sorted(map(tuple, te.to_numpy()))
