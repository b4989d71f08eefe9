"""The peer of `shoal bench fleet`: neuralforecast TSMixerx, one model per series, fitted one
after another in a single-thread process (the seed's pattern: many such processes at once).

    /opt/peers/bin/python bench/peers/fleet_tsmixerx.py --data m3_monthly_train.csv.gz \
        --n-series 2 --ready R --go G --out O.json

Imports torch and neuralforecast and reads the data first, then creates the file --ready and
waits for the file --go, so that concurrent processes time only their fits. Writes
{"start", "end", "fit_s": [...], "series": [...]} (time.time() seconds) to --out. Settings:
TSMixerx defaults (n_series 1, ff_dim 64, n_block 2, dropout 0, RevIN, Adam lr 1e-3, batch 32
windows), h 18, input_size 36, --max-steps steps, seed 1; CPU, no logger, no progress bar.
"""

import argparse
import json
import logging
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import pandas as pd  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

from neuralforecast import NeuralForecast  # noqa: E402
from neuralforecast.models import TSMixerx  # noqa: E402

logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
logging.getLogger("lightning").setLevel(logging.ERROR)
logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--n-series", type=int, default=2)
    ap.add_argument("--h", type=int, default=18)
    ap.add_argument("--input-size", type=int, default=36)
    ap.add_argument("--max-steps", type=int, default=1000)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    df = pd.read_csv(a.data)
    ids = list(dict.fromkeys(df["unique_id"]))[: a.n_series]
    frames = [df[df["unique_id"] == i].reset_index(drop=True) for i in ids]

    open(a.ready, "w").close()
    while not os.path.exists(a.go):
        time.sleep(0.05)

    fit_s = []
    start = time.time()
    for frame in frames:
        t0 = time.time()
        model = TSMixerx(h=a.h, input_size=a.input_size, n_series=1, max_steps=a.max_steps,
                         random_seed=1, accelerator="cpu", devices=1, logger=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
        nf = NeuralForecast(models=[model], freq=1)
        nf.fit(frame)
        nf.predict()
        fit_s.append(time.time() - t0)
    end = time.time()
    with open(a.out, "w") as fh:
        json.dump({"start": start, "end": end, "fit_s": fit_s, "series": ids,
                   "torch_threads": torch.get_num_threads()}, fh)


if __name__ == "__main__":
    main()
