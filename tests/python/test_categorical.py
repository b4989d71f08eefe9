"""Categorical exogenous features (cat_exog_list, categorical_cardinalities, cat_emb_dim), as
neuralforecast 3.3.0 takes them: its vocabulary, its checks, its embedding tables' names and
shapes, unseen categories, save/load. Parity of whole fits with neuralforecast's is in
test_fit_parity.py (TiDE-categorical, MLP-categorical)."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import shoal

H, L = 4, 12
STORES = ["north", "south", "east"]


DAYS = ["mon", "tue", "wed", "thu", "fri"]


def _frames(n=3, t=60, seed=0):
    """(df, static_df, futr_df): y is set by "day", a future categorical (strings) drawn at
    random, so only its column tells the future; "promo" is a historical one (booleans),
    "store" a static one."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        for k in range(t + H):
            day = DAYS[rng.integers(5)]
            promo = bool((k // 3) % 2)
            y = 10 + 2 * i + 3 * DAYS.index(day) + (1.5 if promo else 0) + rng.normal(0, 0.1)
            rows.append((f"s{i}", k + 1, y, day, promo))
    full = pd.DataFrame(rows, columns=["unique_id", "ds", "y", "day", "promo"])
    pos = full.groupby("unique_id").cumcount()
    df = full[pos < t].reset_index(drop=True)
    futr = full[pos >= t][["unique_id", "ds", "day"]].reset_index(drop=True)
    static = pd.DataFrame({"unique_id": [f"s{i}" for i in range(n)],
                           "store": [STORES[i % 3] for i in range(n)]})
    return df, static, futr


def _args(**kw):
    args = dict(h=H, input_size=L, futr_exog_list=["day"], hist_exog_list=["promo"],
                stat_exog_list=["store"], cat_exog_list=["day", "promo", "store"],
                categorical_cardinalities={"day": 5, "promo": 2, "store": 3}, max_steps=30,
                random_seed=3)
    args.update(kw)
    return args


# TiDE with its default layernorm=True forecasts the linear skip plus a bias (docs/python.md):
# nothing before that LayerNorm, its exogenous inputs included, trains.
MODELS = [("MLP", {}), ("NHITS", {}), ("NBEATSx", {}), ("TiDE", {"layernorm": False}),
          ("MLPMultivariate", {"n_series": 3}), ("TSMixerx", {"n_series": 3})]


def test_the_vocabulary_is_neuralforecasts():
    df, static, futr = _frames()
    nf = shoal.NeuralForecast([shoal.MLP(**_args(max_steps=2))], freq=1)
    nf.fit(df, static_df=static)
    assert nf.categorical_vocab_ == {
        "day": {"fri": 1, "mon": 2, "thu": 3, "tue": 4, "wed": 5},
        "promo": {False: 1, True: 2},
        "store": {"east": 1, "north": 2, "south": 3}}


@pytest.mark.parametrize("name,extra", MODELS)
def test_each_model_trains_its_embedding_tables(name, extra):
    df, static, futr = _frames()
    cls = getattr(shoal, name)
    model = cls(**_args(**extra))
    nf = shoal.NeuralForecast([model], freq=1)
    fc = nf.fit(df, static_df=static).predict(futr_df=futr)
    assert np.isfinite(fc[name]).all() and len(fc) == 3 * H
    state = model.state_dict()
    # neuralforecast's names and shapes: U + 1 rows (row 0 for unseen categories), fastai
    # widths min(50, ceil(1.6 U^0.56)): day 5 -> 4, promo 2 -> 3, store 3 -> 3.
    assert state["futr_cat_embeddings.0.weight"].shape == (6, 4)
    assert state["hist_cat_embeddings.0.weight"].shape == (3, 3)
    assert state["stat_cat_embeddings.0.weight"].shape == (4, 3)
    # Trained: the rows of the categories the data has moved from their N(0, 1) start; row 0
    # (never read as itself) did not.
    start = cls(**_args(max_steps=1, learning_rate=1e-12, **extra))
    shoal.NeuralForecast([start], freq=1).fit(df, static_df=static)
    for table in ("futr_cat_embeddings.0.weight", "hist_cat_embeddings.0.weight"):
        moved = np.abs(state[table] - start.state_dict()[table]).max(axis=1)
        assert moved[0] < 1e-6 and (moved[1:] > 1e-4).all(), (table, moved)


def test_categories_carry_signal():
    """The future is in the categorical column only: a model given it forecasts far better than
    one without exogenous inputs."""
    df, static, futr = _frames(t=120)
    # The noiseless future, series by series (futr_df's rows are series-major).
    k = np.tile(np.arange(120, 120 + H), 3)
    want = (10 + 2 * np.repeat(np.arange(3), H) + 3 * futr["day"].map(DAYS.index).to_numpy()
            + np.where((k // 3) % 2 == 1, 1.5, 0.0))
    # hidden_size 256 (neuralforecast's default is 1024): the same test at a sixth of the cost.
    with_cat = shoal.MLP(**_args(max_steps=300, learning_rate=3e-3, hidden_size=256))
    plain = shoal.MLP(h=H, input_size=L, max_steps=300, learning_rate=3e-3, random_seed=3,
                      hidden_size=256)
    fc = shoal.NeuralForecast([with_cat, plain], freq=1).fit(df, static_df=static).predict(
        futr_df=futr)
    mae_cat = np.abs(fc["MLP"].to_numpy() - want).mean()
    mae_plain = np.abs(fc["MLP1"].to_numpy() - want).mean()
    assert mae_cat < 0.5 * mae_plain, (mae_cat, mae_plain)


def test_an_unseen_category_reads_the_mean_embedding():
    df, static, futr = _frames()
    model = shoal.TiDE(**_args(layernorm=False))
    nf = shoal.NeuralForecast([model], freq=1).fit(df, static_df=static)
    seen = nf.predict(futr_df=futr)["TiDE"].to_numpy()
    unseen = nf.predict(futr_df=futr.assign(day="sun"))["TiDE"].to_numpy()
    assert np.isfinite(unseen).all() and not np.allclose(seen, unseen)
    # Every unseen value is code 0 (the mean of the learned rows; tests/layers checks the mean),
    # and so is a missing one.
    other = nf.predict(futr_df=futr.assign(day="holiday"))["TiDE"].to_numpy()
    missing = nf.predict(futr_df=futr.assign(day=None))["TiDE"].to_numpy()
    np.testing.assert_array_equal(unseen, other)
    np.testing.assert_array_equal(unseen, missing)
    with pytest.raises(ValueError, match="futr_df lacks column 'day'"):  # a row, not a value
        nf.predict(futr_df=futr.iloc[1:])


def test_save_and_load_keep_the_vocabulary(tmp_path):
    df, static, futr = _frames()
    nf = shoal.NeuralForecast([shoal.NHITS(**_args())], freq=1).fit(df, static_df=static)
    want = nf.predict(futr_df=futr)
    nf.save(tmp_path / "fc")
    futr.to_csv(tmp_path / "futr.csv", index=False)
    code = (f"import numpy as np, pandas as pd, shoal\n"
            f"nf = shoal.NeuralForecast.load({str(tmp_path / 'fc')!r})\n"
            f"print(nf.categorical_vocab_['day'])\n"
            f"fc = nf.predict(futr_df=pd.read_csv({str(tmp_path / 'futr.csv')!r}))\n"
            f"np.save({str(tmp_path / 'got.npy')!r}, fc['NHITS'].to_numpy())\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    assert "'fri': 1" in out.stdout
    got = np.load(tmp_path / "got.npy")
    np.testing.assert_array_equal(got, want["NHITS"].to_numpy())


def test_local_scalers_leave_the_codes_alone():
    df, static, futr = _frames()
    df = df.assign(price=np.linspace(1, 100, len(df)))
    futr = futr.assign(price=101.0)
    args = _args(futr_exog_list=["day", "price"])
    nf = shoal.NeuralForecast([shoal.MLP(**args)], freq=1, local_scaler_type="standard")
    fc = nf.fit(df, static_df=static).predict(futr_df=futr)
    assert np.isfinite(fc["MLP"]).all()
    assert "price" in nf._scalers and "day" not in nf._scalers and "promo" not in nf._scalers


@pytest.mark.parametrize("kwargs,match", [
    (dict(cat_exog_list=["color"]), "must also be listed"),
    (dict(categorical_cardinalities={"day": 5, "promo": 2}), "missing `categorical_card"),
    (dict(cat_emb_dim="wide"), "cat_emb_dim"),
    (dict(categorical_cardinalities={"day": 0, "promo": 2, "store": 3}), "categorical_card"),
])
def test_neuralforecasts_checks_at_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        shoal.MLP(**_args(**kwargs))


def test_more_categories_than_declared_is_an_error():
    df, static, _ = _frames()
    model = shoal.MLP(**_args(categorical_cardinalities={"day": 4, "promo": 2, "store": 3}))
    with pytest.raises(ValueError, match="'day' has 5 distinct values"):
        shoal.NeuralForecast([model], freq=1).fit(df, static_df=static)


def test_models_must_agree_on_a_cardinality():
    df, static, _ = _frames()
    a = shoal.MLP(**_args(max_steps=1))
    b = shoal.NHITS(**_args(max_steps=1, categorical_cardinalities={"day": 6, "promo": 2,
                                                                     "store": 3}))
    with pytest.raises(ValueError, match="conflicting"):
        shoal.NeuralForecast([a, b], freq=1).fit(df, static_df=static)


@pytest.mark.parametrize("name", ["NLinear", "DLinear", "NBEATS", "TSMixer"])
def test_models_without_categorical_inputs_refuse_them_as_neuralforecast(name):
    args = dict(h=H, input_size=L) | ({"n_series": 2} if name == "TSMixer" else {})
    with pytest.raises(ValueError, match="does not support categorical exogenous variables"):
        getattr(shoal, name)(**args, cat_exog_list=["day"])
