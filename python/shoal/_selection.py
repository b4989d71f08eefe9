"""Model choice by validation (shoal.auto.select): each Auto model searched and fitted on the
data less its last h rows, scored on those rows beside seasonal naive, the best candidate kept
per series or over all series, then refitted on all the data with its best configuration.
Seasonal naive is always a candidate, so the choice is never worse than it on validation."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd

from ._auto import BaseAuto
from .core import NeuralForecast

SEASONAL_NAIVE = "SeasonalNaive"
ENSEMBLE = "Ensemble"
# Season lengths of pandas frequencies (their first letters), as the C++ reader's.
_SEASONS = {"M": 12, "Q": 4, "W": 52, "D": 7, "H": 24, "h": 24, "T": 60, "min": 60, "A": 1,
            "Y": 1, "B": 5}


def season_length_of(freq):
    if isinstance(freq, (int, np.integer)):
        return 1
    name = getattr(freq, "freqstr", freq)
    for prefix in sorted(_SEASONS, key=len, reverse=True):
        if name.lstrip("0123456789").startswith(prefix):
            return _SEASONS[prefix]
    return 1


def seasonal_naive(y, h, m):
    """The last season of y repeated over h steps (the last value where y is shorter)."""
    m = m if len(y) >= m else 1
    return np.resize(y[len(y) - m:], h)


class Selection:
    """What select() chose: scores (validation MAE of every candidate, per series), choice (the
    candidate per series) and predict(), the chosen candidates' forecasts after the data."""

    def __init__(self, scores, choice, forecasts, h, cols):
        self.scores, self.choice, self._forecasts, self.h = scores, choice, forecasts, h
        self._cols = cols

    def predict(self):
        """unique_id, ds, the chosen forecast (column "Selection") and the candidate it is
        from (column "model")."""
        return self._forecasts.copy()


def _refit(auto, df, freq, static_df, per_series, workers, cols):
    """The Auto model's best configuration(s) fitted on df: the forecasts after df, per series
    in a column named after the Auto model."""
    name = repr(auto)
    ids = df[cols["id_col"]].unique()
    configs = auto.best_config if per_series else {u: auto.best_config for u in ids}
    groups = {}
    for u in ids:
        groups.setdefault(json.dumps(configs[u], sort_keys=True, default=repr), []).append(u)
    out = []
    for key, members in groups.items():
        cfg = configs[members[0]]
        _, model = auto._model_of(cfg)
        model.alias = name
        part = df[df[cols["id_col"]].isin(members)]
        nf = NeuralForecast([model], freq=freq, per_series=per_series, workers=workers)
        nf.fit(part, static_df=static_df, **cols)
        out.append(nf.predict(static_df=static_df))
    return pd.concat(out, ignore_index=True)


def select(df, models, freq, static_df=None, per_series=True, search_per_series=False,
           ensemble=False, season_length=None, n_windows=1, step_size=None, workers=0,
           verbose=False, id_col="unique_id", time_col="ds", target_col="y"):
    """Chooses among the Auto `models` and seasonal naive by validation: each model is searched
    and fitted (NeuralForecast(per_series=search_per_series)) on df less its validation rows,
    then forecasts n_windows windows of h rows, step_size apart (default h), the last ending
    at each series' end (cross_validation without refitting); its forecasts of all of them are
    scored by MAE beside seasonal naive's from the same cutoffs (season_length: from freq when
    None) and, with ensemble=True, the mean of the models' forecasts. The lowest score wins,
    per series (per_series=True) or summed over all series; the winners are then refitted on
    all of df with their best configurations. Returns a Selection."""
    models = list(models)
    if not models or not all(isinstance(m, BaseAuto) for m in models):
        raise ValueError("models must be Auto models (shoal.auto.AutoNHITS(...), ...)")
    hs = {m.h for m in models}
    if len(hs) != 1:
        raise ValueError(f"the models' horizons differ ({sorted(hs)}): select needs one h")
    h = hs.pop()
    names = [repr(m) for m in models]
    if len(set(names)) != len(names) or {SEASONAL_NAIVE, ENSEMBLE} & set(names):
        raise ValueError(f"candidate names must be distinct (give alias=...): {names}")
    cols = dict(id_col=id_col, time_col=time_col, target_col=target_col)
    n_windows = int(n_windows)
    step = h if step_size is None else int(step_size)
    if n_windows < 1 or step < 1:
        raise ValueError(f"n_windows and step_size must be ≥ 1, got {n_windows} and {step}")
    held = h + (n_windows - 1) * step  # validation rows at each series' end
    m = season_length_of(freq) if season_length is None else int(season_length)
    ids = list(dict.fromkeys(df[id_col]))
    ys = {u: g[target_col].to_numpy(float) for u, g in df.groupby(id_col, sort=False)}
    short = [u for u in ids if len(ys[u]) <= held]
    if short:
        raise ValueError(f"series {short[0]!r} has too few rows: select holds out the last "
                         f"{held} rows of each series for validation (h = {h}, n_windows = "
                         f"{n_windows}, step_size = {step})")
    # Each window's truth and seasonal naive from its cutoff, windows in time order.
    cutoffs = {u: [len(y) - held + j * step for j in range(n_windows)] for u, y in ys.items()}
    truth = {u: np.concatenate([ys[u][c:c + h] for c in cutoffs[u]]) for u in ids}
    forecasts = {SEASONAL_NAIVE: {u: np.concatenate([seasonal_naive(ys[u][:c], h, m)
                                                     for c in cutoffs[u]]) for u in ids}}
    searched = []
    for model, name in zip(models, names):
        auto = copy.deepcopy(model)
        nf = NeuralForecast([auto], freq=freq, per_series=search_per_series, workers=workers)
        cv = nf.cross_validation(df, static_df=static_df, n_windows=n_windows, step_size=step,
                                 **cols)
        forecasts[name] = {u: g.sort_values(["cutoff", time_col])[name].to_numpy(float)
                           for u, g in cv.groupby(id_col, sort=False)}
        searched.append(auto)
    if ensemble:
        forecasts[ENSEMBLE] = {u: np.mean([forecasts[n][u] for n in names], axis=0)
                               for u in ids}
    scores = pd.DataFrame({c: [float(np.mean(np.abs(f[u] - truth[u]))) for u in ids]
                           for c, f in forecasts.items()}, index=pd.Index(ids, name=id_col))
    if per_series:
        choice = scores.idxmin(axis=1)
    else:
        choice = pd.Series(scores.mean().idxmin(), index=scores.index)
    if verbose:
        print(f"shoal: select: {choice.value_counts().to_dict()}")
    # The winners refitted on all of df; seasonal naive from all of df's rows.
    refits = {}
    for auto, name in zip(searched, names):
        if (choice == name).any() or (choice == ENSEMBLE).any():
            refits[name] = _refit(auto, df, freq, static_df, search_per_series, workers, cols)
    rows = []
    for u, g in df.groupby(id_col, sort=False):
        pick = choice[u]
        if pick == SEASONAL_NAIVE:
            y = seasonal_naive(g[target_col].to_numpy(float), h, m)
            ds = None
        else:
            parts = [refits[n] for n in (names if pick == ENSEMBLE else [pick])]
            own = [p[p[id_col] == u] for p in parts]
            y = np.mean([o[names[k] if pick == ENSEMBLE else pick].to_numpy(float)
                         for k, o in enumerate(own)], axis=0)
            ds = own[0][time_col].to_numpy()
        if ds is None:
            last = g[time_col].iloc[-1]
            ds = (last + int(freq) * np.arange(1, h + 1) if isinstance(freq, (int, np.integer))
                  else pd.date_range(last, periods=h + 1, freq=freq)[1:])
        rows.append(pd.DataFrame({id_col: u, time_col: ds, "Selection": y, "model": pick}))
    return Selection(scores.reset_index(), choice.rename("model").reset_index(),
                     pd.concat(rows, ignore_index=True), h, cols)
