"""Golden values for the NBEATS / NBEATSx / NHITS / TiDE building blocks (tests/layers/
blocks_golden_test.cpp), computed by torch and neuralforecast 3.3.0's own modules.

Run with the peers venv (CI only reads the committed output):
    /opt/peers/bin/python bench/peers/blocks_golden.py [out=tests/golden/blocks.json]

One JSON file: {case name: {array name: flat list (row-major), scalar name: value}}. Every
case is computed in float64 on inputs drawn here (and stored), the backward of sum(out * dy)
with a stored dy. Cases:
  act/<name>          x, y, dy, dx (and dweight for PReLU) for nn.Softplus, Tanh, SELU,
                      LeakyReLU, PReLU, Sigmoid on values that include 0, ties and x > 20
  pool/<mode>_L<L>_k<k>   nn.MaxPool1d / AvgPool1d(k, k, ceil_mode=True) as NHITSBlock builds
                      it, on x [2, L] with repeated values (ties)
  interp/<mode>_K<K>_H<H> F.interpolate(x [2, 1, K], size=H, mode) (NHITS's _IdentityBasis)
  basis/<kind>_...    neuralforecast.models.nbeats TrendBasis / SeasonalityBasis and
                      nbeatsx.TrendBasis: the fixed matrices (float32 as stored) and a forward /
                      backward on theta for out_features Q = 1 and 2
  trend_basis/...     nbeats.TrendBasis's other bases (legendre, chebyshev, changepoint,
                      piecewise_linear, linear_hat): the float32 matrices
  exog/...            nbeatsx.ExogenousBasis forward / backward
  mlp_residual/...    tide.MLPResidual built under torch.manual_seed(seed) (float32 init, then
                      .double()): the weights in state_dict order, y, and the gradients
  temporal_decoder/...  TiDE's temporal decoder: an MLPResidual(D + F, K, Q) on
                      cat(dec.reshape(B, H, D), futr [B, H, F], dim=2), as TiDE.forward runs it

A second file, nhits.json beside it (tests/models/registry_models_test.cpp), holds neuralforecast's
NHITS built with random_seed (its float32 init, "init/<key>"), then in float64 (the PReLU
weights moved off 0.25): the forward on windows "insample_y" [B, L] with a mask of ones, and
the gradients "grads/<key>" of sum(forecast * dy). Dropout is 0: torch's masks cannot be
reproduced. nbeats.json holds the same for NBEATS (its fixed bases, parameters without
gradient in torch, are left out of "weights/" and "grads/"), tide.json for TiDE, nbeatsx.json
for NBEATSx with exogenous inputs (in torch's layout: "hist_exog" [B, L, X], "futr_exog"
[B, L + H, F], "stat_exog" [S], the same series for every window).
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

from neuralforecast.models import nbeats, nbeatsx, tide

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(20261126)
out = {}


def t(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def flat(x):
    return [float(v) for v in np.asarray(x.detach().numpy() if torch.is_tensor(x) else x).ravel()]


def activations():
    x = np.concatenate([[0.0, -0.0, 1.0, -1.0, 20.0, 20.5, 25.0, -30.0, 1e-8, -1e-8],
                        rng.uniform(-4, 4, 14)])
    for name in ["Softplus", "Tanh", "SELU", "LeakyReLU", "PReLU", "Sigmoid"]:
        m = getattr(torch.nn, name)().double()
        xt = t(x).requires_grad_(True)
        y = m(xt)
        dy = rng.uniform(-1, 1, x.size)
        y.backward(t(dy))
        case = {"x": flat(x), "y": flat(y), "dy": flat(dy), "dx": flat(xt.grad)}
        if name == "PReLU":
            case["dweight"] = flat(m.weight.grad)
        out[f"act/{name}"] = case


def pooling():
    for mode in ["MaxPool1d", "AvgPool1d"]:
        for L in [1, 5, 7, 8, 12]:
            for k in [1, 2, 3, 4, 8]:
                x = np.round(rng.uniform(-2, 2, (2, L)) * 2) / 2  # halves: many ties
                m = getattr(torch.nn, mode)(kernel_size=k, stride=k, ceil_mode=True)
                xt = t(x).requires_grad_(True)
                y = m(xt.unsqueeze(1)).squeeze(1)
                dy = rng.uniform(-1, 1, tuple(y.shape))
                y.backward(t(dy))
                out[f"pool/{mode}_L{L}_k{k}"] = {
                    "L": L, "k": k, "P": int(y.shape[1]), "x": flat(x), "y": flat(y),
                    "dy": flat(dy), "dx": flat(xt.grad)}


def interpolation():
    for mode in ["linear", "nearest"]:
        for K in [1, 2, 3, 5, 6]:
            for H in [1, 4, 7, 10, 12, 24]:
                x = rng.uniform(-1, 1, (2, K))
                xt = t(x).requires_grad_(True)
                y = F.interpolate(xt.unsqueeze(1), size=H, mode=mode).squeeze(1)
                dy = rng.uniform(-1, 1, (2, H))
                y.backward(t(dy))
                out[f"interp/{mode}_K{K}_H{H}"] = {
                    "K": K, "H": H, "x": flat(x), "y": flat(y), "dy": flat(dy),
                    "dx": flat(xt.grad)}


def run_basis(name, module, n, q, extra):
    module = module.double()
    S = module.backcast_basis.shape[0] * (q + 1)
    theta = t(rng.uniform(-1, 1, (n, S))).requires_grad_(True)
    back, fore = module(theta)
    dback = rng.uniform(-1, 1, tuple(back.shape))
    dfore = rng.uniform(-1, 1, tuple(fore.shape))
    (back * t(dback)).sum().add((fore * t(dfore)).sum()).backward()
    case = {"Q": q, "theta": flat(theta), "backcast": flat(back), "forecast": flat(fore),
            "dbackcast": flat(dback), "dforecast": flat(dfore), "dtheta": flat(theta.grad),
            "backcast_basis": flat(module.backcast_basis), "forecast_basis":
            flat(module.forecast_basis)}
    case.update(extra)
    out[name] = case


def bases():
    n = 3
    for L, H, deg in [(7, 5, 2), (12, 4, 3), (6, 6, 0)]:
        for q in [1, 2]:
            cfg = {"L": L, "H": H, "n_polynomials": deg}
            run_basis(f"basis/trend_L{L}_H{H}_p{deg}_q{q}",
                      nbeats.TrendBasis(n_basis=deg, backcast_size=L, forecast_size=H,
                                        out_features=q), n, q, cfg)
            run_basis(f"basis/trendx_L{L}_H{H}_p{deg}_q{q}",
                      nbeatsx.TrendBasis(degree_of_polynomial=deg, backcast_size=L,
                                         forecast_size=H, out_features=q), n, q, cfg)
    for L, H, harm in [(7, 5, 2), (10, 6, 1), (8, 4, 3), (24, 12, 2)]:
        for q in [1, 2]:
            run_basis(f"basis/seasonality_L{L}_H{H}_n{harm}_q{q}",
                      nbeats.SeasonalityBasis(harmonics=harm, backcast_size=L, forecast_size=H,
                                              out_features=q), n, q,
                      {"L": L, "H": H, "n_harmonics": harm})


def trend_bases():
    # NBEATS's other trend bases: the fixed matrices only (draws nothing from rng).
    for kind in ["legendre", "chebyshev", "changepoint", "piecewise_linear", "linear_hat"]:
        for L, H, n in [(7, 5, 2), (12, 4, 4), (6, 1, 1), (1, 3, 3)]:
            m = nbeats.TrendBasis(n_basis=n, backcast_size=L, forecast_size=H, basis=kind)
            out[f"trend_basis/{kind}_L{L}_H{H}_n{n}"] = {
                "kind": kind, "L": L, "H": H, "n_basis": n,
                "backcast_basis": flat(m.backcast_basis), "forecast_basis":
                flat(m.forecast_basis)}


def exogenous():
    n = 3
    for L, H, C in [(5, 3, 1), (6, 4, 3)]:
        m = nbeatsx.ExogenousBasis(forecast_size=H)
        theta = t(rng.uniform(-1, 1, (n, 2 * C))).requires_grad_(True)
        x = t(rng.uniform(-1, 1, (n, L + H, C))).requires_grad_(True)
        back, fore = m(theta, x)
        dback = rng.uniform(-1, 1, tuple(back.shape))
        dfore = rng.uniform(-1, 1, tuple(fore.shape))
        (back * t(dback)).sum().add((fore * t(dfore)).sum()).backward()
        out[f"exog/L{L}_H{H}_C{C}"] = {
            "L": L, "H": H, "C": C, "theta": flat(theta), "x": flat(x), "backcast": flat(back),
            "forecast": flat(fore), "dbackcast": flat(dback), "dforecast": flat(dfore),
            "dtheta": flat(theta.grad), "dx": flat(x.grad)}


def mlp_residual():
    for seed, (I, K, O, ln) in [(1, (5, 8, 3, True)), (7, (4, 6, 4, False)), (3, (3, 5, 1, True))]:
        torch.set_default_dtype(torch.float32)
        torch.manual_seed(seed)
        m = tide.MLPResidual(input_dim=I, hidden_size=K, output_dim=O, dropout=0.0, layernorm=ln)
        torch.set_default_dtype(torch.float64)
        init = {f"init/{k}": flat(v) for k, v in m.state_dict().items()}
        m = m.double()
        with torch.no_grad():  # move the norm off 1 and 0 so that its gradients are checked
            if ln:
                m.norm.weight.add_(t(rng.uniform(-0.3, 0.3, O)))
                m.norm.bias.add_(t(rng.uniform(-0.3, 0.3, O)))
        x = t(rng.uniform(-1, 1, (4, I))).requires_grad_(True)
        y = m(x)
        dy = rng.uniform(-1, 1, tuple(y.shape))
        y.backward(t(dy))
        case = {"seed": seed, "I": I, "K": K, "O": O, "layernorm": ln, "x": flat(x), "y": flat(y),
                "dy": flat(dy), "dx": flat(x.grad)}
        case.update(init)
        for k, v in m.named_parameters():
            case[f"weights/{k}"] = flat(v)
            case[f"grads/{k}"] = flat(v.grad)
        out[f"mlp_residual/s{seed}_I{I}_K{K}_O{O}"] = case


def temporal_decoder():
    for seed, (H, D, F, K, Q, ln) in [(2, (4, 3, 2, 6, 1, True)), (4, (3, 2, 0, 5, 2, False)),
                                       (6, (5, 2, 1, 4, 3, True))]:
        torch.manual_seed(seed)
        m = tide.MLPResidual(input_dim=D + F, hidden_size=K, output_dim=Q, dropout=0.0,
                             layernorm=ln).double()
        with torch.no_grad():
            if ln:
                m.norm.weight.add_(t(rng.uniform(-0.3, 0.3, Q)))
                m.norm.bias.add_(t(rng.uniform(-0.3, 0.3, Q)))
        B = 3
        dec = t(rng.uniform(-1, 1, (B, H * D))).requires_grad_(True)
        futr = t(rng.uniform(-1, 1, (B, H, F))).requires_grad_(True)
        x = dec.reshape(B, H, D)
        if F > 0:
            x = torch.cat((x, futr), dim=2)
        y = m(x)  # [B, H, Q]
        dy = rng.uniform(-1, 1, tuple(y.shape))
        y.backward(t(dy))
        case = {"H": H, "D": D, "F": F, "K": K, "Q": Q, "layernorm": ln, "dec": flat(dec),
                "futr": flat(futr), "y": flat(y), "dy": flat(dy), "ddec": flat(dec.grad),
                "dfutr": flat(futr.grad) if F > 0 else []}
        for k, v in m.named_parameters():
            case[f"weights/{k}"] = flat(v)
            case[f"grads/{k}"] = flat(v.grad)
        out[f"temporal_decoder/s{seed}_H{H}_D{D}_F{F}_Q{Q}"] = case


NHITS_CASES = [
    dict(h=6, input_size=12, mlp_units=2 * [[8, 8]], n_pool_kernel_size=[2, 2, 1],
         n_freq_downsample=[4, 2, 1], random_seed=3),
    dict(h=5, input_size=7, stack_types=2 * ["identity"], n_blocks=[1, 2], mlp_units=[[8, 8]],
         n_pool_kernel_size=[3, 1], n_freq_downsample=[2, 1], pooling_mode="AvgPool1d",
         interpolation_mode="nearest", activation="PReLU", random_seed=5),
    dict(h=4, input_size=9, mlp_units=[[6, 6], [6, 5]], n_pool_kernel_size=[2, 3, 1],
         n_freq_downsample=[3, 2, 1], activation="Tanh", random_seed=7),
    dict(h=7, input_size=10, stack_types=["identity"], n_blocks=[2], mlp_units=[[8, 8]],
         n_pool_kernel_size=[4], n_freq_downsample=[2], activation="SELU", random_seed=11),
    dict(h=4, input_size=7, hist_exog_list=["x1", "x2"], futr_exog_list=["f1"],
         stat_exog_list=["s1"], mlp_units=[[8, 8]], n_pool_kernel_size=[2, 3, 1],
         n_freq_downsample=[2, 1, 1], random_seed=21),
    dict(h=3, input_size=6, futr_exog_list=["f1", "f2"], stack_types=2 * ["identity"],
         n_blocks=[1, 1], mlp_units=[[6, 6]], n_pool_kernel_size=[4, 1],
         n_freq_downsample=[3, 1], pooling_mode="AvgPool1d", interpolation_mode="nearest",
         random_seed=22),
]


NBEATS_CASES = [
    dict(h=4, input_size=8, mlp_units=2 * [[8, 8]], random_seed=1),
    dict(h=6, input_size=12, stack_types=["trend", "seasonality"], n_blocks=[2, 1], n_basis=3,
         n_harmonics=1, mlp_units=[[8, 8]], activation="Sigmoid", random_seed=4),
    dict(h=5, input_size=10, stack_types=["seasonality", "identity"], n_blocks=[1, 1],
         n_harmonics=3, mlp_units=[[8, 8], [8, 6]], activation="PReLU", random_seed=9),
    dict(h=5, input_size=8, stack_types=["trend", "trend"], n_blocks=[1, 1], basis="legendre",
         n_basis=3, mlp_units=[[6, 6]], random_seed=17),
    dict(h=4, input_size=8, stack_types=["identity", "seasonality"], n_blocks=[3, 2],
         mlp_units=[[6, 6]], activation="PReLU", shared_weights=True, random_seed=19),
]


TIDE_CASES = [
    dict(h=4, input_size=8, hidden_size=8, decoder_output_dim=3, temporal_decoder_dim=6,
         dropout=0.0, random_seed=2),
    dict(h=5, input_size=6, hidden_size=8, decoder_output_dim=2, temporal_decoder_dim=6,
         dropout=0.0, layernorm=False, num_encoder_layers=2, num_decoder_layers=2,
         random_seed=5),
    dict(h=3, input_size=5, hidden_size=8, decoder_output_dim=2, temporal_decoder_dim=4,
         temporal_width=3, dropout=0.0, hist_exog_list=["x1", "x2"], futr_exog_list=["f1"],
         stat_exog_list=["s1", "s2"], random_seed=6),
    dict(h=4, input_size=6, hidden_size=6, decoder_output_dim=2, temporal_decoder_dim=4,
         temporal_width=2, dropout=0.0, layernorm=False, futr_exog_list=["f1", "f2"],
         random_seed=12),
    dict(h=4, input_size=5, hidden_size=6, decoder_output_dim=3, temporal_decoder_dim=4,
         temporal_width=2, dropout=0.0, hist_exog_list=["x1"], stat_exog_list=["s1"],
         random_seed=14),
]


NBEATSX_CASES = [
    dict(h=4, input_size=6, futr_exog_list=["f1", "f2"], hist_exog_list=["x1"],
         stat_exog_list=["s1"], stack_types=["identity", "exogenous", "trend", "seasonality"],
         n_blocks=[1, 1, 1, 1], mlp_units=[[8, 8]], random_seed=3),
    dict(h=5, input_size=7, futr_exog_list=["f1"], stack_types=["exogenous", "identity"],
         n_blocks=[2, 1], mlp_units=[[8, 8], [8, 6]], activation="LeakyReLU", random_seed=8),
    dict(h=3, input_size=5, hist_exog_list=["x1", "x2"], stat_exog_list=["s1", "s2"],
         stack_types=["exogenous", "trend"], n_blocks=[1, 1], n_polynomials=1,
         mlp_units=[[6, 6]], activation="Softplus", random_seed=13),
    dict(h=4, input_size=6, futr_exog_list=["f1"], stack_types=["exogenous", "trend"],
         n_blocks=[2, 2], mlp_units=[[6, 6]], shared_weights=True, random_seed=23),
]


def peer_model(path, cls, kwargs_list):
    import logging

    logging.disable(logging.WARNING)
    cases = {}
    for k, kw in enumerate(kwargs_list):
        torch.set_default_dtype(torch.float32)
        m = cls(**kw)
        torch.set_default_dtype(torch.float64)
        case = {"config": kw}
        case.update({f"init/{k}": flat(v) for k, v in m.state_dict().items()})
        m = m.double()
        with torch.no_grad():
            for name, p in m.named_parameters():
                if p.numel() == 1 and p.requires_grad:
                    p.add_(float(rng.uniform(-0.1, 0.1)))
        B, L, H = 4, kw["input_size"], kw["h"]
        y = rng.uniform(-1, 1, (B, L))
        batch = {"insample_y": t(y)[:, :, None], "insample_mask": torch.ones(B, L, 1),
                 "futr_exog": None, "hist_exog": None, "stat_exog": None}
        X, F, S = (len(kw.get(k) or []) for k in
                   ("hist_exog_list", "futr_exog_list", "stat_exog_list"))
        if X:
            hist = rng.uniform(-1, 1, (B, L, X))
            batch["hist_exog"] = t(hist)
            case["hist_exog"] = flat(hist)
        if F:
            futr = rng.uniform(-1, 1, (B, L + H, F))
            batch["futr_exog"] = t(futr)
            case["futr_exog"] = flat(futr)
        if S:
            stat = rng.uniform(-1, 1, S)
            batch["stat_exog"] = t(np.tile(stat, (B, 1)))
            case["stat_exog"] = flat(stat)
        f = m(batch)
        dy = rng.uniform(-1, 1, (B, H))
        (f[:, :, 0] * t(dy)).sum().backward()
        case.update({"insample_y": flat(y), "forecast": flat(f), "dy": flat(dy)})
        for name, p in m.named_parameters():
            if p.requires_grad and p.grad is not None:  # TiDE's unused hist projection: none
                case[f"weights/{name}"] = flat(p)
                case[f"grads/{name}"] = flat(p.grad)
        cases[f"case{k}"] = case
    with open(path, "w") as fh:
        json.dump(cases, fh, separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "golden", "blocks.json")
    activations()
    pooling()
    interpolation()
    bases()
    exogenous()
    mlp_residual()
    temporal_decoder()
    trend_bases()
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"wrote {len(out)} cases to {os.path.normpath(path)}")
    from neuralforecast.models import NBEATS, NHITS

    peer_model(os.path.join(os.path.dirname(path), "nhits.json"), NHITS, NHITS_CASES)
    peer_model(os.path.join(os.path.dirname(path), "nbeats.json"), NBEATS, NBEATS_CASES)
    from neuralforecast.models import TiDE

    peer_model(os.path.join(os.path.dirname(path), "tide.json"), TiDE, TIDE_CASES)
    from neuralforecast.models import NBEATSx

    peer_model(os.path.join(os.path.dirname(path), "nbeatsx.json"), NBEATSx, NBEATSX_CASES)


if __name__ == "__main__":
    main()
