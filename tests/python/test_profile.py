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


def test_diff_advice_memory_and_gzip(tmp_path):
    def fit(threads, out, gzip=False):
        model = shoal.NCF(model="neumf", factors=4, layers=(16, 8), epochs=1, batch_size=64,
                          context_cols=["ctx"], threads=threads, seed=1)
        with shoal.profile("trace", out=out, gzip=gzip) as prof:
            model.fit(ncf_frame())
        return prof

    a = fit(1, tmp_path / "a")
    b = fit(2, tmp_path / "b", gzip=True)
    assert b.runs[0]["trace"].endswith(".pt.trace.json.gz")
    import gzip
    with gzip.open(b.runs[0]["trace"], "rt") as f:
        assert "traceEvents" in json.load(f)
    d = b.diff(a)
    assert d.iloc[0]["kind"] == "step" and list(d["kind"].unique()) == ["step", "phase", "zone"]
    zones = d[d["kind"] == "zone"]
    assert (zones["delta_us"].abs().diff().dropna() <= 1e-9).all()  # sorted by |delta|
    assert d.attrs["machine_note"] == ""
    # The same as the file path form, and as diff.cpp for identical runs: all deltas 0.
    assert d.equals(b.diff(a.runs[0]["summary"]))
    assert (a.diff(a)["delta_us"] == 0).all()
    # The memory view: the arena per layer and region (recorded by the forecasting trainer).
    with shoal.profile("stats", out=tmp_path / "f") as f:
        shoal.NeuralForecast(models=[shoal.TSMixer(h=6, input_size=12, n_series=3, max_steps=5)],
                             freq=1).fit(series_frame())
    mem = f.memory()
    assert {"model", "layer", "params", "grads", "optimizer state", "activations"} <= set(mem)
    assert mem["params"].sum() > 0 and (mem["optimizer state"] == 2 * mem["params"]).all()
    s = f.summary()
    assert s["peak_rss_bytes"] > 0 and len(s["memory"]) == 1
    assert "few_steps" in set(f.advice()["rule"])  # 5 steps: too few to trust
    s = a.summary()
    adv = a.advice()
    assert list(adv.columns) == ["rule", "score", "advice", "evidence"]
    assert "few_steps" not in set(adv["rule"]) or s["steps"] < 10


def test_diff_summaries_other_machine():
    from shoal.profiling import diff_summaries
    base = {"steps": 10, "step_mean_us": 100.0, "breakdown_ms": {"forward": 1.0},
            "machine": {"cpu": "A", "peak_gflops": 100, "bandwidth_gbs": 20},
            "zones": [{"name": "x.forward", "model": 0, "self_ms": 1.0, "gflops": 5,
                       "peak_fraction": 0.05}]}
    other = dict(base, machine={"cpu": "B", "peak_gflops": 50, "bandwidth_gbs": 10},
                 zones=[{"name": "y.forward", "model": 0, "self_ms": 0.5, "gflops": 5,
                         "peak_fraction": 0.1}])
    d = diff_summaries(base, other)
    assert "different machines" in d.attrs["machine_note"]
    only = d.set_index("name")["only"]
    assert only["x.forward"] == "only in A" and only["y.forward"] == "only in B"
