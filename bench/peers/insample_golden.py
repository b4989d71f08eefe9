"""Writes tests/golden/insample.json: neuralforecast 3.3.0's predict_insample on a small panel
of unequal series, after a fit and after a cross_validation, with the trained NLinear's weights,
so that tests/python/test_insample.py can load them into shoal and compare frame and values.

    /opt/peers/bin/python bench/peers/insample_golden.py
"""

import base64
import io
import json
import logging
import os
import warnings

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
    logging.getLogger(name).setLevel(logging.ERROR)

from neuralforecast import NeuralForecast  # noqa: E402
from neuralforecast.models import NLinear  # noqa: E402
from safetensors.torch import save  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "insample.json")


def panel():
    rng = np.random.default_rng(3)
    frames = []
    for k, length in enumerate((17, 22)):
        t = np.arange(length)
        frames.append(pd.DataFrame({
            "unique_id": f"s{k}",
            "ds": pd.date_range("2001-01-31", periods=length, freq="ME"),
            "y": 10 + 0.5 * t + 3 * np.sin(t) + rng.normal(size=length) + 5 * k}))
    return pd.concat(frames, ignore_index=True)


def frame_json(df):
    return {"unique_id": df["unique_id"].tolist(),
            "ds": df["ds"].dt.strftime("%Y-%m-%d").tolist(),
            "cutoff": df["cutoff"].dt.strftime("%Y-%m-%d").tolist(),
            "NLinear": df["NLinear"].astype(float).tolist(), "y": df["y"].astype(float).tolist(),
            "columns": list(df.columns)}


def main():
    df = panel()
    cases = []
    for how in ("fit", "cv"):
        nf = NeuralForecast(models=[NLinear(h=3, input_size=5, max_steps=20, random_seed=1, logger=False,
                                            enable_progress_bar=False,
                                            scaler_type="standard")], freq="ME")
        if how == "fit":
            nf.fit(df)
        else:
            nf.cross_validation(df, n_windows=2, step_size=2)
        weights = base64.b64encode(save({k: v.contiguous() for k, v in
                                         nf.models[0].state_dict().items()})).decode()
        for step in (1, 2):
            cases.append({"how": how, "step_size": step, "weights": weights,
                          "frame": frame_json(nf.predict_insample(step_size=step))})
    data = {"panel": {"unique_id": df["unique_id"].tolist(),
                      "ds": df["ds"].dt.strftime("%Y-%m-%d").tolist(), "y": df["y"].tolist()},
            "model": {"h": 3, "input_size": 5, "scaler_type": "standard"}, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(data, f, indent=0)
    print(f"wrote {OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
