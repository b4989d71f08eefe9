"""Golden files for shoal's TSMixer / TSMixerx parity tests (tests/models/registry_models_test.cpp).

Run with the peers venv (needs neuralforecast + torch; CI only reads the committed output):
    /opt/peers/bin/python bench/peers/tsmixer_golden.py [out_dir=tests/golden]

Each golden is a pair <name>.json (index + config + scalars) and <name>.bin (little-endian
arrays, float64 or float32 as the index says). Entries: "weights/<state_dict key>",
"inputs/<name>", "output", "r", "grads/<param name>", "buffers/<state_dict key>".

1. tsmixerx_grad / tsmixer_grad (float64): neuralforecast's own modules with deterministic
   weights (PyTorch default init under a fixed seed, norms and RevIN jittered away from 1/0),
   forward on fixed inputs, backward of sum(out * r). TSMixer runs in training mode (BatchNorm
   batch statistics; the running statistics after the step are recorded too) and also gives an
   eval-mode output with the updated running statistics.
2. tsmixerx_train / tsmixer_train (float32): 20 Adam(lr=1e-3) steps with neuralforecast's MAE
   (masked mean) on 20 fixed batches of windows cut from one stored multivariate series
   (starts in "starts", B per step); records the 20 losses. Dropout is 0: PyTorch's dropout
   stream cannot be reproduced.
"""

import json
import os
import sys

import numpy as np
import torch

from neuralforecast.losses.pytorch import MAE
from neuralforecast.models import TSMixer, TSMixerx

sys.path.insert(0, os.path.dirname(__file__))
from golden_models import written_by  # noqa: E402

H, L, N, FF, X, F, S, NB = 4, 8, 2, 4, 1, 1, 2, 2
B = 4
T_SERIES = 48
STEPS = 20


class Golden:
    def __init__(self, dtype):
        self.index = {}
        self.blob = bytearray()
        self.dtype = dtype

    def add(self, name, tensor):
        a = np.ascontiguousarray(tensor.detach().cpu().numpy().astype(self.dtype))
        self.index[name] = {"offset": len(self.blob), "shape": list(a.shape)}
        self.blob += a.astype(a.dtype.newbyteorder("<")).tobytes()

    def write(self, out_dir, name, meta):
        meta = dict(meta)
        meta["dtype"] = "float64" if self.dtype == np.float64 else "float32"
        meta["arrays"] = self.index
        with open(os.path.join(out_dir, name + ".bin"), "wb") as fh:
            fh.write(bytes(self.blob))
        with open(os.path.join(out_dir, name + ".json"), "w") as fh:
            json.dump(meta, fh, indent=1, sort_keys=True)
            fh.write("\n")


def loss_args(loss):
    """A multi-output loss sizes the model's output layer; None: the default MAE."""
    return {} if loss is None else dict(loss=loss, valid_loss=loss)


def make_tsmixerx(loss=None):
    return TSMixerx(h=H, input_size=L, n_series=N, futr_exog_list=["f1"],
                    hist_exog_list=["x1"], stat_exog_list=["s1", "s2"], n_block=NB,
                    ff_dim=FF, dropout=0.0, revin=True, random_seed=1, **loss_args(loss))


def make_tsmixer(loss=None):
    return TSMixer(h=H, input_size=L, n_series=N, n_block=NB, ff_dim=FF, dropout=0.0,
                   revin=True, random_seed=1, **loss_args(loss))


def jitter(model, gen):
    # Move LayerNorm / BatchNorm / RevIN affines away from 1 and 0 so their gradients matter.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * (torch.rand(p.shape, generator=gen, dtype=p.dtype) - 0.5))


def config_meta(kind):
    meta = {"model": kind, "h": H, "input_size": L, "n_series": N, "ff_dim": FF,
            "n_block": NB, "dropout": 0.0, "revin": True}
    if kind == "tsmixerx":
        meta.update(hist_exog_size=X, futr_exog_size=F, stat_exog_size=S)
    return meta


def rand(gen, *shape, dtype):
    return 2 * torch.rand(shape, generator=gen, dtype=dtype) - 1


def gradient_golden(kind, out_dir, loss=None, suffix="_grad"):
    torch.manual_seed(0)
    model = (make_tsmixerx(loss) if kind == "tsmixerx" else make_tsmixer(loss)).double()
    gen = torch.Generator().manual_seed(1234)
    jitter(model, gen)
    if kind == "tsmixer":  # non-trivial running statistics, so the eval output checks them
        with torch.no_grad():
            for name, buf in model.named_buffers():
                if "running_mean" in name:
                    buf.copy_(0.3 * rand(gen, *buf.shape, dtype=torch.float64))
                elif "running_var" in name:
                    buf.copy_(0.5 + torch.rand(buf.shape, generator=gen, dtype=torch.float64))
    g = Golden(np.float64)
    for name, t in model.state_dict().items():
        if "num_batches_tracked" not in name and not name.startswith(("loss.", "valid_loss.")):
            g.add("weights/" + name, t)
    dt = torch.float64
    batch = {"insample_y": 3 * rand(gen, B, L, N, dtype=dt) + 1.0,
             "hist_exog": None, "futr_exog": None, "stat_exog": None}
    if kind == "tsmixerx":
        batch["hist_exog"] = rand(gen, B, X, L, N, dtype=dt)
        batch["futr_exog"] = rand(gen, B, F, L + H, N, dtype=dt)
        batch["stat_exog"] = rand(gen, N, S, dtype=dt)
    for k, v in batch.items():
        if v is not None:
            g.add("inputs/" + k, v)
    model.train()
    out = model(batch)
    r = rand(gen, *out.shape, dtype=dt)
    (out * r).sum().backward()
    g.add("output", out)
    g.add("r", r)
    for name, p in model.named_parameters():
        if p.requires_grad:  # not a loss's fixed quantiles
            g.add("grads/" + name, p.grad)
    if kind == "tsmixer":
        for name, buf in model.named_buffers():
            if "running" in name:
                g.add("buffers/" + name, buf)
        model.eval()
        with torch.no_grad():
            g.add("eval_output", model(batch))
    meta = config_meta(kind)
    meta["outputs"] = out.shape[-1] // N
    g.write(out_dir, kind + suffix, meta)


def series(gen):
    """One multivariate series [T, N] with hist/futr covariates and an availability mask whose
    last H steps are 0 (neuralforecast's right padding) and with a few holes."""
    t = torch.arange(T_SERIES, dtype=torch.float32)
    y = torch.stack([torch.sin(0.35 * t + n) * (1 + 0.5 * n) + 0.1 * n * t
                     for n in range(N)], dim=1)
    y = y + 0.1 * rand(gen, T_SERIES, N, dtype=torch.float32)
    hist = rand(gen, X, T_SERIES, N, dtype=torch.float32)
    futr = torch.stack([torch.cos(0.35 * t)] * N, dim=1).unsqueeze(0)
    avail = torch.ones(T_SERIES, N)
    avail[-H:] = 0
    avail[30, 1] = 0
    avail[20, 0] = 0
    y = y * avail
    stat = rand(gen, N, S, dtype=torch.float32)
    return y, hist, futr, avail, stat


def window_batch(kind, y, hist, futr, avail, stat, starts):
    ins = torch.stack([y[s:s + L] for s in starts])
    tgt = torch.stack([y[s + L:s + L + H] for s in starts])
    mask = torch.stack([avail[s + L:s + L + H] for s in starts])
    batch = {"insample_y": ins, "hist_exog": None, "futr_exog": None, "stat_exog": None}
    if kind == "tsmixerx":
        batch["hist_exog"] = torch.stack([hist[:, s:s + L] for s in starts])
        batch["futr_exog"] = torch.stack([futr[:, s:s + L + H] for s in starts])
        batch["stat_exog"] = stat
    return batch, tgt, mask


def training_golden(kind, out_dir):
    torch.manual_seed(0)
    model = make_tsmixerx() if kind == "tsmixerx" else make_tsmixer()
    model = model.float()
    gen = torch.Generator().manual_seed(99)
    jitter(model, gen)
    g = Golden(np.float32)
    for name, t in model.state_dict().items():
        if "num_batches_tracked" not in name and not name.startswith(("loss.", "valid_loss.")):
            g.add("weights/" + name, t)
    y, hist, futr, avail, stat = series(gen)
    g.add("series/y", y)
    g.add("series/avail", avail)
    if kind == "tsmixerx":
        g.add("series/hist", hist)
        g.add("series/futr", futr)
        g.add("series/stat", stat)
    n_windows = T_SERIES - L - H + 1
    starts = torch.randint(0, n_windows, (STEPS, B), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = MAE()
    losses = []
    model.train()
    for step in range(STEPS):
        batch, tgt, mask = window_batch(kind, y, hist, futr, avail, stat,
                                        starts[step].tolist())
        opt.zero_grad()
        out = model(batch)
        loss = loss_fn(y=tgt, y_hat=out, mask=mask)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    meta = config_meta(kind)
    meta.update(batch=B, steps=STEPS, lr=1e-3, series_length=T_SERIES,
                starts=starts.tolist(), losses=losses)
    g.write(out_dir, kind + "_train", meta)
    print(kind, "losses", ["%.6f" % v for v in losses])


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "golden")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for kind in reversed(written_by("tsmixer_golden.py")):  # tsmixerx, then tsmixer
        gradient_golden(kind, out_dir)
        training_golden(kind, out_dir)
    print("wrote goldens to", os.path.abspath(out_dir))


if __name__ == "__main__":
    main()
