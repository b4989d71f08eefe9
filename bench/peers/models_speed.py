"""Peers of `shoal bench models`: one fit of each model by neuralforecast, and by a plain PyTorch
training loop of the same module under torch.compile. Not needed by CI.

    /opt/peers/bin/python bench/peers/models_speed.py --data D.csv --h 18 --input-size 36 \
        --models MLP,NLinear,DLinear,MLPMultivariate,NHITS,TiDE --threads 1 [--steps 50] [--no-nf] \
        [--kwargs '{"layernorm": false}']

D.csv holds unique_id, ds, y (written by the bench). For each model, with every argument at
neuralforecast's default except h, input_size, random_seed=1 (and n_series for multivariate
models; max_steps with --max-steps), it prints one JSON line:
  nf_fit_s          NeuralForecast(models=[model], freq=1).fit(df), wall seconds (CPU, progress
                    bar, logger and checkpoints off), max_steps steps
  compile_s         the compiled loop's first step (torch.compile's forward and backward graphs)
  step_s            the compiled loop's steady-state step: windows_batch_size windows drawn from
                    all the training windows, the module's forward, MAE, backward, Adam (best
                    median of 3 blocks of --steps steps)
  compile_fit_s     compile_s + max_steps · step_s: what a compiled fit of the same steps costs
The loop does what neuralforecast's step does for these models (identity scaler, MAE), without
Lightning, the data loader or per-step window cutting, so it is the fastest plain PyTorch.
"""

import argparse
import json
import logging
import statistics
import sys
import time

import numpy as np
import pandas as pd
import torch

MULTIVARIATE = {"MLPMultivariate", "TSMixer", "TSMixerx", "iTransformer"}


def model_of(name, h, input_size, n_series, max_steps=None, kwargs=None, **extra):
    from neuralforecast import models

    kw = dict(h=h, input_size=input_size, random_seed=1, **(kwargs or {}), **extra)
    if max_steps:
        kw["max_steps"] = max_steps
    if name in MULTIVARIATE:
        kw["n_series"] = n_series
    return getattr(models, name)(**kw)


def windows(df, h, input_size, multivariate):
    """Every training window (all L + h steps inside the data): [W, L + h] per series stacked,
    or [W, L + h, N] over the series aligned at their ends (zero padded) for multivariate."""
    series = [g["y"].to_numpy(np.float32) for _, g in df.groupby("unique_id", sort=True)]
    w = input_size + h
    if not multivariate:
        out = [np.lib.stride_tricks.sliding_window_view(s, w) for s in series if len(s) >= w]
        return torch.from_numpy(np.concatenate(out))
    t = max(len(s) for s in series)
    panel = np.zeros((t, len(series)), np.float32)
    for j, s in enumerate(series):
        panel[t - len(s):, j] = s
    v = np.lib.stride_tricks.sliding_window_view(panel, w, axis=0)  # [W, N, w]
    return torch.from_numpy(np.ascontiguousarray(v.transpose(0, 2, 1)))


def nf_fit(name, df, h, input_size, n_series, max_steps=None, kwargs=None):
    from neuralforecast import NeuralForecast

    m = model_of(name, h, input_size, n_series, max_steps, kwargs, accelerator="cpu", devices=1,
                 enable_progress_bar=False, logger=False, enable_model_summary=False,
                 enable_checkpointing=False)
    t0 = time.perf_counter()
    NeuralForecast(models=[m], freq=1).fit(df)
    return time.perf_counter() - t0, m.max_steps


def compiled_loop(name, df, h, input_size, n_series, steps, max_steps=None, kwargs=None):
    m = model_of(name, h, input_size, n_series, max_steps, kwargs)
    multivariate = name in MULTIVARIATE
    win = windows(df, h, input_size, multivariate)
    net = torch.compile(m)
    opt = torch.optim.Adam(m.parameters(), lr=m.learning_rate)
    gen = torch.Generator().manual_seed(1)
    batch = min(m.windows_batch_size, len(win)) if not multivariate else m.windows_batch_size

    def step():
        idx = torch.randint(0, len(win), (batch,), generator=gen)
        w = win[idx]
        x, y = (w[:, :input_size], w[:, input_size:])
        if not multivariate:
            x, y = x.unsqueeze(-1), y.unsqueeze(-1)
        out = net({"insample_y": x, "insample_mask": torch.ones_like(x), "futr_exog": None,
                   "hist_exog": None, "stat_exog": None})
        loss = (out.reshape(y.shape) - y).abs().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    t0 = time.perf_counter()
    step()
    compile_s = time.perf_counter() - t0
    for _ in range(3):
        step()
    blocks = []
    for _ in range(3):
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        blocks.append(statistics.median(times))
    step_s = min(blocks)
    return compile_s, step_s, m.max_steps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--h", type=int, required=True)
    p.add_argument("--input-size", type=int, required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--no-nf", action="store_true", help="skip the neuralforecast fits")
    p.add_argument("--max-steps", type=int, default=0, help="steps per fit (0: the default)")
    p.add_argument("--kwargs", default="{}", help="JSON of further model arguments")
    a = p.parse_args()
    kwargs = json.loads(a.kwargs)
    torch.set_num_threads(a.threads)
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning").setLevel(logging.ERROR)
    df = pd.read_csv(a.data)
    n_series = df["unique_id"].nunique()
    for name in a.models.split(","):
        r = {"model": name, "threads": a.threads, "series": n_series}
        compile_s, step_s, max_steps = compiled_loop(name, df, a.h, a.input_size, n_series,
                                                     a.steps, a.max_steps, kwargs)
        r.update(compile_s=compile_s, step_s=step_s, max_steps=max_steps,
                 compile_fit_s=compile_s + max_steps * step_s)
        if not a.no_nf:
            r["nf_fit_s"], _ = nf_fit(name, df, a.h, a.input_size, n_series, a.max_steps,
                                      kwargs)
        print(json.dumps(r), flush=True)
        print(f"{name}: {r}", file=sys.stderr)


if __name__ == "__main__":
    main()
