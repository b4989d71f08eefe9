"""Weights through safetensors: names are neuralforecast's state_dict keys, the file reads with
the safetensors package, and a model loaded from it forecasts exactly as the one that wrote it."""

import json
import pathlib

import numpy as np
import pandas as pd
import pytest

import shoal
from conftest import FAST, make_panel

# neuralforecast 3.x TSMixerx(n_block=2) with future exogenous inputs, no static ones.
NF_KEYS_PREFIX = [
    "norm.affine_weight", "norm.affine_bias", "temporal_projection.weight",
    "temporal_projection.bias", "feature_mixer_hist.feature_lin_1.weight",
]
NF_KEYS_PRESENT = [
    "feature_mixer_futr.feature_norm.weight", "first_mixing.temporal_mixer.temporal_lin.weight",
    "mixing_block.1.feature_mixer.feature_lin_2.bias", "out.weight", "out.bias",
]


def fitted(panel, **kw):
    model = shoal.TSMixerx(h=4, input_size=12, n_series=3, futr_exog_list=["promo"], **FAST,
                           **kw)
    nf = shoal.NeuralForecast([model], freq="ME").fit(panel)
    return nf, model


def test_round_trip_same_forecasts(exog_panel, tmp_path):
    nf, model = fitted(exog_panel)
    futr = nf.make_future_dataframe().assign(promo=1.0)
    before = nf.predict(futr_df=futr)
    path = tmp_path / "tsmixerx.safetensors"
    model.save_weights(path)

    fresh = shoal.TSMixerx(h=4, input_size=12, n_series=3, futr_exog_list=["promo"], **FAST)
    fresh.load_weights(path)
    nf2 = shoal.NeuralForecast([fresh], freq="ME")
    after = nf2.predict(df=exog_panel, futr_df=futr)
    np.testing.assert_array_equal(before["TSMixerx"].to_numpy(), after["TSMixerx"].to_numpy())

    # Changing one tensor changes the forecasts (the loaded weights are really used).
    sd = {k: v.copy() for k, v in model.state_dict().items()}
    sd["out.bias"] += 1.0
    from shoal import _weights
    (tmp_path / "bumped.safetensors").write_bytes(_weights.encode(sd))
    fresh.load_weights(tmp_path / "bumped.safetensors")
    bumped = nf2.predict(df=exog_panel, futr_df=futr)
    assert not np.allclose(bumped["TSMixerx"].to_numpy(), before["TSMixerx"].to_numpy())


def test_names_and_safetensors_package(exog_panel, tmp_path):
    _, model = fitted(exog_panel)
    sd = model.state_dict()
    assert list(sd)[:len(NF_KEYS_PREFIX)] == NF_KEYS_PREFIX
    for k in NF_KEYS_PRESENT:
        assert k in sd
    assert all(v.dtype == np.float32 for v in sd.values())
    assert sd["out.weight"].shape == (3, 64)  # Linear(ff_dim → n_series)
    path = tmp_path / "w.safetensors"
    model.save_weights(path)
    st = pytest.importorskip("safetensors.numpy")
    loaded = st.load_file(str(path))
    assert set(loaded) == set(sd)
    for k, v in sd.items():
        np.testing.assert_array_equal(loaded[k], v)


def test_bad_weights_are_rejected(exog_panel, tmp_path):
    nf, model = fitted(exog_panel)
    sd = dict(model.state_dict())
    del sd["out.bias"]
    from shoal import _weights
    (tmp_path / "missing.safetensors").write_bytes(_weights.encode(sd))
    model.load_weights(tmp_path / "missing.safetensors")
    futr = nf.make_future_dataframe().assign(promo=0.0)
    with pytest.raises(ValueError, match="out.bias"):
        nf.predict(futr_df=futr)
    (tmp_path / "junk.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{")
    with pytest.raises(ValueError, match="header"):
        model.load_weights(tmp_path / "junk.safetensors")


def test_per_series_weights(panel, tmp_path):
    m = shoal.TSMixer(h=4, input_size=12, n_series=1, **FAST)
    nf = shoal.NeuralForecast([m], freq="ME", per_series=True, workers=1).fit(panel)
    with pytest.raises(ValueError, match="unique_id="):
        m.save_weights(tmp_path / "x.safetensors")
    m.save_weights(tmp_path / "s1.safetensors", unique_id="s1")
    assert "mixing_layers.0.temporal_mixer.temporal_norm.running_mean" in m.state_dict("s1")
    one = shoal.TSMixer(h=4, input_size=12, n_series=1, **FAST)
    one.load_weights(tmp_path / "s1.safetensors")
    got = shoal.NeuralForecast([one], freq="ME").predict(df=panel[panel.unique_id == "s1"])
    want = nf.predict()
    np.testing.assert_array_equal(got["TSMixer"].to_numpy(),
                                  want[want.unique_id == "s1"]["TSMixer"].to_numpy())


def golden_weights(name):
    """The "weights/<key>" arrays of a golden written by bench/peers/tsmixer_golden.py."""
    base = pathlib.Path(__file__).resolve().parents[1] / "golden" / name
    meta = json.loads(base.with_suffix(".json").read_text())
    blob = base.with_suffix(".bin").read_bytes()
    dtype = np.dtype(meta["dtype"]).newbyteorder("<")
    out = {}
    for key, entry in meta["arrays"].items():
        if key.startswith("weights/"):
            n = int(np.prod(entry["shape"]))
            out[key[len("weights/"):]] = np.frombuffer(blob, dtype, n, entry["offset"]).reshape(
                entry["shape"])
    return out


def test_random_seed_gives_neuralforecasts_initial_weights():
    # The golden's model: neuralforecast's TSMixerx(random_seed=1) with exogenous inputs of all
    # three kinds. One step at lr 1e-30 moves no float32 weight, so the state is the init.
    panel = make_panel(n_series=2, length=40, exog=True, ids=["a", "b"]).rename(
        columns={"temp": "x1", "promo": "f1"})
    static = pd.DataFrame({"unique_id": ["a", "b"], "s1": [0.5, -1.0], "s2": [2.0, 0.0]})
    model = shoal.TSMixerx(h=4, input_size=8, n_series=2, hist_exog_list=["x1"],
                           futr_exog_list=["f1"], stat_exog_list=["s1", "s2"], ff_dim=4,
                           dropout=0.0, random_seed=1, max_steps=1, learning_rate=1e-30)
    shoal.NeuralForecast([model], freq="ME").fit(panel, static_df=static)
    sd = model.state_dict()
    want = golden_weights("tsmixerx_grad")
    drawn = [k for k in want if "norm" not in k]  # the golden jitters the norms' affines
    assert len(drawn) >= 20
    for key in drawn:
        np.testing.assert_array_equal(sd[key], want[key].astype(np.float32), err_msg=key)
