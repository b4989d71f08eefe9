"""Peer of bench/auto_search.py: neuralforecast's Auto model (Optuna backend, TPE seeded as
shoal's) over the same search space, the same data and the same validation rows. Not needed by
CI; run by bench/auto_search.py with --peer-python.

    /opt/peers/bin/python bench/peers/auto_search.py --data TRAIN.csv --model NHITS --h 18 \
        --samples 8 --space '{...}' --threads 2

Prints one JSON line: search_s (the search and the refit, wall seconds), best_loss (the best
trial's validation loss), trials, and the refit model's forecasts (for the test sMAPE).
"""

import argparse
import json
import logging
import time
import warnings

import pandas as pd


def optuna_config(space, h):
    """The bench's space (JSON: {key: [kind, args]}) as an Optuna config function."""

    def config(trial):
        out = {}
        for key, (kind, args) in space.items():
            if kind == "value":
                out[key] = args
            elif kind == "choice":
                out[key] = trial.suggest_categorical(key, args)
            elif kind == "loguniform":
                out[key] = trial.suggest_float(key, *args, log=True)
            elif kind == "uniform":
                out[key] = trial.suggest_float(key, *args)
            else:
                raise ValueError(kind)
        return out

    return config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--h", type=int, required=True)
    ap.add_argument("--samples", type=int, required=True)
    ap.add_argument("--space", required=True)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()

    import optuna
    import torch
    from neuralforecast import NeuralForecast, auto

    warnings.filterwarnings("ignore")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(a.threads)
    df = pd.read_csv(a.data)
    space = json.loads(a.space)
    config = optuna_config(space, a.h)
    base = config

    def quiet(trial):
        return {**base(trial), "enable_progress_bar": False, "enable_model_summary": False,
                "logger": False, "enable_checkpointing": False}

    cls = getattr(auto, f"Auto{a.model}")
    model = cls(h=a.h, config=quiet, num_samples=a.samples, backend="optuna",
                search_alg=optuna.samplers.TPESampler(seed=1))
    nf = NeuralForecast(models=[model], freq=1)
    t0 = time.perf_counter()
    nf.fit(df, val_size=a.h)
    search_s = time.perf_counter() - t0
    fc = nf.predict()
    study = nf.models[0].results
    print(json.dumps({"search_s": search_s, "best_loss": float(study.best_value),
                      "trials": len(study.trials),
                      "forecasts": fc[f"Auto{a.model}"].astype(float).tolist()}))


if __name__ == "__main__":
    main()
