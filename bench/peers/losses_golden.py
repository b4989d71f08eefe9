"""Golden values for shoal's point losses (tests/layers/losses_golden_test.cpp), computed by
neuralforecast 3.3.0's own loss classes in float64.

Run with the peers venv (CI only reads the committed output):
    /opt/peers/bin/python bench/peers/losses_golden.py [out=tests/golden/losses.json]

One JSON file: {case name: {...}}. A case holds the loss ("mae", "mse", "rmse", "mape",
"smape", "mase", "huber", "quantile") and its parameters (delta, q, seasonality), the shapes
B (windows), h, N (series), L (input_size), the inputs as flat row-major lists (y and y_hat
[B, h, N], mask [B, h, N] with zeros in it, y_insample [B, L, N], horizon_weight [h] or empty),
the loss value and d loss / d y_hat (torch autograd) [B, h, N]. The inputs have the shapes
neuralforecast's BaseModel.training_step gives a loss: [B, h, 1] / [B, L, 1] for univariate
models, [B, h, N] / [B, L, N] for multivariate ones. Errors stay away from 0 and from Huber's
delta (the kinks), y away from 0 (MAPE's 1/|y|).
"""

import json
import sys

import torch
from neuralforecast.losses.pytorch import (MAE, MAPE, MASE, MSE, RMSE, SMAPE, HuberLoss,
                                           QuantileLoss)

LOSSES = {
    "mae": (lambda hw: MAE(horizon_weight=hw), {}),
    "mse": (lambda hw: MSE(horizon_weight=hw), {}),
    "rmse": (lambda hw: RMSE(horizon_weight=hw), {}),
    "mape": (lambda hw: MAPE(horizon_weight=hw), {}),
    "smape": (lambda hw: SMAPE(horizon_weight=hw), {}),
    "mase": (lambda hw: MASE(seasonality=3, horizon_weight=hw), {"seasonality": 3}),
    "huber": (lambda hw: HuberLoss(delta=0.7, horizon_weight=hw), {"delta": 0.7}),
    "quantile_0.2": (lambda hw: QuantileLoss(q=0.2, horizon_weight=hw), {"q": 0.2}),
    "quantile_0.9": (lambda hw: QuantileLoss(q=0.9, horizon_weight=hw), {"q": 0.9}),
}
SHAPES = {"uni": (4, 3, 1, 7), "multi": (2, 3, 2, 6)}  # B, h, N, L


def inputs(gen, B, h, N, L):
    y = torch.randn(B, h, N, generator=gen, dtype=torch.float64)
    y = torch.where(y.abs() < 0.1, y + 0.3 * torch.sign(y + 1e-9), y)  # |y| ≥ 0.1
    e = 0.05 + 1.5 * torch.rand(B, h, N, generator=gen, dtype=torch.float64)
    e = torch.where((e - 0.7).abs() < 0.03, e + 0.1, e)  # away from Huber's delta
    sign = torch.where(torch.rand(B, h, N, generator=gen) < 0.5, -1.0, 1.0).double()
    y_hat = y + sign * e
    mask = (torch.rand(B, h, N, generator=gen) > 0.25).double()
    mask[0, 0, 0] = 1.0
    y_insample = torch.randn(B, L, N, generator=gen, dtype=torch.float64) * 2 + 1
    hw = 0.25 + 2 * torch.rand(h, generator=gen, dtype=torch.float64)
    return y, y_hat, mask, y_insample, hw


def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/losses.json"
    gen = torch.Generator().manual_seed(20261126)
    cases = {}
    for shape, (B, h, N, L) in SHAPES.items():
        for name, (make, params) in LOSSES.items():
            for weighted in (False, True):
                y, y_hat, mask, y_insample, hw = inputs(gen, B, h, N, L)
                loss = make(hw.numpy() if weighted else None)
                if loss.horizon_weight is not None:  # stored as float32 by neuralforecast
                    loss.horizon_weight = loss.horizon_weight.double()
                y_hat = y_hat.clone().requires_grad_(True)
                value = loss(y=y, y_hat=y_hat, y_insample=y_insample, mask=mask)
                (grad,) = torch.autograd.grad(value, y_hat)
                cases[f"{name}/{shape}{'/hw' if weighted else ''}"] = {
                    "loss": name.split("_")[0], **params, "B": B, "h": h, "N": N, "L": L,
                    "y": flat(y), "y_hat": flat(y_hat.detach()), "mask": flat(mask),
                    "y_insample": flat(y_insample), "horizon_weight": flat(loss.horizon_weight) if weighted else [],
                    "value": float(value.detach()), "grad": flat(grad),
                }
    with open(out, "w") as f:
        json.dump(cases, f, separators=(",", ":"))
    print(f"{len(cases)} cases -> {out}")


if __name__ == "__main__":
    main()
