"""An NCF recommender from a frame of interactions to a saved model (docs/ncf.md walks through
it). Run: python examples/python/ncf_walkthrough.py [u.data] [--quick]

With MovieLens-100K's u.data (../shared/data/ncf/ml-100k/u.data) it trains on real ratings;
without one it makes a small frame of planted tastes. --quick runs a short fit (the test suite
runs this script that way)."""

import os
import sys
import tempfile

import numpy as np
import pandas as pd

import shoal


def interactions(path):
    if path:
        return pd.read_csv(path, sep="\t", names=["user", "item", "rating", "timestamp"])
    # 200 users who like items of their own group of 4, with string ids as real logs have.
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(200), 15)
    items = (users % 4) + 4 * rng.integers(0, 60, users.size)
    return pd.DataFrame({"user": [f"user{u}" for u in users], "item": [f"sku-{i}" for i in items],
                         "timestamp": rng.integers(0, 10**6, users.size)}).drop_duplicates(
                             ["user", "item"])


def main(argv):
    quick = "--quick" in argv
    paths = [a for a in argv if not a.startswith("--")]
    # 1. A frame of interactions: one row per (user, item) a user interacted with.
    df = interactions(paths[0] if paths else None)
    # 2. Hold out each user's latest interaction.
    train, test = shoal.split_leave_last_out(df, time_col="timestamp")
    # 3. Fit: ids may be any integers or strings.
    model = shoal.NCF(model="neumf", factors=8, layers=(64, 32, 16, 8),
                      epochs=10 if quick else 20, learning_rate=0.01 if quick else 1e-3,
                      seed=1)
    model.fit(train)
    # 4. Evaluate by full ranking: every item ranked, the user's training items excluded.
    scores = model.evaluate(test, k=10)
    print("full ranking @10:", {k: round(v, 4) for k, v in scores.items() if k != "users"})
    # 5. Recommend 10 new items to some users.
    recs = model.recommend(test["user"].iloc[:3], k=10)
    print(recs.head(12).to_string(index=False))
    # 6. Save, load, and get the same recommendations back.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ncf-model")
        model.save(path)
        again = shoal.NCF.load(path).recommend(test["user"].iloc[:3], k=10)
    pd.testing.assert_frame_equal(recs, again)
    print("saved and reloaded: same recommendations")
    return scores


if __name__ == "__main__":
    main(sys.argv[1:])
