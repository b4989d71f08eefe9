"""Golden files for shoal's RNN / GRU / LSTM with recurrent=True (neuralforecast's step-by-step
forecasts), checked by tests/models/recurrent_step_test.cpp.

Run with the peers venv (needs neuralforecast + torch; CI only reads the committed output):
    /opt/peers/bin/python bench/peers/recurrent_golden.py [out_dir=tests/golden [name ...]]

Format: forecast_golden.py's (<name>.json + <name>.bin). Models are neuralforecast's own with
random_seed=1, so "weights/<state_dict key>" are its initial weights (the LSTM's proj_size
weight_hr_l<k>, the GRU's and RNN's proj Linear included).

1. <name>_grad (float64), a training window as neuralforecast's training_step sees it: the
   window's L + 1 inputs and h_train targets in shoal's layouts (insample_y [B, L+1, 1],
   outsample_y [B, h_train, 1], hist_exog [B, X, L+1, 1], futr_exog [B, F, L+1+h_train, 1],
   stat_exog [1, S]), shifted by one into the model's input as _parse_windows does; the forward
   of model.h = h_train ("output" [B, h_train, M]) and the gradients of sum(output * r).
   Then "decode" [B, H, M]: _validate_step_recurrent_batch's step-by-step forecasts (each fed
   back, a multi-output loss's mean) from the inference window "decode_inputs/*" (L_e =
   inference_input_size + 1 inputs, futr_exog [B, F, L_e + H, 1]).
2. <name>_train (float32): 20 Adam(lr=1e-3) steps with MAE on every training window of one
   stored series (windows of L + 1 + h_train steps), its 20 losses.
"""

import os
import sys

import numpy as np
import torch

from neuralforecast.losses.pytorch import MAE, MQLoss
from neuralforecast.models import GRU, LSTM, RNN

sys.path.insert(0, os.path.dirname(__file__))
from forecast_golden import Golden, names  # noqa: E402  (the golden format, one writer)

STEPS = 20
T_SERIES = 40
LR = 1e-3

CLASSES = {"rnn": RNN, "gru": GRU, "lstm": LSTM}
# name -> (model, config). Hidden sizes odd; h_train 1, 2 and 3; GRU with a longer inference
# input; the LSTM also with MQLoss's three outputs (proj_size 3, the mean fed back).
CONFIGS = {
    "rnn_recurrent": ("rnn", dict(h=3, input_size=5, h_train=1, hist=2, futr=1, stat=0,
                                  encoder_n_layers=1, encoder_hidden_size=5)),
    "gru_recurrent": ("gru", dict(h=5, input_size=4, h_train=2, inference_input_size=6, hist=1,
                                  futr=2, stat=1, encoder_n_layers=2, encoder_hidden_size=6)),
    "lstm_recurrent": ("lstm", dict(h=4, input_size=6, h_train=3, hist=1, futr=1, stat=1,
                                    encoder_n_layers=2, encoder_hidden_size=7)),
    "lstm_recurrent_mq3": ("lstm", dict(h=4, input_size=6, h_train=2, hist=1, futr=1, stat=1,
                                        encoder_n_layers=2, encoder_hidden_size=7, mq3=True)),
}


def make(kind, c):
    extra = {}
    if c.get("mq3"):
        extra.update(loss=MQLoss(level=[80]), valid_loss=MQLoss(level=[80]))
    if "inference_input_size" in c:
        extra["inference_input_size"] = c["inference_input_size"]
    return CLASSES[kind](h=c["h"], input_size=c["input_size"], h_train=c["h_train"],
                         recurrent=True, random_seed=1,
                         encoder_n_layers=c["encoder_n_layers"],
                         encoder_hidden_size=c["encoder_hidden_size"],
                         hist_exog_list=names("x", c["hist"]), futr_exog_list=names("f", c["futr"]),
                         stat_exog_list=names("s", c["stat"]), **extra)


def rand(gen, *shape, dtype):
    return 2 * torch.rand(shape, generator=gen, dtype=dtype) - 1


def nf_batch(c, ins, out, hist, futr, stat):
    """A window in shoal's layouts -> the shifted windows_batch of neuralforecast's recurrent
    models (_parse_windows): y's inputs then its targets but the last; every exogenous stream
    from the window's second step, the historical ones zero past the inputs."""
    b, li = ins.shape[0], ins.shape[1]
    batch = {"insample_y": torch.cat((ins, out[:, :-1]), dim=1), "hist_exog": None,
             "futr_exog": None, "stat_exog": None}
    batch["insample_mask"] = torch.ones_like(batch["insample_y"])
    n = li + out.shape[1]
    if c["hist"]:
        full = torch.zeros(b, n, c["hist"], dtype=ins.dtype)
        full[:, :li] = hist[..., 0].transpose(1, 2)
        batch["hist_exog"] = full[:, 1:]
    if c["futr"]:
        batch["futr_exog"] = futr[..., 0].transpose(1, 2)[:, 1:]
    if c["stat"]:
        batch["stat_exog"] = stat.expand(b, -1)
    return batch


def window_inputs(gen, c, b, li, hz, dt):
    ins = 3 * rand(gen, b, li, 1, dtype=dt) + 1.0
    out = 3 * rand(gen, b, hz, 1, dtype=dt) + 1.0
    hist = rand(gen, b, c["hist"], li, 1, dtype=dt) if c["hist"] else None
    futr = rand(gen, b, c["futr"], li + hz, 1, dtype=dt) if c["futr"] else None
    stat = rand(gen, 1, c["stat"], dtype=dt) if c["stat"] else None
    return ins, out, hist, futr, stat


def meta_of(kind, c):
    m = {k: v for k, v in c.items() if k != "mq3"}
    m.update(model=kind, n_series=1, recurrent=True, decoder_hidden_size=128, decoder_layers=2)
    return m


def gradient_golden(name, out_dir, windows=3):
    kind, c = CONFIGS[name]
    model = make(kind, c).double()
    gen = torch.Generator().manual_seed(4321)
    g = Golden(np.float64)
    for key, t in model.state_dict().items():
        if not key.startswith(("loss.", "valid_loss.")):
            g.add("weights/" + key, t)
    dt = torch.float64
    li, ht, h = model.input_size, model.h_train, model.horizon_backup  # li: input_size + 1
    ins, out, hist, futr, stat = window_inputs(gen, c, windows, li, ht, dt)
    for k, v in dict(insample_y=ins, outsample_y=out, hist_exog=hist, futr_exog=futr,
                     stat_exog=stat).items():
        if v is not None:
            g.add("inputs/" + k, v)
    model.train()
    model.h = ht  # as training_step sets it
    y = model(nf_batch(c, ins, out, hist, futr, stat))
    r = rand(gen, *y.shape, dtype=dt)
    (y * r).sum().backward()
    g.add("output", y)
    g.add("r", r)
    for key, p in model.named_parameters():
        if p.requires_grad:  # not a loss's fixed quantiles
            g.add("grads/" + key, p.grad)
    # Step-by-step forecasts from an inference window of L_e inputs.
    le = model.inference_input_size
    ins, out, hist, futr, stat = window_inputs(gen, c, windows, le, h, dt)
    for k, v in dict(insample_y=ins, hist_exog=hist, futr_exog=futr, stat_exog=stat).items():
        if v is not None:
            g.add("decode_inputs/" + k, v)
    batch = nf_batch(c, ins, torch.zeros_like(out), hist, futr, stat)
    model.eval()
    model.input_size = le
    with torch.no_grad():
        yd = model._validate_step_recurrent_batch(
            insample_y=ins, insample_mask=torch.ones_like(ins), futr_exog=batch["futr_exog"],
            hist_exog=batch["hist_exog"], stat_exog=batch["stat_exog"], y_idx=0)
    g.add("decode", yd)
    meta = meta_of(kind, c)
    meta["outputs"] = y.shape[-1]
    g.write(out_dir, name + "_grad", meta)
    print(name, "grad + decode", tuple(yd.shape))


def series(c, gen):
    t = torch.arange(T_SERIES, dtype=torch.float32)
    y = torch.sin(0.5 * t) + 0.05 * t + 0.1 * rand(gen, T_SERIES, dtype=torch.float32)
    hist = rand(gen, c["hist"], T_SERIES, dtype=torch.float32)
    futr = torch.stack([torch.cos(0.5 * t + k) for k in range(c["futr"])] or [t[:0]])
    stat = rand(gen, 1, c["stat"], dtype=torch.float32)
    return y, hist, futr, stat


def training_golden(name, out_dir):
    kind, c = CONFIGS[name]
    model = make(kind, c).float()
    gen = torch.Generator().manual_seed(99)
    g = Golden(np.float32)
    for key, t in model.named_parameters():
        g.add("weights/" + key, t)
    y, hist, futr, stat = series(c, gen)
    g.add("series/y", y)
    if c["hist"]:
        g.add("series/hist", hist)
    if c["futr"]:
        g.add("series/futr", futr)
    if c["stat"]:
        g.add("series/stat", stat)
    li, ht = model.input_size, model.h_train
    starts = list(range(T_SERIES - li - ht + 1))
    ins = torch.stack([y[s:s + li] for s in starts]).unsqueeze(-1)
    out = torch.stack([y[s + li:s + li + ht] for s in starts]).unsqueeze(-1)
    hx = torch.stack([hist[:, s:s + li] for s in starts]).unsqueeze(-1) if c["hist"] else None
    fx = (torch.stack([futr[:, s:s + li + ht] for s in starts]).unsqueeze(-1)
          if c["futr"] else None)
    batch = nf_batch(c, ins, out, hx, fx, stat if c["stat"] else None)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = MAE()
    losses = []
    model.train()
    model.h = ht
    for _ in range(STEPS):
        opt.zero_grad()
        yhat = model(batch)
        loss = loss_fn(y=out[..., 0], y_hat=yhat[..., 0], mask=torch.ones_like(out[..., 0]))
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    meta = meta_of(kind, c)
    meta.update(batch=len(starts), steps=STEPS, lr=LR, series_length=T_SERIES, starts=starts,
                losses=losses)
    g.write(out_dir, name + "_train", meta)
    print(name, "losses", ["%.6f" % v for v in losses])


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "golden")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for name in sys.argv[2:] or CONFIGS:
        gradient_golden(name, out_dir)
        if not CONFIGS[name][1].get("mq3"):
            training_golden(name, out_dir)
    print("wrote goldens to", os.path.abspath(out_dir))


if __name__ == "__main__":
    main()
