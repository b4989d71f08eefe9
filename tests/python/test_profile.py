"""shoal.profile(): fits inside the context are profiled by the C++ recorder (zones with FLOPs,
a table, a Perfetto trace); fits outside it are not."""

import json

import numpy as np
import pandas as pd
import pytest

import shoal


@pytest.fixture(autouse=True)
def no_peak_measurement(monkeypatch):
    # The roofs (peak GFLOP/s) would be measured once per machine; not needed for these checks.
    monkeypatch.setenv("SHOAL_PROFILE_MEASURE", "0")


def ncf_frame(rows=600, users=30, items=40, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"user": rng.integers(0, users, rows), "item": rng.integers(0, items, rows),
                         "ctx": rng.normal(size=rows)})


def series_frame(n_series=3, length=60):
    t = np.arange(length)
    return pd.DataFrame({"unique_id": np.repeat([f"s{i}" for i in range(n_series)], length),
                         "ds": np.tile(t, n_series),
                         "y": np.concatenate([np.sin(t / 4 + i) + 0.1 * i
                                              for i in range(n_series)])})


def test_ncf_fit_is_profiled_per_layer_and_step(tmp_path):
    model = shoal.NCF(model="neumf", factors=4, layers=(16, 8), epochs=2, batch_size=64,
                      context_cols=["ctx"], threads=1, seed=1)
    with shoal.profile("trace", out=tmp_path) as prof:
        model.fit(ncf_frame())
    assert len(prof.runs) == 1
    run = prof.runs[0]
    assert run["name"] == "ncf" and "Self ms" in prof.table()
    z = prof.zones()
    assert {"name", "category", "calls", "self_ms", "flops", "gflops", "peak_fraction"} <= set(z)
    # The tower's forward zones have analytic FLOPs; mlp.0.rows.index (listing the distinct
    # users and items for the factored first layer) does none.
    tower = z[z["name"].str.contains("mlp") & (z["category"] == "forward")]
    costed = tower[~tower["name"].str.endswith(".rows.index")]
    assert len(costed) == 2 and (costed["flops"] > 0).all() and (tower["calls"] > 0).all()
    assert {"forward", "backward", "optimizer", "data"} <= set(z["category"])
    with open(run["trace"]) as f:
        events = json.load(f)["traceEvents"]
    assert any(str(e.get("name", "")).startswith("ProfilerStep") for e in events)
    assert (tmp_path / "ncf.report.html").exists() and (tmp_path / "ncf.summary.json").exists()


def test_forecast_fits_per_series_and_joint(tmp_path):
    df = series_frame()
    with shoal.profile("stats", out=tmp_path) as prof:
        shoal.NeuralForecast(models=[shoal.TSMixerx(h=6, input_size=12, n_series=1, max_steps=20)],
                             freq=1, per_series=True).fit(df)
        shoal.NeuralForecast(models=[shoal.TSMixer(h=6, input_size=12, n_series=3, max_steps=20)],
                             freq=1).fit(df)
    assert [r["name"] for r in prof.runs] == ["TSMixerx", "TSMixer-2"]
    assert prof.runs[0]["trace"] == ""  # stats mode writes no trace
    z = prof.zones()
    assert set(z["fit"]) == {"TSMixerx", "TSMixer-2"}
    mixers = z[z["name"].str.contains("feature_mixer") & (z["category"] == "backward")]
    assert len(mixers) > 0 and (mixers["flops"] > 0).all()


def test_no_context_no_profile(tmp_path):
    outer = shoal.profile(out=tmp_path)
    shoal.NCF(factors=4, layers=(8, 4), epochs=1, threads=1).fit(ncf_frame())
    assert outer.runs == [] and list(tmp_path.iterdir()) == []


def test_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        shoal.profile("everything")
    with pytest.raises(ValueError, match="rows"):
        shoal.profile(rows=0)
