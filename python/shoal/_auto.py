"""The Auto models' machinery (shoal.auto is the public module): BaseAuto, the search over one
model's settings, and one Auto class generated per registered model with a default search
space."""

from __future__ import annotations

import copy
import inspect
import json
import math
import os
import sys
import time
import zlib

import numpy as np
import pandas as pd

from . import _arguments, _core
from . import models as _models
from ._search_space import MockTrial, Space, constants, sampler, tune, with_input_sizes
from .losses import MAE

__all__ = ["tune", "BaseAuto"]


# ---- the search ------------------------------------------------------------------------------
class BaseAuto:
    """A hyper-parameter search over `cls_model`: neuralforecast's BaseAuto arguments. `cpus`:
    trials run at once (0 or None: every CPU this process may use). shoal's own: prune_factor
    (≥ 2) stops trials whose validation loss falls behind, by successive halving on the
    validation checks (Optuna's SuccessiveHalvingPruner rule; such trials are "pruned").
    journal (a file path): every finished trial is appended there; a search started again with
    the same journal, the same arguments and the same data takes the trials it holds from it
    and runs only the others (an interrupted search resumes; a larger num_samples extends it).
    A journal of another search or other data is refused: delete it to start afresh."""

    def __init__(self, cls_model, h, loss, valid_loss, config, search_alg=None, num_samples=10,
                 time_budget=None, refit_with_val=False, cpus=None, gpus=None, verbose=False,
                 alias=None, backend="optuna", callbacks=None, n_series=None,
                 prune_factor=None, journal=None):
        if backend == "ray":
            raise NotImplementedError(
                "backend='ray' needs Ray Tune, which shoal does not run: use backend='optuna' "
                "(pip install optuna) with the same config written with shoal.auto.tune, or a "
                "function of an Optuna trial")
        if backend != "optuna":
            raise ValueError(f"Unknown backend {backend}. The supported backend is 'optuna'.")
        if gpus:
            raise ValueError(f"gpus={gpus!r}: shoal trains on CPUs only")
        if callbacks:
            raise NotImplementedError("callbacks: shoal's trials run in C++ and call no Python "
                                      "callback; read model.results after the search")
        self.cls_model = cls_model
        self.h = _arguments.count(h, "h")
        self._n_series = n_series  # multivariate models: the model's n_series
        self.loss = loss
        self.valid_loss = valid_loss
        self.num_samples = _arguments.count(num_samples, "num_samples")
        if time_budget is not None:
            time_budget = _arguments.number(time_budget, "time_budget")
            if time_budget <= 0:
                raise ValueError(f"time_budget must be > 0 seconds, got {time_budget}")
        self.time_budget = time_budget
        self.refit_with_val = bool(refit_with_val)
        # Successive halving of the trials on their validation checks (Optuna's
        # SuccessiveHalvingPruner rule, reduction factor prune_factor); None: every trial runs.
        self.prune_factor = (None if prune_factor is None
                             else _arguments.count(prune_factor, "prune_factor", lo=2))
        self.cpus = (_arguments.thread_count(cpus or 0, "cpus")
                     or len(os.sched_getaffinity(0)))
        self.verbose = verbose
        self.journal = None if journal is None else os.fspath(journal)
        self.alias = alias
        self.backend = backend
        self.search_alg = search_alg
        if callable(config):
            base = config(MockTrial())
        elif isinstance(config, dict):
            config = with_input_sizes(config, self.h)
            base = config
        else:
            raise ValueError("config must be a dict of values and tune spaces, or a function "
                             "of an Optuna trial returning a dict")
        for key in ("h", "loss", "valid_loss"):
            if base.get(key) is not None:
                raise ValueError(f"Please use `{key}` init argument instead of "
                                 f"`config['{key}']`.")
        self.config = config
        fixed = constants(base) if isinstance(config, dict) else base
        # The inputs the NeuralForecast prepares before the search: the config's fixed lists.
        for kind in ("hist", "futr", "stat"):
            value = fixed.get(f"{kind}_exog_list")
            if isinstance(config, dict) and isinstance(config.get(f"{kind}_exog_list"), Space):
                raise ValueError(f"{kind}_exog_list must be a fixed list, not a search space")
            setattr(self, f"{kind}_exog_list", list(value or []))
        self.cat_exog_list = list(fixed.get("cat_exog_list") or [])
        self.model = None  # the best configuration's model (per series: the first part)
        self._parts = None  # per series: one model per best configuration, with its series
        self.best_config = None
        self.results = None
        self.study = None

    def __repr__(self):
        return self.alias or type(self).__name__

    # Once searched, the best model answers for the Auto model (its settings and weights).
    def __getattr__(self, name):
        model = self.__dict__.get("model")
        if model is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r} before fit")
        return getattr(model, name)

    @property
    def _weights(self):
        return self.model._weights if self.model is not None else None

    @_weights.setter
    def _weights(self, value):
        self.model._weights = value

    @property
    def _series_weights(self):
        return self.model._series_weights if self.model is not None else None

    @_series_weights.setter
    def _series_weights(self, value):
        self.model._series_weights = value

    @property
    def fitted(self):
        return self.model is not None and self.model.fitted

    def _saved_model(self):
        """What a save holds: the best configuration's model, under this model's name (a
        loaded forecaster's column stays e.g. AutoNHITS), as neuralforecast saves its Auto
        models."""
        if self.model is None:
            raise ValueError(f"{self!r} is not fitted: its search picks the model to save")
        if self._parts and len(self._parts) > 1:
            raise NotImplementedError(
                f"{self!r} holds {len(self._parts)} configurations (a search per series), which "
                "a saved forecaster cannot hold yet; save the parts' weights with "
                "save_weights, or fit the best configurations as models of their own")
        model = copy.copy(self.model)
        model.alias = repr(self)
        return model

    # ---- trials ------------------------------------------------------------------------------
    def _model_of(self, cfg):
        cfg = dict(cfg)
        for k in ("batch_size", "windows_batch_size", "max_steps", "input_size", "step_size",
                  "random_seed"):
            if isinstance(cfg.get(k), float) and float(cfg[k]).is_integer():
                cfg[k] = int(cfg[k])  # quniform draws floats; the models take integers
        if self._n_series is not None and "n_series" not in cfg:
            cfg["n_series"] = self._n_series
        return cfg, self.cls_model(h=self.h, loss=copy.deepcopy(self.loss),
                                   valid_loss=copy.deepcopy(self.valid_loss), **cfg)

    def _trial(self, group, handle, cfg, val_size, test_size):
        try:
            cfg, model = self._model_of(cfg)
            return {"group": group, "handle": handle, "config": cfg, "error": "",
                    "settings": model._settings(val_size, test_size)}
        except (ValueError, TypeError, NotImplementedError) as e:  # settings the model refuses
            return {"group": group, "handle": handle, "config": cfg, "settings": None,
                    "error": f"{type(e).__name__}: {e}"}

    def _search(self, data, groups, statics, val_size, test_size, pin, labels=None):
        """num_samples trials per group of series (one group of all series: a global search;
        one series each: a search per series) on `data`, the last val_size rows of each series
        held out for validation. Trials run side by side in the fleet, `cpus` at a time or one
        per group and round. Returns each group's best configuration (None where every trial
        failed) and keeps every trial in self.results."""
        # A series' search draws from a seed of its own id, so its trials do not depend on
        # which other series share the run (a Dask partition, a subset).
        seeds = [1] if labels is None else [1 + zlib.crc32(str(u).encode()) for u in labels]
        searches = [sampler(self.config, self.search_alg, seed) for seed in seeds]
        self.study = searches[0][2] if len(groups) == 1 else None
        rows, start, done = [], time.perf_counter(), 0
        trial_index = [0] * len(groups)
        names = ["all"] if labels is None else [str(u) for u in labels]
        # One pruner per search, shared by its trials from batch to batch.
        pruners = ([_core.SuccessiveHalving(1, self.prune_factor) for _ in groups]
                   if self.prune_factor else None)
        per_round = max(1, -(-self.cpus // len(groups)))
        while done < self.num_samples:
            if self.time_budget is not None and time.perf_counter() - start > self.time_budget:
                break
            k = min(per_round, self.num_samples - done)
            trials = [{**self._trial(g, *ask(), val_size, test_size),
                       "id": f"{names[g]} trial {trial_index[g] + j}"}
                      for g, (ask, _, _) in enumerate(searches) for j in range(k)]
            runnable = [t for t in trials if t["settings"] is not None]
            out = _core.fit_trials(data, [groups[t["group"]] for t in runnable],
                                   [t["settings"] for t in runnable], statics, self.cpus, pin, 0,
                                   False, [pruners[t["group"]] for t in runnable] if pruners
                                   else [], None, self.journal or "",
                                   [t["id"] for t in runnable] if self.journal else []
                                   ) if runnable else []
            for t, r in zip(runnable, out):
                t["result"] = r
            for t in trials:
                r = t.get("result")
                error, loss = t["error"] or (r["error"] if r else ""), None
                pruned = bool(r and r["pruned"]) and not error
                if pruned:
                    searches[t["group"]][1](t["handle"], None, pruned_at=r["val_losses"])
                elif not error:
                    last = r["val_losses"][-1] if r["val_losses"] else None
                    if last is None:
                        error = "no validation check ran (val_check_steps > max_steps)"
                    elif not math.isfinite(last):
                        error = f"validation loss {last}"
                    else:
                        loss = float(last)
                if not pruned:
                    searches[t["group"]][1](t["handle"], loss)
                trial_index[t["group"]] += 1
                rows.append({**({"unique_id": labels[t["group"]]} if labels else {}),
                             "trial": trial_index[t["group"]] - 1,
                             **{f"config/{c}": v for c, v in t["config"].items()},
                             "loss": (r["val_losses"][-1] if pruned
                                      else np.nan if loss is None else loss),
                             "train_loss": (r["train_losses"][-1] if r and r["train_losses"]
                                            else np.nan),
                             "steps": r["steps"] if r else 0,
                             "fit_s": r["fit_seconds"] if r else 0.0,
                             "status": "failed" if error else "pruned" if pruned else "ok",
                             "error": error,
                             "_group": t["group"], "_config": t["config"]})
            done += k
            if self.verbose:
                ok = [x["loss"] for x in rows if x["status"] == "ok"]
                print(f"shoal: {self!r}: {done} of {self.num_samples} trials"
                      f"{f' of each of {len(groups)} searches' if len(groups) > 1 else ''}, "
                      f"best validation loss {min(ok, default=np.nan):.6g}", file=sys.stderr)
        best = [None] * len(groups)
        for x in rows:
            g = x["_group"]
            if x["status"] == "ok" and (best[g] is None or x["loss"] < best[g]["loss"]):
                best[g] = x
        self.results = pd.DataFrame([{k: v for k, v in x.items() if not k.startswith("_")}
                                     for x in rows])
        return [None if b is None else dict(b["_config"]) for b in best], rows

    def _search_global(self, data, n_series, statics, val_size, test_size, pin):
        """The search over all series jointly; keeps the best configuration's model (unfitted:
        NeuralForecast fits it next) and returns the val_size of that fit."""
        best, rows = self._search(data, [list(range(n_series))], statics, val_size, test_size,
                                  pin)
        if best[0] is None:
            first = rows[0]["error"] if rows else "no trial ran within time_budget"
            raise ValueError(f"{self!r}: every trial failed; the first: {first}")
        self.best_config = best[0]
        _, self.model = self._model_of(best[0])
        self._parts = None
        return val_size if self.refit_with_val else 0

    def _search_per_series(self, data, ids, statics, val_size, test_size, pin):
        """A search per series, then each series' best configuration refitted on it (with
        val_size rows held out when refit_with_val). Series of one configuration share one
        model object holding their weights (self._parts), which predict runs together."""
        groups = [[i] for i in range(len(ids))]
        best, rows = self._search(data, groups, statics, val_size, test_size, pin,
                                  labels=list(ids))
        failed = [i for i, b in enumerate(best) if b is None]
        if failed:
            first = next(x["error"] for x in rows if x["_group"] == failed[0])
            raise ValueError(f"{self!r}: every trial of {len(failed)} of {len(ids)} series "
                             f"failed; unique_id {ids[failed[0]]!r}: {first}")
        refit = val_size if self.refit_with_val else 0
        models = [self._model_of(b)[1] for b in best]
        out = _core.fit_trials(data, groups, [m._settings(refit, test_size) for m in models],
                               statics, self.cpus, pin, 0, True)
        parts = {}
        for i, (cfg, m, r) in enumerate(zip(best, models, out)):
            if r["error"]:
                raise ValueError(f"{self!r}: the refit of unique_id {ids[i]!r} failed: "
                                 f"{r['error']}")
            key = json.dumps(cfg, sort_keys=True, default=repr)
            if key not in parts:
                m._series_weights, m._weights = {}, None
                parts[key] = m
            parts[key]._series_weights[ids[i]] = r["weights"]
        self._parts = list(parts.values())
        self.best_config = {u: b for u, b in zip(ids, best)}
        self.model = self._parts[0]
        return {"wall_s": float(sum(r["fit_seconds"] for r in out)),
                "steps": [int(r["steps"]) for r in out]}


# ---- one Auto class per model, with neuralforecast's default search spaces ------------------
def _space_of(model, h):
    """The registry model's default search space for horizon h (one table, in C++:
    train/search_space.cpp) as a config dict of tune spaces."""
    build = {"choice": lambda c, lo, hi, q: tune.choice(c),
             "randint": lambda c, lo, hi, q: tune.randint(lo, hi),
             "uniform": lambda c, lo, hi, q: tune.uniform(lo, hi),
             "loguniform": lambda c, lo, hi, q: tune.loguniform(lo, hi),
             "quniform": lambda c, lo, hi, q: tune.quniform(lo, hi, q)}
    return {key: build[kind](json.loads(choices), lo, hi, q)
            for key, kind, choices, lo, hi, q in _core.default_search_space(model, h)}


def _auto_class(cls_model):
    name = cls_model.__name__
    multivariate = "n_series" in inspect.signature(cls_model).parameters

    @classmethod
    def get_default_config(cls, h, backend="optuna", n_series=None):
        """neuralforecast's default search space for this model, for horizon h."""
        config = _space_of(cls_model._model, h)
        if multivariate:
            config["n_series"] = n_series
        if backend == "optuna":
            return lambda trial: {k: v.suggest(trial, k) if isinstance(v, Space) else v
                                  for k, v in config.items()}
        return config

    def __init__(self, h, *args, loss=None, valid_loss=None, config=None, search_alg=None,
                 num_samples=10, time_budget=None, refit_with_val=False, cpus=None, gpus=None,
                 verbose=False, alias=None, backend="optuna", callbacks=None, prune_factor=None,
                 journal=None):
        n_series = None
        if multivariate:
            if len(args) != 1:
                raise TypeError(f"Auto{name}(h, n_series, ...) needs n_series")
            n_series = _arguments.count(args[0], "n_series")
        elif args:
            raise TypeError(f"Auto{name}() takes h and keyword arguments")
        if config is None:
            config = _space_of(cls_model._model, _arguments.count(h, "h"))
        BaseAuto.__init__(self, cls_model, h, MAE() if loss is None else loss, valid_loss,
                          config, search_alg, num_samples, time_budget, refit_with_val, cpus,
                          gpus, verbose, alias, backend, callbacks, n_series=n_series,
                          prune_factor=prune_factor, journal=journal)

    # neuralforecast's class attribute: the space with input_size as multiples of h.
    default = _space_of(cls_model._model, 1)
    default["input_size_multiplier"] = default.pop("input_size").categories
    default.pop("step_size", None)  # the recurrent models' spaces have none
    doc = (f"neuralforecast.auto.Auto{name}: a search over {name}'s settings "
           f"({'h, n_series' if multivariate else 'h'}, then neuralforecast's Auto arguments).")
    return type(f"Auto{name}", (BaseAuto,), {
        "__init__": __init__, "__doc__": doc, "get_default_config": get_default_config,
        "default_config": default, "cls_model": cls_model, "__module__": __name__})


# Every neural model of the registry that has a default search space.
_AUTO_MODELS = [c for c in vars(_models).values()
                if isinstance(c, type) and issubclass(c, _models._ForecastModel)
                and c._nf_name and _core.default_search_space(c._model, 1)]
for _model in _AUTO_MODELS:
    globals()[f"Auto{_model.__name__}"] = _auto_class(_model)
    __all__.append(f"Auto{_model.__name__}")
del _model
