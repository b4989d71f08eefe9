"""Golden files for the models' multi-output heads: each windowed model built by neuralforecast
3.3.0 for a loss with several outputs per forecast value, its float64 forward and gradients.

Run with the peers venv (needs neuralforecast + torch; CI only reads the committed output):
    /opt/peers/bin/python bench/peers/multi_output_golden.py [out_dir=tests/golden [model ...]]

A loss's outputsize_multiplier M sizes each model's output layer (and its basis, for NBEATS and
NHITS); the model then returns [B, H, N * M], in the layout its own reshapes give, which the
loss's domain_map reads (MQLoss: [B, H, N, M]; DistributionLoss: M slices of N). The goldens use
MQLoss with three quantiles (M = 3), so the model's raw output is recorded as it is, with no
domain map in between. Everything else (configurations, inputs, seeds, format) is the single-
output gradient goldens': forecast_golden.py and tsmixer_golden.py, written as
<model>_mq3_grad.json / .bin with "outputs": 3.
"""

import os
import sys

import torch

from neuralforecast.losses.pytorch import MQLoss

sys.path.insert(0, os.path.dirname(__file__))
import forecast_golden  # noqa: E402
import tsmixer_golden  # noqa: E402
from golden_models import MODELS  # noqa: E402

QUANTILES = [0.1, 0.5, 0.9]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "golden")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for kind in sys.argv[2:] or MODELS:
        loss = MQLoss(quantiles=QUANTILES)
        if kind in ("tsmixer", "tsmixerx"):
            tsmixer_golden.gradient_golden(kind, out_dir, loss=loss, suffix="_mq3_grad")
        else:
            forecast_golden.gradient_golden(kind, out_dir, loss=loss, suffix="_mq3_grad")
        print("wrote", kind + "_mq3_grad")


if __name__ == "__main__":
    main()
