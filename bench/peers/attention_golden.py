"""Golden values for the attention layers (tests/layers/attention_golden_test.cpp), computed by
neuralforecast 3.3.0's own modules (common/_modules.py) in float64.

Run with the peers venv (CI only reads the committed output):
    /opt/peers/bin/python bench/peers/attention_golden.py [out=tests/golden/attention.json]

One JSON file: {case name: {array name: flat list (row-major), scalar name: value}}. Each case
builds its module under torch.manual_seed (float32 init, as the models do, then .double()),
draws x [B, L, hidden] and dy, and stores the weights in state_dict order ("weights/<key>",
conv weights [out, in, 1] as stored), y = module(x) and the gradients of sum(y * dy)
("grads/<key>", "dx"). Dropout is 0 and the module in eval mode: torch's masks cannot be
reproduced. Cases:
  attention/...   AttentionLayer(FullAttention(mask_flag, output_attention), hidden, heads) on
                  (x, x, x): self-attention; mask_flag with output_attention=True is the path
                  that applies neuralforecast's TriangularCausalMask
  encoder/...     TransEncoderLayer(AttentionLayer(FullAttention(False, ...)), hidden, conv_hidden,
                  dropout=0, activation) on x
"""

import json
import sys

import numpy as np
import torch

from neuralforecast.common._modules import AttentionLayer, FullAttention, TransEncoderLayer

rng = np.random.default_rng(20261129)
out = {}


def record(name, module, x, run, params):
    module = module.double().eval()
    x = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = run(module, x)
    dy = torch.tensor(rng.uniform(-1, 1, size=tuple(y.shape)))
    (y * dy).sum().backward()
    case = {"x": x.detach().flatten().tolist(), "y": y.detach().flatten().tolist(),
            "dy": dy.flatten().tolist(), "dx": x.grad.flatten().tolist(), **params}
    for key, p in module.state_dict().items():
        case[f"weights/{key}"] = p.flatten().tolist()
    for key, p in module.named_parameters():
        case[f"grads/{key}"] = p.grad.flatten().tolist()
    out[name] = case


for b, length, hidden, heads, causal in [(2, 5, 8, 2, False), (3, 7, 12, 3, True),
                                         (2, 4, 16, 4, False)]:
    torch.manual_seed(b * 100 + length)
    layer = AttentionLayer(FullAttention(mask_flag=causal, attention_dropout=0.0,
                                         output_attention=causal), hidden, heads)
    record(f"attention/B{b}_L{length}_D{hidden}_H{heads}{'_causal' if causal else ''}", layer,
           rng.uniform(-1, 1, size=(b, length, hidden)),
           lambda m, x: m(x, x, x, attn_mask=None)[0],
           {"B": b, "L": length, "hidden": hidden, "heads": heads, "causal": causal})

for b, length, hidden, heads, ff, act in [(2, 5, 8, 2, 12, "relu"), (2, 6, 12, 3, 0, "gelu")]:
    torch.manual_seed(7 + length)
    layer = TransEncoderLayer(AttentionLayer(FullAttention(False, attention_dropout=0.0), hidden,
                                        heads), hidden, ff or None, dropout=0.0, activation=act)
    record(f"encoder/B{b}_L{length}_D{hidden}_H{heads}_{act}", layer,
           rng.uniform(-1, 1, size=(b, length, hidden)), lambda m, x: m(x)[0],
           {"B": b, "L": length, "hidden": hidden, "heads": heads, "ff": ff or 4 * hidden,
            "gelu": act == "gelu"})

path = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/attention.json"
with open(path, "w") as f:
    json.dump(out, f)
print(f"wrote {len(out)} cases to {path}")
