"""Trace one neuralforecast TSMixerx fit on one M3 series (peers venv, never in CI).

Records what shoal must reproduce for a fit on a short series: the valid training window
starts, the starts sampled at every step, the per-step training loss, the predict window and
the forecast. Prints one JSON object (or writes it with --json).

    /opt/peers/bin/python bench/peers/m3_trace.py --data /work/m3acc/subset_yearly_train.csv \
        --id N0589 --h 6 --input-size 12 --seed 1 --json trace.json

With --golden PREFIX it also writes the replay golden of tests/train/forecast_replay_test.cpp:
PREFIX.safetensors (the initial weights) and PREFIX.json (the series, the windows and masks
the peer cut, the starts it sampled and its losses for the first --golden-steps steps, the
predict window and the forecast). The golden made this way is committed as
tests/golden/m3_yearly_N0589_replay.*:

    /opt/peers/bin/python bench/peers/m3_trace.py --data ../shared/data/ts/m3_yearly_train.csv.gz \
        --id N0589 --h 6 --input-size 12 --seed 1 --golden tests/golden/m3_yearly_N0589_replay
"""

import argparse
import json
import logging
import sys

import numpy as np
import pandas as pd
import torch


def nf_version():
    import neuralforecast

    return neuralforecast.__version__


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--h", type=int, required=True)
    p.add_argument("--input-size", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=1000)
    p.add_argument("--json", default="")
    p.add_argument("--init-weights", default="",
                   help="also write the initial weights (safetensors, neuralforecast names)")
    p.add_argument("--golden", default="", help="write the replay golden PREFIX.{json,safetensors}")
    p.add_argument("--golden-steps", type=int, default=100)
    a = p.parse_args()

    from neuralforecast import NeuralForecast
    from neuralforecast.models import TSMixerx

    torch.set_num_threads(1)
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning").setLevel(logging.ERROR)
    df = pd.read_csv(a.data)
    df = df[df.unique_id == a.id]
    out = dict(id=a.id, T=len(df), h=a.h, input_size=a.input_size, seed=a.seed)
    steps = []

    class Traced(TSMixerx):
        # NeuralForecast.fit trains a copy of the model, so the hooks live on a subclass.
        def _create_windows(self, batch, step):
            r = super()._create_windows(batch, step)
            windows, final_condition = r[0], r[3]
            mask_idx = list(r[5]).index("available_mask")
            if step == "train" and "train_windows" not in out:
                out["train_windows"] = int(windows.shape[0])
                out["valid_window_idx"] = final_condition.tolist()
                out["train_masks"] = windows[:, :, mask_idx, 0].tolist()
                out["train_span"] = int(batch["temporal"].shape[-1])
            if step == "predict":
                out["predict_insample"] = windows[:, : a.input_size, 0, 0].tolist()
                out["predict_mask"] = windows[:, : a.input_size, mask_idx, 0].tolist()
            return r

        def _sample_windows(self, windows_temporal, static, static_cols, temporal_cols, w_idxs,
                            final_condition, sample_weight=None):
            steps.append(final_condition[w_idxs].tolist())
            return super()._sample_windows(windows_temporal, static, static_cols, temporal_cols,
                                           w_idxs, final_condition, sample_weight)

    model = Traced(h=a.h, input_size=a.input_size, n_series=1, random_seed=a.seed,
                   max_steps=a.max_steps, alias="TSMixerx", accelerator="cpu", devices=1,
                   enable_progress_bar=False, logger=False, enable_model_summary=False,
                   enable_checkpointing=False)
    init = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if a.init_weights or a.golden:
        from safetensors.torch import save_file

        save_file(init, a.init_weights or a.golden + ".safetensors")
    nf = NeuralForecast(models=[model], freq=1)
    nf.fit(df)
    fc = nf.predict().reset_index()
    model = nf.models[0]
    out["sampled_starts"] = steps
    out["train_losses"] = [float(l) for _, l in model.train_trajectories]
    out["forecast"] = fc["TSMixerx"].astype(float).tolist()
    if a.golden:
        k = a.golden_steps
        golden = dict(source="bench/peers/m3_trace.py, neuralforecast " + nf_version(),
                      id=a.id, h=a.h, input_size=a.input_size, seed=a.seed,
                      y=df["y"].astype(float).tolist(), valid_starts=out["valid_window_idx"],
                      train_masks=out["train_masks"], steps=k,
                      sampled_starts=steps[:k], losses=out["train_losses"][:k],
                      predict_insample=out["predict_insample"][0], forecast=out["forecast"])
        with open(a.golden + ".json", "w") as f:
            json.dump(golden, f)
    s = json.dumps(out)
    if a.json:
        with open(a.json, "w") as f:
            f.write(s)
    else:
        print(s)
    n = len(out["valid_window_idx"])
    sizes = [len(st) for st in steps]
    print(f"{a.id}: T {out['T']}, {out['train_windows']} windows cut, {n} valid "
          f"({out['valid_window_idx'][0]}..{out['valid_window_idx'][-1]}), {len(steps)} steps of "
          f"{min(sizes)}-{max(sizes)} windows, loss first {out['train_losses'][0]:.2f} "
          f"last-100 mean {np.mean(out['train_losses'][-100:]):.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
