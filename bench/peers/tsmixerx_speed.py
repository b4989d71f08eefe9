"""Peer timings for `shoal bench tsmixerx` (cli/bench/tsmixerx.cpp): seconds per TSMixerx fit for
neuralforecast and for a bare PyTorch loop of the same model, on one thread.

Run by the benchmark as a subprocess (it writes the data files and reads the JSON printed on
stdout); by hand:
    /opt/peers/bin/python bench/peers/tsmixerx_speed.py --data D.csv [--static S.csv] [--futr-df F.csv] \
        --h 12 --input-size 24 --n-series 1 [--hist a] [--futr b,c] [--stat d,e] \
        [--max-steps 1000] [--peer-steps 1000] [--skip-nf] [--skip-torch]

Both peers fit on every series in --data jointly (n_series = the number of ids), with
neuralforecast's defaults otherwise (ff_dim 64, n_block 2, revin, MAE, Adam lr 1e-3,
windows_batch_size 32, identity scaler, no validation).

- neuralforecast: NeuralForecast(...).fit(df) then .predict(), accelerator='cpu', devices=1,
  logger, progress bar, model summary and checkpointing off, torch.set_num_threads(1).
  A Lightning callback times every training step, so a fit of fewer steps (--peer-steps) is
  extrapolated as (total - steps) + max_steps * median step: the fixed costs (Trainer
  construction, dataset, predict) are kept as measured and only the step count is scaled.
- torch: neuralforecast's TSMixerx module (the same layers) driven by a plain loop: sample 32
  of the valid windows per step from a pre-cut window tensor (neuralforecast's validity rule:
  a real point in the input and in the horizon), forward, masked MAE, backward, Adam. Its fit
  time is the loop's time for max_steps (extrapolated from --peer-steps by the median step)
  plus one predict window.

Output: one JSON object on stdout, figures in seconds: wall clock (fit_s) and process CPU time
(fit_cpu_s; on a loaded machine the fairer one, as shoal's figure is thread CPU time).
"""

import argparse
import json
import os
import statistics
import sys
import time
import warnings


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--static")
    p.add_argument("--futr-df", help="future covariates for predict (needed with --futr)")
    p.add_argument("--h", type=int, default=12)
    p.add_argument("--input-size", type=int, default=24)
    p.add_argument("--hist", default="")
    p.add_argument("--futr", default="")
    p.add_argument("--stat", default="")
    p.add_argument("--max-steps", type=int, default=1000)
    p.add_argument("--peer-steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--skip-nf", action="store_true")
    p.add_argument("--skip-torch", action="store_true")
    return p.parse_args()


def names(s):
    return [x for x in s.split(",") if x]


def load(args):
    import pandas as pd

    df = pd.read_csv(args.data)
    static = pd.read_csv(args.static) if args.static else None
    return df, static


def make_model(args, n_series, max_steps, callbacks=None):
    from neuralforecast.models import TSMixerx

    kw = dict(h=args.h, input_size=args.input_size, n_series=n_series,
              hist_exog_list=names(args.hist) or None, futr_exog_list=names(args.futr) or None,
              stat_exog_list=names(args.stat) or None, max_steps=max_steps,
              windows_batch_size=args.batch, random_seed=args.seed, accelerator="cpu",
              devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
              enable_checkpointing=False)
    if callbacks:
        kw["callbacks"] = callbacks
    return TSMixerx(**kw)


def time_neuralforecast(args, df, static):
    import pandas as pd
    import pytorch_lightning as pl
    from neuralforecast import NeuralForecast

    # neuralforecast deep-copies its models (and so their callbacks): record into a list that
    # a copy shares.
    step_times, started = [], [0.0]

    class StepTimer(pl.Callback):
        def __deepcopy__(self, memo):
            return self

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            started[0] = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            step_times.append(time.perf_counter() - started[0])

    n_series = df["unique_id"].nunique()
    timer = StepTimer()
    futr_cols = names(args.futr)
    t0 = time.perf_counter()
    c0 = time.process_time()
    nf = NeuralForecast(models=[make_model(args, n_series, args.peer_steps, [timer])], freq=1)
    nf.fit(df=df, static_df=static)
    t_fit = time.perf_counter() - t0
    futr_df = pd.read_csv(args.futr_df) if futr_cols else None
    t1 = time.perf_counter()
    nf.predict(futr_df=futr_df)
    t_predict = time.perf_counter() - t1
    total = t_fit + t_predict
    cpu = time.process_time() - c0
    med = statistics.median(step_times)
    fixed = total - sum(step_times)
    # CPU seconds of the fit, scaled like the wall clock when fewer steps ran.
    cpu_fit = cpu * (fixed + args.max_steps * med) / total
    return {"steps_run": len(step_times), "measured_cpu_s": cpu, "fit_cpu_s": cpu_fit,
            "measured_s": total, "step_median_s": med,
            "fixed_s": fixed, "fit_s": fixed + args.max_steps * med,
            "extrapolated": len(step_times) != args.max_steps}


def time_torch(args, df, static):
    import numpy as np
    import torch

    from neuralforecast.losses.pytorch import MAE  # noqa: F401  (the model's default loss)

    ids = sorted(df["unique_id"].unique())
    n = len(ids)
    hist, futr, stat = names(args.hist), names(args.futr), names(args.stat)
    L, H = args.input_size, args.h
    # Channels [y, hist..., futr..., mask] × time × series, left-padded to the longest series.
    tmax = int(df.groupby("unique_id").size().max())
    chans = ["y"] + hist + futr
    data = np.zeros((len(chans) + 1, tmax, n), dtype=np.float32)
    for j, uid in enumerate(ids):
        g = df[df["unique_id"] == uid].sort_values("ds")
        off = tmax - len(g)
        for c, col in enumerate(chans):
            data[c, off:, j] = g[col].to_numpy(dtype=np.float32)
        data[-1, off:, j] = 1.0
    temporal = torch.from_numpy(data)
    padded = torch.nn.functional.pad(temporal, (0, 0, 0, H))  # right-pad h steps
    win = padded.unfold(1, L + H, 1)  # [C+1, W, N, L+H]
    win = win.permute(1, 3, 0, 2).contiguous()  # [W, L+H, C+1, N]
    mask = win[:, :, -1, :]
    valid = (mask[:, :L].sum(dim=(1, 2)) > 0) & (mask[:, L:].sum(dim=(1, 2)) > 0)
    win = win[valid]
    stat_t = None
    if stat:
        s = static.set_index("unique_id").loc[ids, stat].to_numpy(dtype=np.float32)
        stat_t = torch.from_numpy(s)
    x0, x1 = 1, 1 + len(hist)
    f0, f1 = x1, x1 + len(futr)

    def batch_of(w):
        return {
            "insample_y": w[:, :L, 0, :],
            "insample_mask": w[:, :L, -1, :],
            "hist_exog": w[:, :L, x0:x1, :].permute(0, 2, 1, 3) if hist else None,
            "futr_exog": w[:, :, f0:f1, :].permute(0, 2, 1, 3) if futr else None,
            "stat_exog": stat_t,
        }

    torch.manual_seed(args.seed)
    model = make_model(args, n, args.max_steps)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps = []
    gen = torch.Generator().manual_seed(args.seed)
    n_win = win.shape[0]
    c0 = time.process_time()
    for _ in range(args.peer_steps):
        t0 = time.perf_counter()
        idx = torch.randperm(n_win, generator=gen)[: args.batch]
        w = win[idx]
        b = batch_of(w)
        y = w[:, L:, 0, :]
        m = w[:, L:, -1, :]
        opt.zero_grad(set_to_none=False)
        out = model(b)
        loss = (torch.abs(out - y) * m).sum() / m.sum()
        loss.backward()
        opt.step()
        steps.append(time.perf_counter() - t0)
    cpu_steps = time.process_time() - c0
    t0 = time.perf_counter()
    model.eval()
    with torch.no_grad():
        model(batch_of(win[-1:]))
    t_predict = time.perf_counter() - t0
    med = statistics.median(steps)
    cpu_fit = (cpu_steps / len(steps)) * args.max_steps + t_predict
    return {"steps_run": len(steps), "measured_cpu_s": cpu_steps, "fit_cpu_s": cpu_fit,
            "measured_s": sum(steps) + t_predict, "step_median_s": med,
            "fixed_s": t_predict, "fit_s": t_predict + args.max_steps * med,
            "extrapolated": len(steps) != args.max_steps}


def main():
    args = parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    df, static = load(args)
    out = {"torch_version": torch.__version__, "threads": torch.get_num_threads()}
    try:
        import neuralforecast

        out["neuralforecast_version"] = neuralforecast.__version__
    except ImportError:
        pass
    if not args.skip_torch:
        out["torch"] = time_torch(args, df, static)
    if not args.skip_nf:
        out["neuralforecast"] = time_neuralforecast(args, df, static)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
