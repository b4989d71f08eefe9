"""Writes tests/golden/val_df_local_scaler.json: neuralforecast 3.3.0's fit(val_df=...) with
local_scaler_type, for tests/python/test_val_df.py.

neuralforecast fits the local scalers on df alone, scales df's rows, and appends val_df's rows
unscaled (TimeSeriesDataset.align + append): the validation windows and the later predict()
read model-scale inputs followed by data-scale ones, and the forecasts are inverted with df's
statistics. A full-batch NLinear (windows_batch_size=None, batch_size above the number of
series) draws nothing at random after its initial weights, so shoal's whole fit (validation
losses, early stopping, predict) should land on neuralforecast's.

    /opt/peers/bin/python bench/peers/val_df_scalers_golden.py
"""

import json
import logging
import os
import warnings

import numpy as np
import pandas as pd
import torch

warnings.filterwarnings("ignore")
for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
    logging.getLogger(name).setLevel(logging.ERROR)

from neuralforecast import NeuralForecast  # noqa: E402
from neuralforecast.models import NLinear  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden",
                   "val_df_local_scaler.json")
N_VAL = 6
ARGS = dict(h=3, input_size=8, max_steps=60, val_check_steps=5, early_stop_patience_steps=3,
            random_seed=1, windows_batch_size=None, batch_size=1024)


def panel():
    rng = np.random.default_rng(11)
    frames = []
    for k, length in enumerate((40, 34, 37)):
        t = np.arange(length)
        frames.append(pd.DataFrame({
            "unique_id": f"s{k}", "ds": pd.date_range("2001-01-31", periods=length, freq="ME"),
            "y": 40 * (k + 1) + (k + 1) * t + 6 * np.sin(t / 2) + rng.normal(size=length)}))
    return pd.concat(frames, ignore_index=True)


def main():
    torch.set_num_threads(1)
    df = panel()
    pos = df.groupby("unique_id").cumcount()
    size = df.groupby("unique_id")["y"].transform("size")
    train, val = df[pos < size - N_VAL], df[pos >= size - N_VAL]
    out = {"panel": {"unique_id": df["unique_id"].tolist(),
                     "ds": df["ds"].dt.strftime("%Y-%m-%d").tolist(), "y": df["y"].tolist()},
           "n_val": N_VAL, "args": ARGS, "cases": {}}
    for kind in ("standard", "robust"):
        m = NLinear(**ARGS, accelerator="cpu", devices=1, enable_progress_bar=False,
                    logger=False, enable_model_summary=False, enable_checkpointing=False)
        nf = NeuralForecast(models=[m], freq="ME", local_scaler_type=kind)
        nf.fit(train, val_df=val)
        fc = nf.predict()
        out["cases"][kind] = {
            "val_losses": [float(v) for _, v in nf.models[0].valid_trajectories],
            "val_steps": [int(s) for s, _ in nf.models[0].valid_trajectories],
            "predict": fc["NLinear"].astype(float).tolist(),
            "predict_ds": fc["ds"].dt.strftime("%Y-%m-%d").tolist()}
        print(kind, out["cases"][kind]["val_losses"][:4], out["cases"][kind]["predict"][:3])
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.abspath(OUT)}")


if __name__ == "__main__":
    main()
