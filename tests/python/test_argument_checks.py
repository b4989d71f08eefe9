"""Every argument means something or is refused, naming it: NCF counts and k are integers in
range, never rounded or ignored."""

import numpy as np
import pandas as pd
import pytest

import shoal


@pytest.fixture(scope="module")
def train():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"user": rng.integers(0, 20, 300), "item": rng.integers(0, 30, 300)})


@pytest.mark.parametrize("value, error", [(-3, ValueError), (0, ValueError), (2.5, TypeError),
                                          (True, TypeError), ("5", TypeError),
                                          (2**31, ValueError)])
@pytest.mark.parametrize("name", ["num_users", "num_items"])
def test_fit_counts(train, name, value, error):
    with pytest.raises(error, match=name):
        shoal.NCF(epochs=1, threads=1).fit(train, **{name: value})


def test_recommend_k(train):
    m = shoal.NCF(epochs=1, threads=1).fit(train, num_users=25)
    assert m.num_users == 25
    for k, error in [(2.7, TypeError), (0, ValueError), (None, TypeError), ("3", TypeError)]:
        with pytest.raises(error, match="k"):
            m.recommend([1], k=k)
    assert len(m.recommend([1], k=np.int64(3))) == 3


def test_no_negatives_is_refused(train):
    with pytest.raises(ValueError, match="num_negatives"):
        shoal.NCF(epochs=1, threads=1, num_negatives=0).fit(train)
