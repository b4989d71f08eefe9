"""Golden forecasts of whole fits, for tests/python/test_fit_parity.py.

A fit whose every step takes every window of every series (windows_batch_size=None, batch_size
at least the number of series) draws nothing at random after the initial weights, so shoal and
neuralforecast, starting from the same weights (random_seed), should end at the same forecasts:
the check covers the whole path at once (padding of shorter series, the windows kept, scalers,
loss masks, Adam, the learning-rate schedule, predict). The models are those whose training stays
close to convex, where float rounding does not grow into a different fit: NLinear, DLinear, and
TiDE at its defaults (its temporal decoder's one-output LayerNorm leaves a linear model).
Deep models (NHITS, NBEATS, MLP) diverge from rounding alone within tens of steps and are
checked by their 20-step training goldens instead.

Run with the peers venv (neuralforecast 3.3.0 + torch; CI only reads the committed output):
    /opt/peers/bin/python bench/peers/fit_golden.py [../shared/data/ts [tests/golden [CASE,...]]]
(with cases named, only those are run again; the file keeps the others)
"""

import json
import logging
import os
import sys

import numpy as np
import pandas as pd
import torch

GROUP, EVERY, H, INPUT_SIZE, STEPS = "quarterly", 10, 8, 16, 100
CATEGORICAL_ARGS = {"futr_exog_list": ["quarter"], "hist_exog_list": ["direction"],
                    "stat_exog_list": ["category"],
                    "cat_exog_list": ["category", "quarter", "direction"],
                    "categorical_cardinalities": {"quarter": 4, "direction": 3, "category": 6}}
# name -> (neuralforecast class, extra arguments[, data]); a "loss" argument is
# {class: arguments}; data: "sample_weight" or "categorical", the columns added to the panel.
CASES = {
    "NLinear": ("NLinear", {}),
    "NLinear-standard": ("NLinear", {"scaler_type": "standard"}),
    "DLinear-robust": ("DLinear", {"scaler_type": "robust"}),
    "TiDE": ("TiDE", {}),
    # neuralforecast's sample_weight column (SAMPLE_WEIGHT below): each window's loss terms
    # weighted by the mean weight of its output rows.
    "NLinear-weighted": ("NLinear", {"scaler_type": "standard"}, "sample_weight"),
    # Lightning's gradient clipping (torch.nn.utils.clip_grad_norm_), at a norm every step hits.
    "NLinear-clipped": ("NLinear", {"scaler_type": "standard", "gradient_clip_val": 0.05}),
    # Multi-output losses: every quantile column of MQLoss; a DistributionLoss's parameter
    # columns (its mean and quantiles are sampled, each tool with its own generator).
    "NLinear-MQLoss": ("NLinear", {"loss": {"MQLoss": {"level": [80, 90]}}}),
    "DLinear-MQLoss-robust": ("DLinear", {"scaler_type": "robust",
                                          "loss": {"MQLoss": {"quantiles": [0.1, 0.5, 0.9]}}}),
    "NLinear-Normal-standard": ("NLinear", {
        "scaler_type": "standard",
        "loss": {"DistributionLoss": {"distribution": "Normal", "level": [80],
                                      "return_params": True}}}),
    # StudentT's heavy-tailed likelihood is not convex in the location: float32 rounding grows
    # faster over the steps, so its parity is checked over fewer.
    "NLinear-StudentT-robust": ("NLinear", {
        "scaler_type": "robust", "max_steps": 20,
        "loss": {"DistributionLoss": {"distribution": "StudentT", "level": [80],
                                      "return_params": True}}}),
    # Poisson on M3's positive counts-like values: its rate column (-loc).
    "NLinear-Poisson": ("NLinear", {
        "loss": {"DistributionLoss": {"distribution": "Poisson", "level": [80],
                                      "return_params": True}}}),
    # Gaussian mixtures: every component's mean and scale columns (and weight). Learned weights
    # of several components are not compared over a fit: the components start alike, so each
    # weight logit's gradient w − r (weight minus responsibility) starts near 0 and Adam's first
    # steps (±lr·sign g) follow its float32 rounding (1e-3 apart after one step, 1e-1 after
    # 100). One weighted component checks the weighted layout and its weight column.
    "NLinear-GMM-standard": ("NLinear", {
        "scaler_type": "standard",
        "loss": {"GMM": {"n_components": 2, "level": [80], "return_params": True}}}),
    "NLinear-GMM-weighted-standard": ("NLinear", {
        "scaler_type": "standard",
        "loss": {"GMM": {"n_components": 1, "weighted": True, "level": [80],
                         "return_params": True}}}),
    # Categorical exogenous features (CATEGORICAL_ARGS), each kind through its embedding:
    # the calendar quarter (future), the last step's direction (historical), M3's category
    # (static). The models are deep, so float32 rounding grows over a fit: they are compared
    # over fewer steps. TiDE runs without its final LayerNorm (through which nothing trains)
    # and without dropout (each tool draws its own masks), for one step: Adam's first step
    # moves every weight by about ±lr, the sign of its gradient, so the forecast shows whether
    # each gradient, the embeddings' included, points neuralforecast's way (a few dense-encoder
    # gradients within rounding of 0 can go either way).
    "TiDE-categorical": ("TiDE", dict(CATEGORICAL_ARGS, layernorm=False, dropout=0.0,
                                      max_steps=1, scaler_type="robust"), "categorical"),
    "MLP-categorical": ("MLP", dict(CATEGORICAL_ARGS, max_steps=20, scaler_type="robust"),
                        "categorical"),
}


def with_sample_weight(df):
    """df with a sample_weight column: 1 + (k mod 4) / 2 for the k-th row of each series."""
    df = df.copy()
    df["sample_weight"] = 1.0 + (df.groupby("unique_id").cumcount() % 4) / 2.0
    return df


def with_categoricals(df, meta, h=0):
    """(df with quarter and direction columns, static_df with category, futr_df of the h steps
    after each series). quarter: "Q1".."Q4" of each row's calendar quarter (M3's start_period);
    direction: "up", "down" or "flat" from the previous row's y (the first row "flat")."""
    meta = meta.set_index("unique_id")
    start = df["unique_id"].map(meta["start_period"]).to_numpy()
    df = df.copy()
    df["quarter"] = ["Q%d" % (1 + (s - 1 + k - 1) % 4) for s, k in zip(start, df["ds"])]
    step = df.groupby("unique_id")["y"].diff().fillna(0).to_numpy()
    df["direction"] = np.where(step > 0, "up", np.where(step < 0, "down", "flat"))
    ids = df["unique_id"].drop_duplicates()
    static_df = pd.DataFrame({"unique_id": ids, "category": ids.map(meta["category"])})
    last = df.groupby("unique_id")["ds"].max()
    futr = pd.DataFrame({"unique_id": np.repeat(ids.to_numpy(), h),
                         "ds": np.concatenate([last[u] + np.arange(1, h + 1) for u in ids])})
    fstart = futr["unique_id"].map(meta["start_period"]).to_numpy()
    futr["quarter"] = ["Q%d" % (1 + (s - 1 + k - 1) % 4) for s, k in zip(fstart, futr["ds"])]
    return df, static_df, futr


def build_args(extra, losses):
    """A case's arguments with its loss (and valid_loss) built from `losses` (a module)."""
    args = dict(extra)
    args.setdefault("max_steps", STEPS)
    if "loss" in args:
        (cls, kwargs), = args["loss"].items()
        args["loss"] = getattr(losses, cls)(**kwargs)
        args["valid_loss"] = getattr(losses, cls)(**kwargs)
    return args


def compared_columns(name, loss):
    """The forecast columns the parity test compares: every deterministic one."""
    names = list(getattr(loss, "output_names", [""]))
    if getattr(loss, "is_distribution_output", False):
        names = list(loss.param_names)
    return [name + n for n in names]


def panel(data_dir):
    train = pd.read_csv(os.path.join(data_dir, f"m3_{GROUP}_train.csv.gz"))
    ids = train["unique_id"].drop_duplicates().tolist()[::EVERY]
    sizes = train.groupby("unique_id").size()
    ids = [u for u in ids if sizes[u] >= INPUT_SIZE + H]
    return train[train.unique_id.isin(ids)].reset_index(drop=True), ids


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "shared", "data", "ts")
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "golden")
    torch.set_num_threads(1)
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    from neuralforecast import NeuralForecast, models
    from neuralforecast.losses import pytorch as losses

    df, ids = panel(data_dir)
    out = {"group": GROUP, "every": EVERY, "h": H, "input_size": INPUT_SIZE, "max_steps": STEPS,
           "random_seed": 1, "unique_ids": ids, "cases": {}}
    only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    if only is not None:  # regenerate these cases, keep the others as committed
        with open(os.path.join(out_dir, "full_batch_fits.json")) as f:
            out["cases"] = json.load(f)["cases"]
    for name, (cls, extra, *data) in CASES.items():
        if only is not None and name not in only:
            continue
        args = build_args(extra, losses)
        m = getattr(models, cls)(h=H, input_size=INPUT_SIZE, random_seed=1,
                                 windows_batch_size=None, batch_size=1024, **args,
                                 accelerator="cpu", devices=1, enable_progress_bar=False,
                                 logger=False, enable_model_summary=False,
                                 enable_checkpointing=False)
        nf = NeuralForecast(models=[m], freq=1)
        if data == ["categorical"]:
            meta = pd.read_csv(os.path.join(data_dir, "m3_meta.csv.gz"))
            cat_df, static_df, futr_df = with_categoricals(df, meta, H)
            nf.fit(cat_df, static_df=static_df)
            fc = nf.predict(futr_df=futr_df)
        else:
            nf.fit(with_sample_weight(df) if data == ["sample_weight"] else df)
            fc = nf.predict()
        fc = fc.reset_index() if "unique_id" not in fc.columns else fc
        order = {u: i for i, u in enumerate(ids)}
        fc = fc.sort_values(["unique_id", "ds"], key=lambda c: c.map(order) if
                            c.name == "unique_id" else c)
        columns = compared_columns(cls, args.get("loss"))
        out["cases"][name] = {"class": cls, "arguments": extra, "data": data, "forecasts": {
            c: [float(v) for v in fc[c].to_numpy(np.float64)] for c in columns}}
        print(name, {c: v[:3] for c, v in out["cases"][name]["forecasts"].items()})
    path = os.path.join(out_dir, "full_batch_fits.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", os.path.abspath(path))


if __name__ == "__main__":
    main()
