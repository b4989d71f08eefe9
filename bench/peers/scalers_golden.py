"""Writes tests/golden/local_scalers.json: coreforecast 0.0.20's local scaler statistics and
transforms (as neuralforecast 3.3.0's local_scaler_type uses them, on float32 data) for a few
series, and a neuralforecast NLinear fitted with local_scaler_type="robust" (weights, predict
and cross_validation frames), for tests/python/test_local_scalers.py.

    /opt/peers/bin/python bench/peers/scalers_golden.py
"""

import base64
import json
import logging
import os
import warnings

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
    logging.getLogger(name).setLevel(logging.ERROR)

from coreforecast.grouped_array import GroupedArray  # noqa: E402
from neuralforecast import NeuralForecast  # noqa: E402
from neuralforecast.core import _type2scaler  # noqa: E402
from neuralforecast.models import NLinear  # noqa: E402
from safetensors.torch import save  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden",
                   "local_scalers.json")


def scalers():
    rng = np.random.default_rng(7)
    lengths = [1, 2, 5, 17, 40, 101]
    x = np.concatenate([rng.lognormal(1, 0.8, n) * (k + 1) for k, n in enumerate(lengths)])
    x[20:24] = x[19]  # ties
    x = x.astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    out = {"x": x.tolist(), "offsets": offsets.tolist(), "kinds": {}}
    for kind, factory in _type2scaler.items():
        ga = GroupedArray(x, offsets)
        sc = factory().fit(ga)
        t = sc.transform(ga)
        out["kinds"][kind] = {"stats": sc.stats_.tolist(), "transform": t.tolist(),
                              "inverse": sc.inverse_transform(GroupedArray(t, offsets)).tolist()}
    return out


def panel():
    rng = np.random.default_rng(5)
    frames = []
    for k, length in enumerate((30, 26)):
        t = np.arange(length)
        frames.append(pd.DataFrame({
            "unique_id": f"s{k}", "ds": pd.date_range("2001-01-31", periods=length, freq="ME"),
            "y": 50 * (k + 1) + 2 * t + 8 * np.sin(t) + rng.normal(size=length) * (k + 1)}))
    return pd.concat(frames, ignore_index=True)


def forecaster():
    df = panel()
    kw = dict(h=3, input_size=6, max_steps=20, random_seed=1, logger=False,
              enable_progress_bar=False)
    nf = NeuralForecast(models=[NLinear(**kw)], freq="ME", local_scaler_type="robust")
    nf.fit(df)
    weights = base64.b64encode(save({k: v.contiguous() for k, v in
                                     nf.models[0].state_dict().items()})).decode()
    fc = nf.predict()
    cv = NeuralForecast(models=[NLinear(**kw)], freq="ME", local_scaler_type="robust")
    cv_df = cv.cross_validation(df, n_windows=2, step_size=2)
    cv_weights = base64.b64encode(save({k: v.contiguous() for k, v in
                                        cv.models[0].state_dict().items()})).decode()
    return {"panel": {"unique_id": df["unique_id"].tolist(),
                      "ds": df["ds"].dt.strftime("%Y-%m-%d").tolist(), "y": df["y"].tolist()},
            "weights": weights, "predict": fc["NLinear"].astype(float).tolist(),
            "cv_weights": cv_weights, "cv": cv_df["NLinear"].astype(float).tolist(),
            "cv_y": cv_df["y"].astype(float).tolist()}


def main():
    with open(OUT, "w") as f:
        json.dump({"scalers": scalers(), "nf": forecaster()}, f)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
