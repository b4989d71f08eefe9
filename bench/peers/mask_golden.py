"""Writes tests/golden/available_mask.json: neuralforecast 3.3.0's predict and predict_insample
on a small panel whose df carries an available_mask column (0 on a few rows, some of them at the
series' ends), with the trained NLinear's weights, so that tests/python/test_available_mask.py
can load them into shoal and compare the forecasts: the window scaler must skip the missing
rows as neuralforecast's does. neuralforecast feeds a missing row's value itself to the model
(shoal reads it as 0), so its df holds 0 there; shoal's test gives NaN.

    /opt/peers/bin/python bench/peers/mask_golden.py
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

from neuralforecast import NeuralForecast  # noqa: E402
from neuralforecast.models import NLinear  # noqa: E402
from safetensors.torch import save  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden",
                   "available_mask.json")
MISSING = {"s0": [2, 9, 15, 16], "s1": [0, 1, 12, 20]}  # rows within each series


def panel():
    rng = np.random.default_rng(5)
    frames = []
    for k, length in enumerate((17, 22)):
        t = np.arange(length)
        mask = np.ones(length)
        mask[MISSING[f"s{k}"]] = 0
        y = 10 + 0.5 * t + 3 * np.sin(t) + rng.normal(size=length) + 5 * k
        frames.append(pd.DataFrame({
            "unique_id": f"s{k}",
            "ds": pd.date_range("2001-01-31", periods=length, freq="ME"),
            "y": np.where(mask == 1, y, 0.0), "available_mask": mask}))
    return pd.concat(frames, ignore_index=True)


def main():
    df = panel()
    nf = NeuralForecast(models=[NLinear(h=3, input_size=5, max_steps=20, random_seed=1,
                                        logger=False, enable_progress_bar=False,
                                        scaler_type="standard")], freq="ME")
    nf.fit(df)
    weights = base64.b64encode(save({k: v.contiguous() for k, v in
                                     nf.models[0].state_dict().items()})).decode()
    data = {"panel": {"unique_id": df["unique_id"].tolist(),
                      "ds": df["ds"].dt.strftime("%Y-%m-%d").tolist(), "y": df["y"].tolist(),
                      "available_mask": df["available_mask"].tolist()},
            "model": {"h": 3, "input_size": 5, "scaler_type": "standard"}, "weights": weights,
            "predict": nf.predict()["NLinear"].astype(float).tolist(),
            "insample": nf.predict_insample(step_size=1)["NLinear"].astype(float).tolist()}
    with open(OUT, "w") as f:
        json.dump(data, f, indent=0)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
