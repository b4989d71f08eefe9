"""shoal.NCF on planted data: users and items in 4 groups, a user's positives drawn from its
group's items, so a trained model must rank in-group items above out-of-group ones."""

import numpy as np
import pandas as pd
import pytest

import shoal

USERS, ITEMS, GROUPS = 60, 80, 4


def planted(seed=0, per_user=12):
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(USERS):
        g = u % GROUPS
        items = rng.choice(np.arange(g, ITEMS, GROUPS), size=per_user, replace=False)
        rows += [(u, int(i), float(g == 0) + rng.normal(scale=0.1)) for i in items]
    df = pd.DataFrame(rows, columns=["user", "item", "ctx"])
    test = df.groupby("user").tail(1)
    train = df.drop(test.index)
    negatives = np.stack([rng.choice(np.arange((u % GROUPS) + 1, ITEMS + 1, GROUPS) % ITEMS,
                                     size=20, replace=False) for u in test["user"]])
    return train.reset_index(drop=True), test.reset_index(drop=True), negatives


@pytest.fixture(scope="module")
def data():
    return planted()


def test_fit_evaluate_score(data):
    train, test, negatives = data
    model = shoal.NCF(model="neumf", factors=8, layers=(16, 8), epochs=8, batch_size=64,
                      learning_rate=0.01, threads=2, seed=3)
    model.fit(train, num_users=USERS, num_items=ITEMS)
    assert len(model.losses) == 8 and model.losses[-1] < model.losses[0]
    m = model.evaluate(test, negatives, k=5)
    assert set(m) >= {"hr", "ndcg", "users"} and m["users"] == USERS
    # Negatives come from other groups: a trained model finds the positive far above chance
    # (5 of 21 candidates: HR@5 ≈ 0.24 at random).
    assert m["hr"] > 0.6 and 0 < m["ndcg"] <= m["hr"]
    s = model.score(np.array([0, 0]), np.array([0, 1]))
    assert s.dtype == np.float32 and s.shape == (2,)
    assert ((s > 0) & (s < 1)).all()
    assert s[0] > s[1]  # user 0 is in group 0, item 0 too; item 1 is not


def test_context_and_determinism(data):
    train, test, negatives = data
    kw = dict(model="mlp", layers=(16, 8), epochs=2, batch_size=64, threads=2, seed=5,
              context_cols=["ctx"])
    a = shoal.NCF(**kw).fit(train, num_users=USERS, num_items=ITEMS)
    b = shoal.NCF(**kw).fit(train, num_users=USERS, num_items=ITEMS)
    assert a.losses == b.losses
    users, items = np.arange(USERS), np.arange(USERS) % ITEMS
    np.testing.assert_array_equal(a.score(users, items), b.score(users, items))


def test_weights_round_trip(data, tmp_path):
    train, _, _ = data
    kw = dict(model="gmf", epochs=1, batch_size=64, threads=1)
    a = shoal.NCF(**kw, seed=1).fit(train, num_users=USERS, num_items=ITEMS)
    b = shoal.NCF(**kw, seed=2).fit(train, num_users=USERS, num_items=ITEMS)
    u, i = np.arange(10), np.arange(10)
    assert not np.array_equal(a.score(u, i), b.score(u, i))
    a.save_weights(tmp_path / "gmf.safetensors")
    b.load_weights(tmp_path / "gmf.safetensors")
    np.testing.assert_array_equal(a.score(u, i), b.score(u, i))
    assert "embed_user_gmf.weight" in a.state_dict()


def test_errors(data):
    train, test, negatives = data
    with pytest.raises(ValueError, match="missing column 'item'"):
        shoal.NCF().fit(train.drop(columns="item"))
    with pytest.raises(ValueError, match="integer ids"):
        shoal.NCF().fit(train.assign(user=train["user"].astype(float)))
    with pytest.raises(ValueError, match="not fitted"):
        shoal.NCF().score([0], [0])
    m = shoal.NCF(epochs=1, threads=1).fit(train)
    with pytest.raises(ValueError, match="negatives must be"):
        m.evaluate(test, negatives[:3])
    with pytest.raises(ValueError, match="outside the model"):
        m.score([USERS + 5], [0])
