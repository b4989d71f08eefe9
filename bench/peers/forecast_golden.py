"""Golden files for shoal's NLinear / DLinear / MLP / MLPMultivariate / iTransformer parity tests
and the training goldens of NHITS / NBEATS / NBEATSx / TiDE (tests/support/forecast_golden.h, run for
every registered model by tests/models/registry_models_test.cpp; the stacked models' forward
and gradient goldens come from blocks_golden.py).

Run with the peers venv (needs neuralforecast + torch; CI only reads the committed output):
    /opt/peers/bin/python bench/peers/forecast_golden.py [out_dir=tests/golden [model ...]]

The format is bench/peers/tsmixer_golden.py's: <name>.json (index + config + scalars) and
<name>.bin (little-endian arrays). Models are neuralforecast's own, built with random_seed=1, so
"weights/<state_dict key>" are neuralforecast's initial weights (PyTorch's default init drawn
after seeding), which shoal's torch-generator init must reproduce bit for bit.

1. <model>_grad (float64): the seed-1 weights cast to double, forward on fixed random inputs,
   backward of sum(out * r): "output", "r", "grads/<param>".
2. <model>_train (float32): 20 Adam(lr=1e-3) steps from the seed-1 weights with
   neuralforecast's MAE (masked mean), every step on all windows of one stored series (so no
   sampling order enters; "starts" lists them per step). Records the 20 losses.

Inputs are stored in shoal's layouts (models/forecast.h): insample_y [B, L, N],
hist_exog [B, X, L, N], futr_exog [B, F, L+H, N], stat_exog [N, S] (N = 1 for the univariate
models, whose neuralforecast windows are [B, L, X], [B, L+H, F] and [B, S]: the script
transposes them on the way in). Series: y [T, N], avail [T, N], hist [X, T, N], futr [F, T, N].
"""

import json
import math
import os
import sys

import numpy as np
import torch

import neuralforecast.models
from neuralforecast.common._modules import PositionalEmbedding
from neuralforecast.losses.pytorch import MAE

sys.path.insert(0, os.path.dirname(__file__))
from golden_models import written_by  # noqa: E402

STEPS = 20
T_SERIES = 40
LR = 1e-3

# name -> config (neuralforecast arguments; the C++ test reads the same keys).
CONFIGS = {
    "nlinear": dict(h=4, input_size=8, n_series=1, hist=0, futr=0, stat=0),
    "dlinear": dict(h=4, input_size=10, n_series=1, hist=0, futr=0, stat=0,
                    moving_avg_window=5),
    "mlp": dict(h=4, input_size=8, n_series=1, hist=1, futr=2, stat=2, num_layers=2,
                hidden_size=8),
    "mlp_multivariate": dict(h=3, input_size=6, n_series=2, hist=1, futr=1, stat=2,
                             num_layers=2, hidden_size=8),
    # Training goldens only; the holes in their windows' inputs exercise the insample mask
    # NHITS and NBEATS multiply their residuals by.
    "nhits": dict(h=4, input_size=8, n_series=1, hist=1, futr=1, stat=1,
                  mlp_units=[[8, 8], [8, 8], [8, 8]], grad=False),
    "nbeats": dict(h=4, input_size=8, n_series=1, hist=0, futr=0, stat=0,
                   mlp_units=[[8, 8], [8, 8], [8, 8]], grad=False),
    "nbeatsx": dict(h=4, input_size=8, n_series=1, hist=1, futr=1, stat=1,
                    mlp_units=[[8, 8], [8, 8], [8, 8]], grad=False),
    # Dropout 0: a dropout mask is each tool's own draw.
    "tide": dict(h=4, input_size=8, n_series=1, hist=1, futr=1, stat=1, hidden_size=8,
                 decoder_output_dim=2, temporal_decoder_dim=4, dropout=0.0, grad=False),
    # The recurrent models: the last H hidden states decoded (H < L, LSTM and RNN), or upsampled
    # along time (H > L, GRU); one decoder layer (a plain Linear) for RNN, three for GRU.
    "rnn": dict(h=4, input_size=6, n_series=1, hist=1, futr=1, stat=1, encoder_n_layers=2,
                encoder_hidden_size=9, decoder_hidden_size=5, decoder_layers=1),
    "gru": dict(h=5, input_size=3, n_series=1, hist=1, futr=2, stat=1, encoder_n_layers=2,
                encoder_hidden_size=7, decoder_hidden_size=6, decoder_layers=3),
    "lstm": dict(h=4, input_size=8, n_series=1, hist=2, futr=1, stat=2, encoder_n_layers=2,
                 encoder_hidden_size=8, decoder_hidden_size=8, decoder_layers=2),
    # TCN: three dilated layers, the last one's first tap reaching past the window (8 > 7).
    "tcn": dict(h=5, input_size=7, n_series=1, hist=1, futr=2, stat=1, kernel_size=3,
                dilations=[1, 2, 4], encoder_hidden_size=6, encoder_activation="ReLU",
                decoder_hidden_size=5, decoder_layers=2),
    # DilatedRNN: two groups (a residual link around the second), dilations 2 and 3 padding
    # the 7 steps to 8 and 9.
    "dilated_rnn": dict(h=5, input_size=7, n_series=1, hist=1, futr=1, stat=1,
                        cell_type="LSTM", dilations=[[1, 2], [3]], encoder_hidden_size=6,
                        decoder_hidden_size=5, decoder_layers=2),
    # iTransformer: three series and two future exogenous inputs (3 + 6 tokens), two heads of
    # 4, use_norm; dropout 0 (a mask is each tool's own draw).
    "itransformer": dict(h=4, input_size=8, n_series=3, hist=0, futr=2, stat=0, hidden_size=8,
                         n_heads=2, e_layers=2, d_ff=12, dropout=0.0, use_norm=True),
    # BiTCN: three backward cells over the 7 steps, four forward ones over the 12 (the last,
    # dilation 8, reaching past the window both ways); dropout 0, a mask being each tool's draw.
    "bitcn": dict(h=5, input_size=7, n_series=1, hist=1, futr=2, stat=1, hidden_size=6,
                  dropout=0.0),
    # PatchTST: 10 steps in patches of 4 every 2 (5 patches with the replicated end), two
    # residual-attention layers of two heads, RevIN with its affine and the last value; dropout
    # 0 (a mask is each tool's own draw).
    "patchtst": dict(h=4, input_size=10, n_series=1, hist=0, futr=0, stat=0, encoder_layers=2,
                     n_heads=2, hidden_size=8, linear_hidden_size=12, dropout=0.0,
                     head_dropout=0.0, attn_dropout=0.0, patch_len=4, stride=2, revin=True,
                     revin_affine=True, revin_subtract_last=True, activation="gelu",
                     res_attention=True, batch_normalization=False, learn_pos_embed=True),
    # VanillaTransformer: a 3-step decoder start (ceil(8 * 0.3)) and 4 zeros, two encoder and two
    # decoder layers of two heads, two future exogenous inputs; dropout 0 (a mask is each tool's
    # own draw).
    "vanilla_transformer": dict(h=4, input_size=8, n_series=1, hist=0, futr=2, stat=0,
                                decoder_input_size_multiplier=0.3, hidden_size=8, n_head=2,
                                conv_hidden_size=12, encoder_layers=2, decoder_layers=2,
                                dropout=0.0, activation="gelu"),
}
# A config's keys that are not its model's arguments: the data's sizes (hist, futr and stat
# become the exogenous column lists) and whether the script writes a gradient golden.
DATA_KEYS = ("h", "input_size", "n_series", "hist", "futr", "stat", "grad")


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


def names(prefix, count):
    return [f"{prefix}{i}" for i in range(count)] or None


def nf_class(kind):
    """neuralforecast's class of a registry model: the one whose name, lowercased, is the
    registry's without underscores (mlp_multivariate: MLPMultivariate)."""
    classes = {n.lower(): getattr(neuralforecast.models, n) for n in neuralforecast.models.__all__}
    return classes[kind.replace("_", "")]


def make(kind, loss=None):
    """The config's model, built by neuralforecast with random_seed 1: its own arguments are
    the config's keys besides DATA_KEYS."""
    c = CONFIGS[kind]
    cls = nf_class(kind)
    args = dict(h=c["h"], input_size=c["input_size"], random_seed=1,
                hist_exog_list=names("x", c["hist"]), futr_exog_list=names("f", c["futr"]),
                stat_exog_list=names("s", c["stat"]),
                **{k: v for k, v in c.items() if k not in DATA_KEYS})
    if cls.MULTIVARIATE:
        args["n_series"] = c["n_series"]
    if loss is not None:  # a multi-output loss sizes the model's output layer
        args.update(loss=loss, valid_loss=loss)
    model = cls(**args)
    for module in model.modules():
        if isinstance(module, PositionalEmbedding):
            module.pe.copy_(sinusoid_positions(*module.pe.shape[1:]))
    return model


def sinusoid_positions(rows, width):
    """PositionalEmbedding's table as torch builds it in float, but with exp, sin and cos
    correctly rounded (libm's in double, then rounded to float): torch's vectorised float exp and
    sin are off by an ulp at some entries, and which ones depends on the CPU's vector width, so
    both tools use this one (layers/data_embedding.h)."""
    f32 = np.float32
    factor = f32(-(math.log(10000.0) / width))
    table = np.zeros((rows, width), dtype=np.float32)
    for i in range(width // 2):
        omega = f32(math.exp(float(f32(2 * i) * factor)))
        for t in range(rows):
            angle = float(f32(t) * omega)
            table[t, 2 * i] = math.sin(angle)
            table[t, 2 * i + 1] = math.cos(angle)
    return torch.from_numpy(table).unsqueeze(0)


def rand(gen, *shape, dtype):
    return 2 * torch.rand(shape, generator=gen, dtype=dtype) - 1


def to_nf(kind, batch):
    """shoal's layouts -> the windows_batch neuralforecast's forward takes."""
    if kind in ("mlp_multivariate", "itransformer"):  # multivariate: these layouts already
        return dict(batch)
    b = batch["insample_y"].shape[0]
    mask = batch.get("insample_mask")
    out = {"insample_y": batch["insample_y"],
           "insample_mask": torch.ones_like(batch["insample_y"]) if mask is None else mask,
           "hist_exog": None, "futr_exog": None, "stat_exog": None}
    if batch.get("hist_exog") is not None:  # [B, X, L, 1] -> [B, L, X]
        out["hist_exog"] = batch["hist_exog"][..., 0].transpose(1, 2)
    if batch.get("futr_exog") is not None:  # [B, F, L+H, 1] -> [B, L+H, F]
        out["futr_exog"] = batch["futr_exog"][..., 0].transpose(1, 2)
    if batch.get("stat_exog") is not None:  # [1, S] -> [B, S]
        out["stat_exog"] = batch["stat_exog"].expand(b, -1)
    return out


def config_meta(kind):
    return dict(CONFIGS[kind], model=kind)


def gradient_golden(kind, out_dir, windows=4, loss=None, suffix="_grad"):
    c = CONFIGS[kind]
    h, l, n = c["h"], c["input_size"], c["n_series"]
    model = make(kind, loss).double()
    gen = torch.Generator().manual_seed(1234)
    g = Golden(np.float64)
    seen = set()
    for name, t in model.state_dict().items():
        # A module held twice (TCN's conv, also its causalconv.0) is written under its first
        # name only.
        if t.data_ptr() in seen:
            continue
        # PatchTST's fixed attention scale and BatchNorm's step count: no weights of shoal's.
        # The sine/cosine position table: computed by shoal, not stored.
        if name.endswith((".sdp_attn.scale", "num_batches_tracked", "position_embedding.pe")):
            continue
        seen.add(t.data_ptr())
        if not name.startswith(("loss.", "valid_loss.")):  # a loss's quantiles
            g.add("weights/" + name, t)
    dt = torch.float64
    batch = {"insample_y": 3 * rand(gen, windows, l, n, dtype=dt) + 1.0}
    if c["hist"]:
        batch["hist_exog"] = rand(gen, windows, c["hist"], l, n, dtype=dt)
    if c["futr"]:
        batch["futr_exog"] = rand(gen, windows, c["futr"], l + h, n, dtype=dt)
    if c["stat"]:
        batch["stat_exog"] = rand(gen, n, c["stat"], dtype=dt)
    for k, v in batch.items():
        g.add("inputs/" + k, v)
    model.train()
    out = model(to_nf(kind, batch))
    out = out.reshape(windows, h, -1)  # [B, H, N * outputs]
    r = rand(gen, *out.shape, dtype=dt)
    (out * r).sum().backward()
    g.add("output", out)
    g.add("r", r)
    for name, p in model.named_parameters():
        if p.requires_grad:  # not a loss's fixed quantiles
            g.add("grads/" + name, p.grad)
    running = [(n, t) for n, t in model.state_dict().items() if "running_" in n]
    if running:  # BatchNorm: the statistics the training forward left, and an eval forward
        for name, t in running:
            g.add("buffers/" + name, t)
        model.eval()
        with torch.no_grad():
            g.add("eval_output", model(to_nf(kind, batch)).reshape(windows, h, -1))
    meta = config_meta(kind)
    meta["outputs"] = out.shape[-1] // n
    g.write(out_dir, kind + suffix, meta)


def series(kind, gen):
    """One series [T, N] (a trend and a season per column) with its covariates and an
    availability mask whose last H steps are 0 (neuralforecast's right padding) with holes."""
    c = CONFIGS[kind]
    h, n = c["h"], c["n_series"]
    t = torch.arange(T_SERIES, dtype=torch.float32)
    y = torch.stack([torch.sin(0.5 * t + j) * (1 + 0.5 * j) + 0.05 * (j + 1) * t
                     for j in range(n)], dim=1)
    y = y + 0.1 * rand(gen, T_SERIES, n, dtype=torch.float32)
    hist = rand(gen, c["hist"], T_SERIES, n, dtype=torch.float32)
    futr = torch.stack([torch.cos(0.5 * t + k) for k in range(c["futr"])] or [t[:0]])
    futr = futr.unsqueeze(-1).expand(-1, -1, n).contiguous()
    avail = torch.ones(T_SERIES, n)
    avail[-h:] = 0
    avail[25, n - 1] = 0
    avail[17, 0] = 0
    y = y * avail
    stat = rand(gen, n, c["stat"], dtype=torch.float32)
    return y, hist, futr, avail, stat


def window_batch(kind, y, hist, futr, avail, stat, starts):
    c = CONFIGS[kind]
    h, l = c["h"], c["input_size"]
    ins = torch.stack([y[s:s + l] for s in starts])
    tgt = torch.stack([y[s + l:s + l + h] for s in starts])
    mask = torch.stack([avail[s + l:s + l + h] for s in starts])
    batch = {"insample_y": ins, "insample_mask": torch.stack([avail[s:s + l] for s in starts])}
    if c["hist"]:
        batch["hist_exog"] = torch.stack([hist[:, s:s + l] for s in starts])
    if c["futr"]:
        batch["futr_exog"] = torch.stack([futr[:, s:s + l + h] for s in starts])
    if c["stat"]:
        batch["stat_exog"] = stat
    return to_nf(kind, batch), tgt, mask


def training_golden(kind, out_dir):
    c = CONFIGS[kind]
    h, l = c["h"], c["input_size"]
    model = make(kind).float()
    gen = torch.Generator().manual_seed(99)
    g = Golden(np.float32)
    for name, t in model.named_parameters():
        if t.requires_grad:  # not NBEATS' fixed bases (frozen parameters)
            g.add("weights/" + name, t)
    y, hist, futr, avail, stat = series(kind, gen)
    g.add("series/y", y)
    g.add("series/avail", avail)
    if c["hist"]:
        g.add("series/hist", hist)
    if c["futr"]:
        g.add("series/futr", futr)
    if c["stat"]:
        g.add("series/stat", stat)
    starts = list(range(T_SERIES - l - h + 1))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = MAE()
    losses = []
    model.train()
    for _ in range(STEPS):
        batch, tgt, mask = window_batch(kind, y, hist, futr, avail, stat, starts)
        opt.zero_grad()
        out = model(batch).reshape(tgt.shape)
        loss = loss_fn(y=tgt, y_hat=out, mask=mask)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    meta = config_meta(kind)
    meta.update(batch=len(starts), steps=STEPS, lr=LR, series_length=T_SERIES,
                starts=[starts] * STEPS, losses=losses)
    g.write(out_dir, kind + "_train", meta)
    print(kind, "losses", ["%.6f" % v for v in losses])


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "golden")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for kind in sys.argv[2:] or written_by("forecast_golden.py"):
        if CONFIGS[kind].get("grad", True):
            gradient_golden(kind, out_dir)
        training_golden(kind, out_dir)
    print("wrote goldens to", os.path.abspath(out_dir))


if __name__ == "__main__":
    main()
