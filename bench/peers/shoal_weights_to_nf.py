"""Loads shoal-trained TSMixerx (or RNN, GRU, LSTM, TCN, DilatedRNN, BiTCN, iTransformer,
PatchTST, VanillaTransformer) weights into neuralforecast's PyTorch model and checks that both
forecast the same (not in CI: needs the peer environment).

    PYTHONPATH=build/release/python /opt/peers/bin/python bench/peers/shoal_weights_to_nf.py [MODEL]

MODEL: a class name, or LSTM-recurrent / GRU-recurrent / RNN-recurrent (recurrent=True: the
step-by-step forecasts, from the windows one step longer, each forecast fed back).

shoal trains a TSMixerx (future + historical + static exogenous) on a few series, saves the
weights as safetensors, and forecasts; neuralforecast builds the same model, loads the file with
safetensors.torch.load_file + load_state_dict (strict: every name must map), and forecasts the
same futr_df. Prints the largest difference; exits 1 above the float32 tolerance.
"""

import logging
import os
import sys
import tempfile
import warnings

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
    logging.getLogger(name).setLevel(logging.ERROR)


def make_data(n_series=3, length=60, seed=0):
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(n_series):
        t = np.arange(length)
        frames.append(pd.DataFrame({
            "unique_id": f"s{k}",
            "ds": pd.date_range("2001-01-31", periods=length, freq="ME"),
            "y": 20 + 0.3 * t + 4 * np.sin(2 * np.pi * t / 12) + rng.normal(size=length) + 3 * k,
            "promo": (t % 5 == 0).astype(float),
            "temp": rng.normal(size=length),
        }))
    static = pd.DataFrame({"unique_id": [f"s{k}" for k in range(n_series)],
                           "size": np.arange(1.0, n_series + 1)})
    return pd.concat(frames, ignore_index=True), static


# Each model's own arguments besides the shared ones (h, exogenous lists, scaler, seed).
OWN_ARGS = {
    "TSMixerx": dict(input_size=18, n_series=3, n_block=2, ff_dim=32),
    "LSTM": dict(input_size=18, encoder_hidden_size=16, decoder_hidden_size=16),
    "GRU": dict(input_size=4, encoder_hidden_size=12, decoder_layers=3),  # h > input_size
    "RNN": dict(encoder_hidden_size=16, decoder_layers=1),  # input_size -1: 3 × h
    "TCN": dict(input_size=18, encoder_hidden_size=16, decoder_hidden_size=16),
    "DilatedRNN": dict(input_size=18, encoder_hidden_size=16, decoder_hidden_size=16,
                       dilations=[[1, 2], [4]]),
    "BiTCN": dict(input_size=18, hidden_size=16),
    # Future exogenous inputs only, as neuralforecast's iTransformer takes.
    "iTransformer": dict(input_size=18, n_series=3, hidden_size=16, n_heads=2, d_ff=32,
                         hist_exog_list=None, stat_exog_list=None),
    "PatchTST": dict(input_size=18, hidden_size=16, n_heads=4, encoder_layers=2,
                     linear_hidden_size=32, patch_len=6, stride=3, revin_affine=True),
    "LSTM-recurrent": dict(input_size=12, encoder_hidden_size=16, recurrent=True, h_train=2),
    "GRU-recurrent": dict(input_size=12, encoder_hidden_size=12, recurrent=True,
                          inference_input_size=15),
    "RNN-recurrent": dict(input_size=8, encoder_hidden_size=10, recurrent=True, h_train=3),
    # Future exogenous inputs only, as neuralforecast's VanillaTransformer takes.
    "VanillaTransformer": dict(input_size=18, hidden_size=16, n_head=2, conv_hidden_size=32,
                               hist_exog_list=None, stat_exog_list=None),
}
# Models without exogenous inputs (neuralforecast refuses the lists).
NO_EXOG = ("PatchTST",)
# State neuralforecast's strict load expects that shoal does not keep, taken from the peer's own
# module: PatchTST's fixed attention scale and BatchNorm's step count (read by nothing with a
# fixed momentum); VanillaTransformer's sine/cosine position tables (shoal computes its own).
FROM_PEER = {"PatchTST": (".sdp_attn.scale", "num_batches_tracked"),
             "VanillaTransformer": ("position_embedding.pe",)}
# Modules neuralforecast holds under two names (its state_dict lists both): the alias of each
# name shoal saves. TCN's CausalConv1d keeps its conv as .conv and as .causalconv.0.
ALIASES = {"TCN": (".conv.", ".causalconv.0.")}


def main():
    import neuralforecast.models
    import shoal
    import torch
    from neuralforecast import NeuralForecast
    from safetensors.torch import load_file

    variant = sys.argv[1] if len(sys.argv) > 1 else "TSMixerx"
    name = variant.split("-")[0]  # the class
    df, static = make_data()
    exog = {} if name in NO_EXOG else dict(futr_exog_list=["promo"], hist_exog_list=["temp"],
                                           stat_exog_list=["size"])
    args = {**dict(h=6, scaler_type="standard", random_seed=7), **exog, **OWN_ARGS[variant]}

    model = getattr(shoal, name)(max_steps=200, **args)
    nf = shoal.NeuralForecast([model], freq="ME").fit(df, static_df=static)
    futr = nf.make_future_dataframe()
    futr["promo"] = (np.arange(len(futr)) % 2).astype(float)
    ours = nf.predict(futr_df=futr)
    path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    model.save_weights(path)

    peer = getattr(neuralforecast.models, name)(max_steps=1, enable_progress_bar=False, enable_model_summary=False,
                    logger=False, **args)
    pnf = NeuralForecast(models=[peer], freq="ME")
    pnf.fit(df, static_df=static)  # one step: builds the module and its scalers
    state = load_file(path)
    if name in ALIASES:
        mine, theirs_name = ALIASES[name]
        state.update({k.replace(mine, theirs_name): v for k, v in state.items() if mine in k})
    if name in FROM_PEER:
        state.update({k: v for k, v in pnf.models[0].state_dict().items()
                      if k.endswith(FROM_PEER[name])})
    missing, unexpected = pnf.models[0].load_state_dict(state, strict=True), None
    del missing, unexpected
    theirs = pnf.predict(futr_df=futr, static_df=static)

    merged = ours.merge(theirs, on=["unique_id", "ds"], suffixes=("_shoal", "_nf"))
    a = merged[f"{name}_shoal"].to_numpy(np.float64)
    b = merged[f"{name}_nf"].to_numpy(np.float64)
    diff = np.abs(a - b)
    rel = diff.max() / max(np.abs(b).max(), 1e-9)
    print(merged.head(8).to_string(index=False))
    print(f"tensors: {len(state)} (every name loaded strictly), torch {torch.__version__}")
    print(f"rows {len(merged)}: max |shoal - neuralforecast| = {diff.max():.3g} "
          f"(relative {rel:.3g})")
    ok = len(merged) == len(ours) and rel < 1e-5
    print("OK: same forecasts" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
