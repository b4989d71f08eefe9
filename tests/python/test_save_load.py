"""NeuralForecast.save / load: a saved forecaster loaded in a fresh process forecasts the same
frame bit for bit; exogenous inputs, model_index, overwrite, damaged files and continued
fitting."""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import shoal

FAST = dict(max_steps=8, random_seed=3)
STATIC = pd.DataFrame({"unique_id": ["s0", "s1", "s2"], "size": [1.0, 2.0, 3.0]})

# Loads the forecaster at argv[1] and writes predict()'s frame (futr_df read from argv[2] when
# given) to argv[3]: the whole of what a fresh process needs is in the directory.
LOADER = """
import sys, pandas as pd, shoal
nf = shoal.NeuralForecast.load(sys.argv[1])
futr = pd.read_parquet(sys.argv[2]) if sys.argv[2] != "-" else None
nf.predict(futr_df=futr).to_parquet(sys.argv[3])
"""


def _predict_in_fresh_process(path, futr, tmp_path):
    futr_file = "-"
    if futr is not None:
        futr_file = str(tmp_path / "futr.parquet")
        futr.to_parquet(futr_file)
    out = tmp_path / "pred.parquet"
    subprocess.run([sys.executable, "-c", LOADER, str(path), futr_file, str(out)], check=True,
                   env=dict(os.environ))
    return pd.read_parquet(out)


def _exog_forecaster(exog_panel):
    exog = dict(futr_exog_list=["promo"], hist_exog_list=["temp"], stat_exog_list=["size"])
    models = [shoal.NHITS(h=4, input_size=12, alias="nhits_exog", mlp_units=[[16, 16]] * 3,
                          loss=shoal.losses.HuberLoss(delta=0.5), **exog, **FAST),
              shoal.TSMixerx(h=4, input_size=12, n_series=3, **exog, **FAST)]
    nf = shoal.NeuralForecast(models, freq="ME", workers=1)
    nf.fit(exog_panel, static_df=STATIC)
    futr = nf.make_future_dataframe()
    futr["promo"] = (np.arange(len(futr)) % 2).astype(float)
    return nf, futr


def test_global_forecaster_with_exogenous_predicts_the_same_in_a_fresh_process(exog_panel,
                                                                               tmp_path):
    nf, futr = _exog_forecaster(exog_panel)
    want = nf.predict(futr_df=futr)
    assert list(want.columns) == ["unique_id", "ds", "nhits_exog", "TSMixerx"]
    nf.save(tmp_path / "nf")
    got = _predict_in_fresh_process(tmp_path / "nf", futr, tmp_path)
    pd.testing.assert_frame_equal(got, want, check_exact=True)

    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    for a, b in zip(nf.models, loaded.models):
        assert type(a) is type(b) and repr(a) == repr(b)
        assert set(a._args) == set(b._args)
        for k in a._args:
            if k != "loss":
                assert getattr(a, k) == getattr(b, k), k
        assert a.loss.__class__ is b.loss.__class__ and vars(a.loss) == vars(b.loss)
        assert a._weights == b._weights
    assert loaded.models[0].loss.delta == 0.5
    assert (loaded.freq, loaded.per_series, loaded.workers) == ("ME", False, 1)
    pd.testing.assert_frame_equal(loaded._fit_args["static_df"], STATIC)

    # The tensors keep neuralforecast's names: the file reads as any safetensors file.
    safetensors = pytest.importorskip("safetensors.numpy")
    t = safetensors.load_file(str(tmp_path / "nf" / "model1.safetensors"))
    assert set(t) == set(nf.models[1].state_dict())


def test_manifest_describes_the_directory(exog_panel, tmp_path):
    nf, _ = _exog_forecaster(exog_panel)
    nf.save(tmp_path / "nf")
    meta = json.loads((tmp_path / "nf" / "model.json").read_text())
    assert meta["format"] == "shoal.forecaster" and meta["version"] == 1
    assert meta["freq"] == "ME" and meta["per_series"] is False and meta["pin"] is True
    assert [m["class"] for m in meta["models"]] == ["NHITS", "TSMixerx"]
    assert meta["models"][0]["alias"] == "nhits_exog"
    assert meta["models"][0]["args"]["loss"] == {"loss": "HuberLoss", "params": {"delta": 0.5, "horizon_weight": None}}
    assert meta["models"][1]["weight_files"] == ["model1.safetensors"]
    listed = set(meta["files"])
    assert listed | {"model.json"} == set(os.listdir(tmp_path / "nf"))
    assert [c["name"] for c in meta["dataset"]["columns"]] == [
        "unique_id", "ds", "y", "temp", "promo"]


def test_per_series_forecaster_predicts_the_same_in_a_fresh_process(panel, tmp_path):
    models = [shoal.NLinear(h=4, input_size=12, **FAST),
              shoal.TSMixer(h=4, input_size=12, n_series=1, **FAST)]
    nf = shoal.NeuralForecast(models, freq="ME", per_series=True, workers=1, pin=False)
    nf.fit(panel)
    want = nf.predict()
    nf.save(tmp_path / "nf")
    got = _predict_in_fresh_process(tmp_path / "nf", None, tmp_path)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # One weights file per model holds every series.
    files = sorted(f for f in os.listdir(tmp_path / "nf") if f.startswith("model"))
    assert files == ["model.json", "model0.ids.json", "model0.safetensors",
                     "model1.ids.json", "model1.safetensors"]
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    assert loaded.per_series and not loaded.pin
    for a, b in zip(nf.models, loaded.models):
        assert list(a._series_weights) == list(b._series_weights)
        for u in a._series_weights:
            sa, sb = a.state_dict(u), b.state_dict(u)
            assert list(sa) == list(sb)
            assert all(np.array_equal(sa[k], sb[k]) for k in sa)


def test_many_series_save_and_load_quickly(tmp_path):
    import time
    n = 2000
    df = pd.DataFrame({"unique_id": np.repeat(np.arange(n), 20), "ds": np.tile(np.arange(20), n),
                       "y": np.random.default_rng(0).normal(size=20 * n)})
    nf = shoal.NeuralForecast([shoal.NLinear(h=2, input_size=4, max_steps=1)], freq=1,
                              per_series=True)
    nf.fit(df)
    start = time.perf_counter()
    nf.save(tmp_path / "nf")
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    assert time.perf_counter() - start < 10
    pd.testing.assert_frame_equal(loaded.predict(), nf.predict(), check_exact=True)
    assert loaded.predict()["unique_id"].dtype == df["unique_id"].dtype


def test_model_index_saves_a_subset(exog_panel, tmp_path):
    nf, futr = _exog_forecaster(exog_panel)
    want = nf.predict(futr_df=futr)
    nf.save(tmp_path / "nf", model_index=[1])
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    assert [repr(m) for m in loaded.models] == ["TSMixerx"]
    got = loaded.predict(futr_df=futr)
    pd.testing.assert_frame_equal(got, want[["unique_id", "ds", "TSMixerx"]], check_exact=True)
    with pytest.raises(ValueError, match="model_index 2"):
        nf.save(tmp_path / "other", model_index=[2])


def test_overwrite(panel, tmp_path):
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME")
    nf.fit(panel)
    nf.save(tmp_path / "nf")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        nf.save(tmp_path / "nf")
    with pytest.raises(ValueError, match="model_index"):  # a failed save leaves it intact
        nf.save(tmp_path / "nf", model_index=[5], overwrite=True)
    shoal.NeuralForecast.load(tmp_path / "nf")
    nf.models[0].alias = "renamed"
    nf.save(tmp_path / "nf", overwrite=True)
    assert repr(shoal.NeuralForecast.load(tmp_path / "nf").models[0]) == "renamed"
    assert [p for p in os.listdir(tmp_path) if p != "nf"] == []  # no temporary left
    (tmp_path / "empty").mkdir()
    nf.save(tmp_path / "empty")  # an empty directory is not overwritten data


@pytest.mark.parametrize("damage", ["tamper", "truncate", "delete"])
@pytest.mark.parametrize("name", ["model0.safetensors", "dataset.2.npy", "model0.ids.json"])
def test_damaged_files_raise_naming_them(panel, tmp_path, damage, name):
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME",
                              per_series=True)
    nf.fit(panel).save(tmp_path / "nf")
    f = tmp_path / "nf" / name
    b = f.read_bytes()
    if damage == "tamper":
        f.write_bytes(b[:-1] + bytes([b[-1] ^ 1]))
    elif damage == "truncate":
        f.write_bytes(b[: len(b) // 2])
    else:
        f.unlink()
    with pytest.raises(shoal.ModelFileError, match=name):
        shoal.NeuralForecast.load(tmp_path / "nf")


def test_not_a_saved_forecaster(tmp_path):
    with pytest.raises(shoal.ModelFileError, match="model.json"):
        shoal.NeuralForecast.load(tmp_path)
    (tmp_path / "model.json").write_text("{broken")
    with pytest.raises(shoal.ModelFileError, match=str(tmp_path)):
        shoal.NeuralForecast.load(tmp_path)


def test_a_loaded_forecaster_continues_fitting(exog_panel, tmp_path):
    nf, futr = _exog_forecaster(exog_panel)
    nf.save(tmp_path / "nf")
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    first = nf.predict(futr_df=futr)
    # Both continue from the same weights on the same data: the same second fit.
    nf.fit(exog_panel, static_df=STATIC)
    loaded.fit()  # the saved dataset and static_df
    again = loaded.predict(futr_df=futr)
    pd.testing.assert_frame_equal(again, nf.predict(futr_df=futr), check_exact=True)
    assert not np.array_equal(again["TSMixerx"], first["TSMixerx"])
    fresh = shoal.NeuralForecast.load(tmp_path / "nf").fit(
        exog_panel, static_df=STATIC, use_init_models=True)
    assert not np.array_equal(fresh.predict(futr_df=futr)["TSMixerx"], again["TSMixerx"])


def test_without_the_dataset_predict_needs_df(panel, tmp_path):
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME")
    with pytest.raises(ValueError, match="save_dataset=False"):
        nf.save(tmp_path / "unfitted")
    nf.fit(panel)
    nf.save(tmp_path / "nf", save_dataset=False)
    assert not [f for f in os.listdir(tmp_path / "nf") if f.startswith("dataset")]
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    with pytest.raises(ValueError, match="needs df"):
        loaded.predict()
    pd.testing.assert_frame_equal(loaded.predict(df=panel), nf.predict(), check_exact=True)


def test_load_arguments(panel, tmp_path, capsys):
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME")
    nf.fit(panel).save(tmp_path / "nf")
    with pytest.raises(NotImplementedError, match="map_location"):
        shoal.NeuralForecast.load(tmp_path / "nf", map_location="cpu")
    with pytest.raises(ValueError, match="trust_remote=True"):
        shoal.NeuralForecast.load("s3://bucket/nf")
    with pytest.raises(NotImplementedError, match="local directories"):
        shoal.NeuralForecast.load("s3://bucket/nf", trust_remote=True)
    # allow_pickle changes nothing (nothing is pickled); verbose reports what it loaded.
    loaded = shoal.NeuralForecast.load(str(tmp_path / "nf") + "/", verbose=True,
                                       allow_pickle=True)
    assert "Model NLinear loaded." in capsys.readouterr().out
    pd.testing.assert_frame_equal(loaded.predict(), nf.predict(), check_exact=True)


def test_integer_ds_and_ids(tmp_path):
    from conftest import make_panel
    df = make_panel(int_ds=True, ids=[7, 3, 5])
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq=1)
    nf.fit(df).save(tmp_path / "nf")
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    assert loaded.freq == 1
    pd.testing.assert_frame_equal(loaded.predict(), nf.predict(), check_exact=True)


@pytest.mark.parametrize("model_index", [None, [1]])
def test_prediction_intervals_survive(panel, tmp_path, model_index):
    from shoal.utils import PredictionIntervals
    models = [shoal.NLinear(h=4, input_size=12, **FAST), shoal.NLinear(h=4, input_size=8, **FAST)]
    nf = shoal.NeuralForecast(models, freq="ME")
    nf.fit(panel, prediction_intervals=PredictionIntervals(n_windows=2))
    want = nf.predict(level=[80, 90])
    nf.save(tmp_path / "nf", model_index=model_index)
    got = shoal.NeuralForecast.load(tmp_path / "nf").predict(level=[80, 90])
    if model_index:  # the second NLinear ("NLinear1") is the only, "NLinear", column now
        want = want[["unique_id", "ds"] + [c for c in want if c.startswith("NLinear1")]]
        want.columns = [c.replace("NLinear1", "NLinear") for c in want.columns]
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_polars_fit_predicts_polars_after_load(panel, tmp_path):
    pl = pytest.importorskip("polars")
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="1mo")
    nf.fit(pl.from_pandas(panel)).save(tmp_path / "nf")
    got = shoal.NeuralForecast.load(tmp_path / "nf").predict()
    assert isinstance(got, pl.DataFrame)
    assert got.equals(nf.predict())


def _scaled_forecaster(exog_panel, kind):
    exog = dict(futr_exog_list=["promo"], hist_exog_list=["temp"], stat_exog_list=["size"])
    models = [shoal.NHITS(h=4, input_size=12, mlp_units=[[16, 16]] * 3, **exog, **FAST),
              shoal.NLinear(h=4, input_size=12, **FAST)]
    nf = shoal.NeuralForecast(models, freq="ME", local_scaler_type=kind,
                              local_static_scaler_type="robust", workers=1)
    # boxcox: positive values
    panel = exog_panel.assign(temp=exog_panel["temp"].abs() + 0.5, promo=exog_panel["promo"] + 1)
    nf.fit(panel, static_df=STATIC)
    futr = nf.make_future_dataframe()
    futr["promo"] = (np.arange(len(futr)) % 2).astype(float) + 1
    return nf, futr


@pytest.mark.parametrize("kind", ["standard", "robust-iqr", "boxcox"])
def test_local_scalers_predict_the_same_in_a_fresh_process(exog_panel, tmp_path, kind):
    nf, futr = _scaled_forecaster(exog_panel, kind)
    want = nf.predict(futr_df=futr)
    nf.save(tmp_path / "nf")
    got = _predict_in_fresh_process(tmp_path / "nf", futr, tmp_path)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    meta = json.loads((tmp_path / "nf" / "model.json").read_text())
    assert meta["version"] == 2  # a reader unaware of the scalers must refuse it
    assert (meta["local_scaler_type"], meta["local_static_scaler_type"]) == (kind, "robust")
    assert meta["scalers"] == {"columns": ["y", "temp", "promo"], "file": "scalers.npy"}
    stats = np.load(tmp_path / "nf" / "scalers.npy")
    assert stats.dtype == np.float32 and stats.shape == (3, 3, 2)
    np.testing.assert_array_equal(stats[0], nf._scalers["y"].stats)
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    # the statistics are read back, not refitted: changed ones change the forecasts
    loaded._scalers["y"].stats[:, 1 if kind != "boxcox" else 0] *= 2
    assert not np.allclose(loaded.predict(futr_df=futr)["NLinear"], want["NLinear"])


def test_local_scalers_without_the_dataset_refit_on_predicts_df(panel, tmp_path):
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME",
                              local_scaler_type="robust")
    nf.fit(panel).save(tmp_path / "nf", save_dataset=False)
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    other = panel.assign(y=panel["y"] * 3)
    pd.testing.assert_frame_equal(loaded.predict(df=other), nf.predict(df=other),
                                  check_exact=True)


@pytest.mark.parametrize("damage", ["tamper", "truncate", "delete", "reshape", "float64"])
def test_damaged_scalers_raise_naming_them(panel, tmp_path, damage):
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME",
                              local_scaler_type="minmax")
    nf.fit(panel).save(tmp_path / "nf")
    f = tmp_path / "nf" / "scalers.npy"
    b = f.read_bytes()
    if damage == "tamper":
        f.write_bytes(b[:-1] + bytes([b[-1] ^ 1]))
    elif damage == "truncate":
        f.write_bytes(b[: len(b) // 2])
    elif damage == "delete":
        f.unlink()
    else:  # well-formed, listed with its checksum, but not float32 [columns, series, 2]
        import hashlib
        import io
        buf = io.BytesIO()
        stats = np.load(f)
        np.save(buf, stats[:, :2] if damage == "reshape" else stats.astype(np.float64))
        f.write_bytes(buf.getvalue())
        manifest = tmp_path / "nf" / "model.json"
        meta = json.loads(manifest.read_text())
        meta["files"]["scalers.npy"] = {"bytes": len(buf.getvalue()),
                                        "sha256": hashlib.sha256(buf.getvalue()).hexdigest()}
        manifest.write_text(json.dumps(meta))
    with pytest.raises(shoal.ModelFileError, match="scalers.npy") as e:
        shoal.NeuralForecast.load(tmp_path / "nf")
    if damage == "float64":
        assert "float32 [columns, series, 2]" in str(e.value)


@pytest.mark.parametrize("kind", [None, "standard"])
def test_val_df_rows_survive_in_their_place(tmp_path, kind):
    """fit(val_df=...)'s rows stay last in each series (whatever their dates) and, with a local
    scaler, unscaled: predict after load forecasts from the same inputs."""
    from conftest import make_panel
    df = make_panel(n_series=3, length=36)
    pos = df.groupby("unique_id").cumcount()
    size = df.groupby("unique_id")["y"].transform("size")
    train, val = df[pos < size - 6], df[pos >= size - 6]
    val = val.assign(ds=val["ds"] - pd.offsets.MonthEnd(300))  # dated before df
    nf = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME",
                              local_scaler_type=kind)
    nf.fit(train, val_df=val)
    want = nf.predict()
    nf.save(tmp_path / "nf")
    assert json.loads((tmp_path / "nf" / "model.json").read_text())["dataset"]["val_rows"] == 6
    got = _predict_in_fresh_process(tmp_path / "nf", None, tmp_path)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    loaded = shoal.NeuralForecast.load(tmp_path / "nf")
    assert loaded._fit_args["series"].unscaled_tail == 6
    pd.testing.assert_frame_equal(loaded.predict_insample(), nf.predict_insample(),
                                  check_exact=True)
