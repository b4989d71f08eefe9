"""Golden values for shoal's point losses (tests/layers/losses_golden_test.cpp), computed by
neuralforecast 3.3.0's own loss classes in float64.

Run with the peers venv (CI only reads the committed output):
    /opt/peers/bin/python bench/peers/losses_golden.py [out=tests/golden/losses.json]
        [multi_out=tests/golden/multi_output_losses.json]

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
from neuralforecast.losses.pytorch import (GMM, MAE, MAPE, MASE, MSE, RMSE, SMAPE,
                                           DistributionLoss, HuberLoss, MQLoss, QuantileLoss)

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
    multi_out = sys.argv[2] if len(sys.argv) > 2 else "tests/golden/multi_output_losses.json"
    multi = multi_output_cases()
    multi.update(mixture_cases())
    with open(multi_out, "w") as f:
        json.dump(multi, f, separators=(",", ":"))
    print(f"{len(multi)} cases -> {multi_out}")


# The multi-output losses (tests/layers/multi_output_losses_test.cpp), from their own
# generator so the point losses' file stays as it was. MQLoss cases hold "quantiles" (as the
# loss stores them, float32 widened) and y_hat [B, h, N·Q] (the model's output before
# domain_map); DistributionLoss cases hold "distribution", the raw output [B, h, K·N], loc and
# scale [B, N] (the scaler's, broadcast over h as _get_loc_scale gives them) and d loss / d raw.
MQ = {
    "mq_level": lambda hw: MQLoss(level=[80, 90], horizon_weight=hw),
    "mq_quantiles": lambda hw: MQLoss(quantiles=[0.1, 0.5, 0.75, 0.3], horizon_weight=hw),
}


def multi_output_cases():
    gen = torch.Generator().manual_seed(20261127)
    cases = {}
    for shape, (B, h, N, L) in SHAPES.items():
        for weighted in (False, True):
            hw = 0.25 + 2 * torch.rand(h, generator=gen, dtype=torch.float64)
            mask = (torch.rand(B, h, N, generator=gen) > 0.25).double()
            mask[0, 0, 0] = 1.0
            y = torch.randn(B, h, N, generator=gen, dtype=torch.float64) * 2 + 1
            tag = f"{shape}{'/hw' if weighted else ''}"
            for name, make in MQ.items():
                loss = make(hw.numpy() if weighted else None)
                if loss.horizon_weight is not None:
                    loss.horizon_weight = loss.horizon_weight.double()
                loss.quantiles.data = loss.quantiles.data.double()
                Q = len(loss.quantiles)
                y_hat = y.repeat_interleave(Q, dim=2) + torch.randn(B, h, N * Q, generator=gen,
                                                                   dtype=torch.float64)
                y_hat.requires_grad_(True)
                value = loss(y=y, y_hat=loss.domain_map(y_hat), mask=mask)
                (grad,) = torch.autograd.grad(value, y_hat)
                cases[f"{name}/{tag}"] = {
                    "loss": "mqloss", "quantiles": flat(loss.quantiles), "B": B, "h": h, "N": N,
                    "y": flat(y), "y_hat": flat(y_hat.detach()), "mask": flat(mask),
                    "horizon_weight": flat(loss.horizon_weight) if weighted else [],
                    "value": float(value.detach()), "grad": flat(grad),
                }
            for dist in ("Normal", "StudentT"):
                loss = DistributionLoss(distribution=dist, horizon_weight=hw.numpy() if weighted else None)
                if loss.horizon_weight is not None:
                    loss.horizon_weight = loss.horizon_weight.double()
                K = loss.outputsize_multiplier
                raw = torch.randn(B, h, K * N, generator=gen, dtype=torch.float64)
                loc = torch.randn(B, 1, N, generator=gen, dtype=torch.float64)
                scale = 0.5 + 2 * torch.rand(B, 1, N, generator=gen, dtype=torch.float64)
                raw.requires_grad_(True)
                distr_args = loss.scale_decouple(output=loss.domain_map(raw), loc=loc, scale=scale)
                value = loss(y=y, distr_args=distr_args, mask=mask)
                (grad,) = torch.autograd.grad(value, raw)
                cases[f"{dist.lower()}/{tag}"] = {
                    "loss": "distribution", "distribution": dist, "B": B, "h": h, "N": N,
                    "y": flat(y), "raw": flat(raw.detach()), "loc": flat(loc), "scale": flat(scale),
                    "mask": flat(mask), "horizon_weight": flat(loss.horizon_weight) if weighted else [],
                    "params": flat(torch.cat([a.detach() for a in distr_args], dim=2)),
                    "value": float(value.detach()), "grad": flat(grad),
                }
    return cases


# Poisson and GMM cases, from a generator of their own so the cases above keep their values.
# Poisson's y is ≥ 0 (its support) with zeros in it (xlogy's branch); GMM cases hold
# "n_components" and "weighted", raw [B, h, N·M] in neuralforecast's GMM layout and params as
# torch.cat(distr_args, -1) gives them (the same layout); GMM takes no horizon weight.
def mixture_cases():
    gen = torch.Generator().manual_seed(20261128)
    cases = {}
    for shape, (B, h, N, L) in SHAPES.items():
        for weighted in (False, True):
            hw = 0.25 + 2 * torch.rand(h, generator=gen, dtype=torch.float64)
            mask = (torch.rand(B, h, N, generator=gen) > 0.25).double()
            mask[0, 0, 0] = 1.0
            tag = f"{shape}{'/hw' if weighted else ''}"
            y = torch.floor(6 * torch.rand(B, h, N, generator=gen, dtype=torch.float64))
            y[0, 0, 0] = 0.0
            y[-1, -1, -1] = 2.5  # a non-integer count: neuralforecast's support is nonnegative
            loss = DistributionLoss(distribution="Poisson",
                                    horizon_weight=hw.numpy() if weighted else None)
            if loss.horizon_weight is not None:
                loss.horizon_weight = loss.horizon_weight.double()
            raw = torch.randn(B, h, N, generator=gen, dtype=torch.float64)
            loc = 2 + torch.rand(B, 1, N, generator=gen, dtype=torch.float64)
            scale = 0.5 + 2 * torch.rand(B, 1, N, generator=gen, dtype=torch.float64)
            raw.requires_grad_(True)
            distr_args = loss.scale_decouple(output=loss.domain_map(raw), loc=loc, scale=scale)
            value = loss(y=y, distr_args=distr_args, mask=mask)
            (grad,) = torch.autograd.grad(value, raw)
            cases[f"poisson/{tag}"] = {
                "loss": "distribution", "distribution": "Poisson", "B": B, "h": h, "N": N,
                "y": flat(y), "raw": flat(raw.detach()), "loc": flat(loc), "scale": flat(scale),
                "mask": flat(mask), "horizon_weight": flat(loss.horizon_weight) if weighted else [],
                "params": flat(torch.cat([a.detach() for a in distr_args], dim=2)),
                "mean": flat(loss.distr_mean.detach()),
                "value": float(value.detach()), "grad": flat(grad),
            }
            # weighted here is GMM's own flag (learned component weights), not a horizon weight.
            C = 3
            loss = GMM(n_components=C, weighted=weighted)
            M = loss.outputsize_multiplier
            y = torch.randn(B, h, N, generator=gen, dtype=torch.float64) * 2 + 1
            raw = torch.randn(B, h, N * M, generator=gen, dtype=torch.float64)
            loc = torch.randn(B, 1, N, generator=gen, dtype=torch.float64)
            scale = 0.5 + 2 * torch.rand(B, 1, N, generator=gen, dtype=torch.float64)
            raw.requires_grad_(True)
            distr_args = loss.scale_decouple(output=loss.domain_map(raw), loc=loc, scale=scale)
            value = loss(y=y, distr_args=distr_args, mask=mask)
            (grad,) = torch.autograd.grad(value, raw)
            cases[f"gmm/{shape}{'/weighted' if weighted else ''}"] = {
                "loss": "distribution", "distribution": "GMM", "n_components": C,
                "weighted": weighted, "B": B, "h": h, "N": N,
                "y": flat(y), "raw": flat(raw.detach()), "loc": flat(loc), "scale": flat(scale),
                "mask": flat(mask), "horizon_weight": [],
                "params": flat(torch.cat([a.detach() for a in distr_args], dim=-1)),
                "mean": flat(loss.distr_mean.detach()),
                "value": float(value.detach()), "grad": flat(grad),
            }
    return cases


if __name__ == "__main__":
    main()
