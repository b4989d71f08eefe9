"""The Auto models: one per registered model with neuralforecast's default search spaces, a
search whose trials run side by side in the fleet, failed trials recorded, the best refitted."""

import copy
import sys

import numpy as np
import pandas as pd
import pytest

import shoal
from shoal import _auto, _core, auto
from shoal._search_space import Space
from shoal.auto import AutoMLP, AutoNHITS, AutoTSMixer, tune

H = 4


@pytest.fixture(scope="module")
def panel():
    rng = np.random.default_rng(0)
    t = np.arange(60)
    rows = []
    for k in range(6):
        y = 10 + k + np.sin(2 * np.pi * t / 12) * (1 + k / 3) + rng.normal(0, 0.1, t.size)
        rows.append(pd.DataFrame({"unique_id": f"s{k}", "ds": t, "y": y}))
    return pd.concat(rows, ignore_index=True)


def small(**extra):
    return {"input_size": tune.choice([8, 12]), "max_steps": 20, "val_check_steps": 5,
            "learning_rate": tune.loguniform(1e-3, 1e-2), **extra}


def test_every_registered_model_has_an_auto_class():
    for name, class_name, neural in _core.forecast_models():
        if neural:
            cls = getattr(auto, f"Auto{class_name}")
            assert getattr(shoal, f"Auto{class_name}") is cls
            assert cls.__name__ == f"Auto{class_name}"


@pytest.mark.parametrize("class_name", sorted(c.__name__ for c in _auto._AUTO_MODELS))
def test_default_spaces_build_their_model(class_name):
    """Every draw from neuralforecast's default space is a model shoal accepts."""
    cls = getattr(auto, f"Auto{class_name}")
    config = cls.get_default_config(h=12, backend="ray", n_series=3)
    assert {"input_size", "learning_rate", "max_steps", "random_seed"} <= set(config)
    # input_size multiples of h; -1: 3 × h (neuralforecast's reading of input_size < 1)
    sizes = [12 * (3 if m == -1 else m) for m in cls.default_config["input_size_multiplier"]]
    args = (3,) if "n_series" in config else ()
    searcher = cls(12, *args, num_samples=1)
    rng = np.random.default_rng(0)
    for _ in range(20):
        draw = {k: v.sample(rng) if isinstance(v, Space) else v
                for k, v in config.items()}
        _, model = searcher._model_of({k: v for k, v in draw.items() if k != "n_series"})
        assert model.h == 12 and model.input_size in sizes


def test_ray_is_refused_naming_optuna():
    with pytest.raises(NotImplementedError, match="optuna"):
        AutoNHITS(h=H, backend="ray")
    with pytest.raises(ValueError, match="init argument"):
        AutoNHITS(h=H, config={"h": 3})
    with pytest.raises(TypeError, match="n_series"):
        AutoTSMixer(H)


def test_search_keeps_the_best_trial_and_forecasts(panel, tmp_path):
    model = AutoMLP(h=H, config=small(hidden_size=16, num_layers=2), num_samples=5, cpus=2)
    nf = shoal.NeuralForecast([model], freq=1)
    nf.fit(panel, val_size=H)
    r = model.results
    assert len(r) == 5 and (r["status"] == "ok").all()
    assert (r["steps"] == 20).all() and (r["fit_s"] > 0).all()
    best = r.loc[r["loss"].idxmin()]
    assert model.best_config["input_size"] == best["config/input_size"]
    assert model.best_config["learning_rate"] == best["config/learning_rate"]
    assert model.model.input_size == best["config/input_size"]
    assert len(model.study.trials) == 5
    fc = nf.predict()
    assert list(fc.columns) == ["unique_id", "ds", "AutoMLP"]
    assert len(fc) == 6 * H and np.isfinite(fc["AutoMLP"]).all()
    # A save holds the best model under the Auto model's name.
    nf.save(str(tmp_path / "nf"))
    loaded = shoal.NeuralForecast.load(str(tmp_path / "nf"))
    pd.testing.assert_frame_equal(loaded.predict(), fc)


def test_the_search_matches_a_plain_fit_of_the_best_config(panel):
    """The best trial's loss is the validation loss a NeuralForecast fit of its config gives."""
    model = AutoMLP(h=H, config=small(hidden_size=16, num_layers=2), num_samples=3)
    shoal.NeuralForecast([model], freq=1).fit(panel, val_size=H)
    plain = shoal.MLP(h=H, **model.best_config)
    nf = shoal.NeuralForecast([plain], freq=1)
    nf.fit(panel, val_size=H)
    assert nf.fit_info[0]["val_losses"][-1] == pytest.approx(model.results["loss"].min(),
                                                              rel=1e-6)


def test_a_failed_trial_is_recorded_and_the_search_goes_on(panel):
    # input_size 200 is longer than every series: that trial fails, the others run.
    config = small(hidden_size=16, num_layers=2)
    config["input_size"] = tune.choice([8, 200])
    model = AutoMLP(h=H, config=config, num_samples=6)
    shoal.NeuralForecast([model], freq=1).fit(panel, val_size=H)
    r = model.results
    failed = r[r["status"] == "failed"]
    assert len(failed) >= 1 and (failed["config/input_size"] == 200).all()
    assert failed["error"].str.contains("input_size").all()
    assert model.best_config["input_size"] == 8


def test_every_trial_failing_raises_with_the_first_error(panel):
    config = small(hidden_size=16, num_layers=2)
    config["input_size"] = 200
    with pytest.raises(ValueError, match="every trial failed.*input_size"):
        shoal.NeuralForecast([AutoMLP(h=H, config=config, num_samples=2)], freq=1).fit(
            panel, val_size=H)


def test_without_optuna_a_dict_config_is_sampled_by_shoal(panel, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    model = AutoMLP(h=H, config=small(hidden_size=16, num_layers=2), num_samples=3)
    shoal.NeuralForecast([model], freq=1).fit(panel, val_size=H)
    assert len(model.results) == 3 and model.study is None
    with pytest.raises(ImportError, match="pip install optuna"):
        fn = AutoMLP.get_default_config(h=H, backend="optuna")
        shoal.NeuralForecast([AutoMLP(h=H, config=fn, num_samples=1)], freq=1).fit(
            panel, val_size=H)


def test_an_optuna_config_function_and_sampler(panel):
    optuna = pytest.importorskip("optuna")

    def config(trial):
        return {"input_size": trial.suggest_categorical("input_size", [8, 12]),
                "hidden_size": 16, "num_layers": 2, "max_steps": 20, "val_check_steps": 5,
                "learning_rate": trial.suggest_float("learning_rate", 1e-3, 1e-2, log=True)}

    model = AutoMLP(h=H, config=config, num_samples=4,
                    search_alg=optuna.samplers.RandomSampler(seed=3))
    shoal.NeuralForecast([model], freq=1).fit(panel, val_size=H)
    assert isinstance(model.study.sampler, optuna.samplers.RandomSampler)
    assert model.study.best_value == pytest.approx(model.results["loss"].min())


def test_a_search_per_series_keeps_each_series_best_and_refits_it(panel, tmp_path):
    model = AutoMLP(h=H, config=small(hidden_size=16, num_layers=2), num_samples=4)
    nf = shoal.NeuralForecast([model], freq=1, per_series=True)
    nf.fit(panel, val_size=H)
    r = model.results
    assert sorted(r["unique_id"].unique()) == [f"s{k}" for k in range(6)]
    assert (r.groupby("unique_id").size() == 4).all() and (r["status"] == "ok").all()
    fc = nf.predict()
    assert np.isfinite(fc["AutoMLP"]).all() and len(fc) == 6 * H
    # Series chose different configurations: each group is predicted by its own model.
    assert len(model._parts) > 1
    insample = nf.predict_insample()
    assert np.isfinite(insample["AutoMLP"]).all()
    with pytest.raises(NotImplementedError, match="configurations"):
        nf.save(str(tmp_path / "nf"))
    for uid in ("s0", "s5"):
        rows = r[r["unique_id"] == uid]
        best = rows.loc[rows["loss"].idxmin()]
        cfg = model.best_config[uid]
        assert cfg["input_size"] == best["config/input_size"]
        # The refit is the plain per-series fit of that configuration (val_size 0).
        plain = shoal.NeuralForecast([shoal.MLP(h=H, **cfg)], freq=1, per_series=True)
        plain.fit(panel[panel["unique_id"] == uid])
        np.testing.assert_array_equal(plain.predict()["MLP"].to_numpy(),
                                      fc[fc["unique_id"] == uid]["AutoMLP"].to_numpy())


def test_a_series_whose_every_trial_fails_is_named(panel):
    short = pd.concat([panel, pd.DataFrame({"unique_id": "tiny", "ds": range(10),
                                            "y": np.arange(10.0)})], ignore_index=True)
    model = AutoMLP(h=H, config=small(hidden_size=16, num_layers=2), num_samples=2)
    with pytest.raises(ValueError, match="unique_id 'tiny'"):
        shoal.NeuralForecast([model], freq=1, per_series=True).fit(short, val_size=H)


def test_select_is_never_worse_than_seasonal_naive_on_validation(panel):
    # Series s5 is pure season (seasonal naive is exact there); the others have level shifts.
    seasonal = panel.copy()
    t = seasonal["ds"].to_numpy()
    seasonal.loc[seasonal["unique_id"] == "s5", "y"] = np.sin(2 * np.pi * t[:60] / 12) * 3
    cands = [AutoMLP(h=H, config=small(hidden_size=16, num_layers=2), num_samples=2),
             AutoNHITS(h=H, num_samples=2, config=small(mlp_units=3 * [[16, 16]]))]
    sel = auto.select(seasonal, cands, freq=1, season_length=12, ensemble=True)
    scores = sel.scores.set_index("unique_id")
    assert list(scores.columns) == ["SeasonalNaive", "AutoMLP", "AutoNHITS", "Ensemble"]
    chosen = sel.choice.set_index("unique_id")["model"]
    for uid in scores.index:
        assert scores.loc[uid, chosen[uid]] == scores.loc[uid].min()
        assert scores.loc[uid, chosen[uid]] <= scores.loc[uid, "SeasonalNaive"]
    assert chosen["s5"] == "SeasonalNaive"
    fc = sel.predict()
    assert len(fc) == 6 * H and np.isfinite(fc["Selection"]).all()
    s5 = fc[fc["unique_id"] == "s5"]
    np.testing.assert_allclose(s5["Selection"], np.sin(2 * np.pi * np.arange(60, 64) / 12) * 3,
                               atol=1e-9)
    assert list(s5["ds"]) == [60, 61, 62, 63]
    # Globally: one candidate for every series, the lowest mean score.
    overall = auto.select(seasonal, cands[:1], freq=1, season_length=12, per_series=False)
    means = overall.scores.set_index("unique_id").mean()
    assert (overall.choice["model"] == means.idxmin()).all()


def test_select_scores_several_validation_windows(panel):
    """n_windows=2: every candidate is scored on two windows of h rows, step_size apart, the
    last ending at each series' end; seasonal naive from each window's own cutoff."""
    cand = AutoMLP(h=H, config=small(hidden_size=16, num_layers=2), num_samples=2)
    sel = auto.select(panel, [cand], freq=1, season_length=12, n_windows=2, step_size=2)
    scores = sel.scores.set_index("unique_id")
    for uid, g in panel.groupby("unique_id"):
        y = g["y"].to_numpy()
        n = len(y)
        errors = [np.abs(np.resize(y[c - 12:c], H) - y[c:c + H]) for c in (n - 6, n - 4)]
        assert scores.loc[uid, "SeasonalNaive"] == pytest.approx(np.mean(errors), rel=1e-12)
    # The model's score is the MAE of its cross-validation forecasts of the same windows.
    nf = shoal.NeuralForecast([copy.deepcopy(cand)], freq=1)
    cv = nf.cross_validation(panel, n_windows=2, step_size=2)
    mae = (cv["AutoMLP"] - cv["y"]).abs().groupby(cv["unique_id"]).mean()
    np.testing.assert_allclose(scores["AutoMLP"].to_numpy(), mae[scores.index].to_numpy(),
                               rtol=1e-6)
    with pytest.raises(ValueError, match="too few rows.*n_windows = 30"):
        auto.select(panel, [cand], freq=1, n_windows=30)


def test_select_refuses_what_it_cannot_compare(panel):
    with pytest.raises(ValueError, match="Auto models"):
        auto.select(panel, [shoal.MLP(h=H, input_size=8)], freq=1)
    with pytest.raises(ValueError, match="horizons differ"):
        auto.select(panel, [AutoMLP(h=H), AutoMLP(h=H + 1, alias="other")], freq=1)
    with pytest.raises(ValueError, match="distinct"):
        auto.select(panel, [AutoMLP(h=H), AutoMLP(h=H)], freq=1)


def test_successive_halving_stops_trials_that_fall_behind(panel):
    """prune_factor: at each rung only the best 1/factor of the losses seen there go on, so
    some trials stop early ("pruned", fewer steps) and the best completed trial is kept."""
    config = small(hidden_size=16, num_layers=2)
    config["max_steps"], config["val_check_steps"] = 40, 5
    config["learning_rate"] = tune.loguniform(1e-5, 1e-1)
    model = AutoMLP(h=H, config=config, num_samples=8, cpus=1, prune_factor=2)
    shoal.NeuralForecast([model], freq=1).fit(panel, val_size=H)
    r = model.results
    pruned = r[r["status"] == "pruned"]
    assert len(pruned) >= 1 and (pruned["steps"] < 40).all()
    assert (r.loc[r["status"] == "ok", "steps"] == 40).all()
    done = r[r["status"] == "ok"]
    assert model.best_config["learning_rate"] == done.loc[done["loss"].idxmin(),
                                                          "config/learning_rate"]
    pruned_states = [t for t in model.study.trials if t.state.name == "PRUNED"]
    assert len(pruned_states) == len(pruned)
    with pytest.raises(ValueError, match="prune_factor"):
        AutoMLP(h=H, prune_factor=1)


def test_a_journal_resumes_and_extends_a_search(panel, tmp_path):
    """journal=: the finished trials are kept there; a search started again with it takes them
    from it (they are not run again) and its results equal one uninterrupted search's."""
    journal = tmp_path / "search.jsonl"
    config = small(hidden_size=16, num_layers=2)
    whole = AutoMLP(h=H, config=config, num_samples=4, cpus=2)
    shoal.NeuralForecast([whole], freq=1).fit(panel, val_size=H)
    first = AutoMLP(h=H, config=config, num_samples=2, cpus=2, journal=journal)
    shoal.NeuralForecast([first], freq=1).fit(panel, val_size=H)
    assert len(journal.read_text().splitlines()) == 2
    resumed = AutoMLP(h=H, config=config, num_samples=4, cpus=2, journal=journal)
    shoal.NeuralForecast([resumed], freq=1).fit(panel, val_size=H)
    assert len(journal.read_text().splitlines()) == 4  # two taken from it, two run
    columns = ["trial", "config/input_size", "config/learning_rate", "loss", "train_loss",
               "steps", "status"]
    pd.testing.assert_frame_equal(resumed.results[columns], whole.results[columns])
    pd.testing.assert_series_equal(resumed.results["fit_s"].iloc[:2],
                                   first.results["fit_s"])  # the journalled trials' own times
    assert resumed.best_config == whole.best_config
    # Another search on the same journal is refused, naming what to do.
    other = AutoMLP(h=H, config=small(hidden_size=32, num_layers=2), num_samples=2,
                    journal=journal)
    with pytest.raises(Exception, match="other settings or data.*delete the journal file"):
        shoal.NeuralForecast([other], freq=1).fit(panel, val_size=H)
    # ... and so is the same search on other data.
    changed = panel.assign(y=panel["y"] + 1.0)
    again = AutoMLP(h=H, config=config, num_samples=2, cpus=2, journal=journal)
    with pytest.raises(Exception, match="other settings or data"):
        shoal.NeuralForecast([again], freq=1).fit(changed, val_size=H)


def test_a_journal_resumes_a_search_per_series(panel, tmp_path):
    journal = tmp_path / "per_series.jsonl"
    config = small(hidden_size=16, num_layers=2)
    first = AutoMLP(h=H, config=config, num_samples=2, journal=journal)
    shoal.NeuralForecast([first], freq=1, per_series=True).fit(panel, val_size=H)
    assert len(journal.read_text().splitlines()) == 6 * 2
    resumed = AutoMLP(h=H, config=config, num_samples=2, journal=journal)
    nf = shoal.NeuralForecast([resumed], freq=1, per_series=True)
    nf.fit(panel, val_size=H)
    assert len(journal.read_text().splitlines()) == 6 * 2  # nothing run again
    columns = ["unique_id", "trial", "config/input_size", "loss", "status"]
    pd.testing.assert_frame_equal(resumed.results[columns], first.results[columns])
    assert resumed.best_config == first.best_config
    assert np.isfinite(nf.predict()["AutoMLP"]).all()
