"""neuralforecast's Auto models: a hyper-parameter search over one model's settings, its best
configuration refitted, with neuralforecast's arguments and default search spaces.

    from shoal.auto import AutoNHITS, tune
    nf = shoal.NeuralForecast([AutoNHITS(h=12, num_samples=20)], freq="ME")
    nf.fit(df, val_size=12)              # the search, then the best config's fit
    nf.models[0].results                 # one row per trial

A search is many independent small fits: shoal runs its trials side by side through the fleet,
one per core (`cpus`), each on one thread, pinned and under the memory budget, and asks the
search algorithm for the next batch when a batch is done. A trial that fails (a diverged loss,
settings the model refuses) is recorded as failed and the search goes on.

Search spaces are written as with Ray Tune (`tune.choice`, `tune.randint`, `tune.uniform`,
`tune.loguniform`, `tune.quniform`, from this module), or as a function of an Optuna trial.
`backend="optuna"` (the default here: neuralforecast's default, Ray, is not available in
shoal) uses the Optuna package, with TPE unless `search_alg` is another Optuna sampler; without
Optuna installed, a config dict is sampled at random by shoal itself.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import time

import numpy as np
import pandas as pd

from . import _arguments, _core
from . import models as _models
from .losses import MAE

__all__ = ["tune", "BaseAuto"]


# ---- search spaces (Ray Tune's names) --------------------------------------------------------
class _Space:
    def sample(self, rng):
        raise NotImplementedError

    def suggest(self, trial, name):
        raise NotImplementedError


class _Choice(_Space):
    def __init__(self, categories):
        self.categories = list(categories)
        if not self.categories:
            raise ValueError("tune.choice needs at least one category")

    def sample(self, rng):
        return copy.deepcopy(self.categories[int(rng.integers(len(self.categories)))])

    def suggest(self, trial, name):
        plain = all(c is None or isinstance(c, (bool, int, float, str)) for c in self.categories)
        if plain:
            return trial.suggest_categorical(name, self.categories)
        # Optuna's categories are plain values: lists (NHITS's pool sizes) go by their index.
        k = trial.suggest_categorical(f"{name}_index", list(range(len(self.categories))))
        return copy.deepcopy(self.categories[k])


class _RandInt(_Space):
    """Ray's randint: an integer in [lower, upper). neuralforecast's Optuna translation passes
    the same bounds to suggest_int, whose upper bound is inclusive; shoal does the same."""

    def __init__(self, lower, upper):
        self.lower, self.upper = int(lower), int(upper)
        if self.upper <= self.lower:
            raise ValueError(f"tune.randint needs lower < upper, got {lower}, {upper}")

    def sample(self, rng):
        return int(rng.integers(self.lower, self.upper))

    def suggest(self, trial, name):
        return trial.suggest_int(name, self.lower, self.upper)


class _Uniform(_Space):
    def __init__(self, lower, upper, log=False, q=None):
        self.lower, self.upper, self.log, self.q = float(lower), float(upper), log, q
        if not self.lower < self.upper or (log and self.lower <= 0):
            raise ValueError(f"a {'log' if log else ''}uniform space needs 0 < lower < upper "
                             f"(log) or lower < upper, got {lower}, {upper}")

    def sample(self, rng):
        if self.log:
            v = math.exp(rng.uniform(math.log(self.lower), math.log(self.upper)))
        else:
            v = rng.uniform(self.lower, self.upper)
        if self.q is not None:
            v = round(v / self.q) * self.q
        return v

    def suggest(self, trial, name):
        if self.q is not None:
            return trial.suggest_float(name, self.lower, self.upper, step=self.q)
        return trial.suggest_float(name, self.lower, self.upper, log=self.log)


class tune:
    """Ray Tune's search-space constructors, for configs written for neuralforecast's Ray
    backend: only the import changes."""

    @staticmethod
    def choice(categories):
        return _Choice(categories)

    @staticmethod
    def randint(lower, upper):
        return _RandInt(lower, upper)

    @staticmethod
    def uniform(lower, upper):
        return _Uniform(lower, upper)

    @staticmethod
    def loguniform(lower, upper):
        return _Uniform(lower, upper, log=True)

    @staticmethod
    def quniform(lower, upper, q):
        return _Uniform(lower, upper, q=q)


def _constants(config):
    return {k: v for k, v in config.items() if not isinstance(v, _Space)}


def _with_input_sizes(config, h):
    """neuralforecast's `input_size_multiplier` entries as `input_size` choices of multiples of
    h, so configs built on its default_config work."""
    config = dict(config)
    for key, size in (("input_size_multiplier", "input_size"),
                      ("inference_input_size_multiplier", "inference_input_size")):
        if key not in config:
            continue
        mult = config.pop(key)
        if size not in config:
            config[size] = (tune.choice([h * x for x in mult]) if isinstance(mult, (list, tuple))
                            else h * mult)
    return config


class _MockTrial:
    """The constants of an Optuna config function: every suggestion is None."""

    def __getattr__(self, name):
        if name.startswith("suggest"):
            return lambda *a, **k: None
        raise AttributeError(name)


# ---- the search ------------------------------------------------------------------------------
class BaseAuto:
    """A hyper-parameter search over `cls_model`: neuralforecast's BaseAuto arguments. `cpus`:
    trials run at once (0 or None: every CPU this process may use)."""

    def __init__(self, cls_model, h, loss, valid_loss, config, search_alg=None, num_samples=10,
                 time_budget=None, refit_with_val=False, cpus=None, gpus=None, verbose=False,
                 alias=None, backend="optuna", callbacks=None, n_series=None):
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
        self.cpus = (_arguments.thread_count(cpus or 0, "cpus")
                     or len(os.sched_getaffinity(0)))
        self.verbose = verbose
        self.alias = alias
        self.backend = backend
        self.search_alg = search_alg
        if callable(config):
            base = config(_MockTrial())
        elif isinstance(config, dict):
            config = _with_input_sizes(config, self.h)
            base = config
        else:
            raise ValueError("config must be a dict of values and tune spaces, or a function "
                             "of an Optuna trial returning a dict")
        for key in ("h", "loss", "valid_loss"):
            if base.get(key) is not None:
                raise ValueError(f"Please use `{key}` init argument instead of "
                                 f"`config['{key}']`.")
        self.config = config
        fixed = _constants(base) if isinstance(config, dict) else base
        # The inputs the NeuralForecast prepares before the search: the config's fixed lists.
        for kind in ("hist", "futr", "stat"):
            value = fixed.get(f"{kind}_exog_list")
            if isinstance(config, dict) and isinstance(config.get(f"{kind}_exog_list"), _Space):
                raise ValueError(f"{kind}_exog_list must be a fixed list, not a search space")
            setattr(self, f"{kind}_exog_list", list(value or []))
        self.cat_exog_list = list(fixed.get("cat_exog_list") or [])
        self.model = None
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

    def _sampler(self):
        """(ask, tell): ask() gives (handle, config); tell(handle, loss or None)."""
        try:
            import optuna
        except ImportError:
            optuna = None
        if optuna is None:
            if callable(self.config):
                raise ImportError("a config function takes an Optuna trial: pip install optuna")
            rng = np.random.default_rng(1)
            cfg = self.config
            return (lambda: (None, {k: v.sample(rng) if isinstance(v, _Space) else v
                                    for k, v in cfg.items()}),
                    lambda handle, loss: None)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = (self.search_alg if isinstance(self.search_alg, optuna.samplers.BaseSampler)
                   else optuna.samplers.TPESampler(seed=1))
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        cfg = self.config
        to_config = cfg if callable(cfg) else (
            lambda trial: {k: v.suggest(trial, k) if isinstance(v, _Space) else v
                           for k, v in cfg.items()})

        def ask():
            trial = self.study.ask()
            return trial, {k: v for k, v in to_config(trial).items()
                           if k not in ("h", "loss", "valid_loss")}

        def tell(trial, loss):
            if loss is None:
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                self.study.tell(trial, loss)

        return ask, tell

    def _search(self, data, n_series, statics, val_size, test_size, workers_pin):
        """Runs the trials on `data` (the NeuralForecast's prepared series) with val_size rows of
        each series held out, and keeps the best configuration (self.model, unfitted)."""
        ask, tell = self._sampler()
        rows, start = [], time.perf_counter()
        done = 0
        while done < self.num_samples:
            if self.time_budget is not None and time.perf_counter() - start > self.time_budget:
                break
            batch = min(self.cpus, self.num_samples - done)
            handles, cfgs, settings, slots = [], [], [], []
            for _ in range(batch):
                handle, cfg = ask()
                handles.append(handle)
                try:
                    cfg, model = self._model_of(cfg)
                    settings.append(model._settings(val_size, test_size))
                    slots.append(len(cfgs))
                    cfgs.append((cfg, None))
                except (ValueError, TypeError, NotImplementedError) as e:
                    cfgs.append((cfg, f"{type(e).__name__}: {e}"))
            out = _core.fit_trials(data, list(range(n_series)), settings, statics, self.cpus,
                                   workers_pin, 0) if settings else []
            results = [None] * len(cfgs)
            for slot, r in zip(slots, out):
                results[slot] = r
            for k, ((cfg, refused), r) in enumerate(zip(cfgs, results)):
                error = refused or (r["error"] if r else "")
                loss = None
                if not error:
                    if not r["val_losses"]:
                        error = "no validation check ran (val_check_steps > max_steps)"
                    elif not math.isfinite(r["val_losses"][-1]):
                        error = f"validation loss {r['val_losses'][-1]}"
                    else:
                        loss = float(r["val_losses"][-1])
                tell(handles[k], loss)
                rows.append({"trial": done + k, **{f"config/{c}": v for c, v in cfg.items()},
                             "loss": loss if loss is not None else np.nan,
                             "train_loss": (r["train_losses"][-1] if r and r["train_losses"]
                                            else np.nan),
                             "steps": r["steps"] if r else 0,
                             "fit_s": r["fit_seconds"] if r else 0.0,
                             "status": "failed" if error else "ok", "error": error,
                             "_config": cfg})
            done += len(cfgs)
            if self.verbose:
                best = min((x["loss"] for x in rows if x["status"] == "ok"), default=np.nan)
                print(f"shoal: {self!r}: {done} of {self.num_samples} trials, best validation "
                      f"loss {best:.6g}", file=sys.stderr)
        ok = [x for x in rows if x["status"] == "ok"]
        if not ok:
            first = rows[0]["error"] if rows else "no trial ran within time_budget"
            raise ValueError(f"{self!r}: every trial failed; the first: {first}")
        best = min(ok, key=lambda x: x["loss"])
        _, self.model = self._model_of(best["_config"])
        self.results = pd.DataFrame([{k: v for k, v in x.items() if k != "_config"}
                                     for x in rows])
        self.best_config = dict(best["_config"])
        return val_size if self.refit_with_val else 0


# ---- one Auto class per model, with neuralforecast's default search spaces ------------------
_COMMON = {
    "learning_rate": tune.loguniform(1e-4, 1e-1),
    "scaler_type": tune.choice([None, "robust", "standard"]),
    "batch_size": tune.choice([32, 64, 128, 256]),
    "windows_batch_size": tune.choice([128, 256, 512, 1024]),
    "random_seed": tune.randint(1, 20),
}
_STEPS_Q = tune.quniform(500, 1500, 100)
_MIXER = {
    "n_block": tune.choice([1, 2, 4, 6, 8]),
    "learning_rate": tune.loguniform(1e-4, 1e-2),
    "ff_dim": tune.choice([32, 64, 128]),
    "scaler_type": tune.choice(["identity", "robust", "standard"]),
    "max_steps": tune.choice([500, 1000, 2000]),
    "batch_size": tune.choice([32, 64, 128, 256]),
    "dropout": tune.uniform(0.0, 0.99),
    "random_seed": tune.randint(1, 20),
}
# {model: (input_size multipliers, search space)}: neuralforecast 3.3's auto.py, range for range.
_DEFAULT_CONFIGS = {
    "MLP": ([1, 2, 3, 4, 5], {"hidden_size": tune.choice([256, 512, 1024]),
                              "num_layers": tune.randint(2, 6), **_COMMON,
                              "max_steps": tune.choice([500, 1000])}),
    "NBEATS": ([1, 2, 3, 4, 5], {**_COMMON, "max_steps": tune.choice([500, 1000])}),
    "NBEATSx": ([1, 2, 3, 4, 5], {**_COMMON, "max_steps": tune.choice([500, 1000])}),
    "NHITS": ([1, 2, 3, 4, 5], {
        "n_pool_kernel_size": tune.choice([[2, 2, 1], [1, 1, 1], [2, 2, 2], [4, 4, 4],
                                           [8, 4, 1], [16, 8, 1]]),
        "n_freq_downsample": tune.choice([[168, 24, 1], [24, 12, 1], [180, 60, 1], [60, 8, 1],
                                          [40, 20, 1], [1, 1, 1]]),
        **_COMMON, "max_steps": _STEPS_Q}),
    "DLinear": ([1, 2, 3, 4, 5], {"moving_avg_window": tune.choice([11, 25, 51]), **_COMMON,
                                  "max_steps": _STEPS_Q}),
    "NLinear": ([1, 2, 3, 4, 5], {**_COMMON, "max_steps": _STEPS_Q}),
    "TiDE": ([1, 2, 3, 4, 5], {
        "hidden_size": tune.choice([256, 512, 1024]),
        "decoder_output_dim": tune.choice([8, 16, 32]),
        "temporal_decoder_dim": tune.choice([32, 64, 128]),
        "num_encoder_layers": tune.choice([1, 2, 3]),
        "num_decoder_layers": tune.choice([1, 2, 3]),
        "temporal_width": tune.choice([4, 8, 16]),
        "dropout": tune.choice([0.0, 0.1, 0.2, 0.3, 0.5]),
        "layernorm": tune.choice([True, False]),
        **_COMMON, "learning_rate": tune.loguniform(1e-5, 1e-2), "max_steps": _STEPS_Q}),
    "TSMixer": ([1, 2, 3, 4], dict(_MIXER)),
    "TSMixerx": ([1, 2, 3, 4], dict(_MIXER)),
    "MLPMultivariate": ([1, 2, 3, 4, 5], {
        "hidden_size": tune.choice([256, 512, 1024]), "num_layers": tune.randint(2, 6),
        **{k: v for k, v in _COMMON.items() if k != "windows_batch_size"},
        "max_steps": tune.choice([500, 1000])}),
}
_MULTIVARIATE = {"TSMixer", "TSMixerx", "MLPMultivariate"}


def _auto_class(name):
    cls_model = getattr(_models, name)
    multipliers, space = _DEFAULT_CONFIGS[name]
    multivariate = name in _MULTIVARIATE

    @classmethod
    def get_default_config(cls, h, backend="optuna", n_series=None):
        """neuralforecast's default search space for this model, for horizon h."""
        config = {"input_size": tune.choice([h * x for x in multipliers]),
                  "step_size": tune.choice([1, h]), **space}
        if multivariate:
            config["n_series"] = n_series
        if backend == "optuna":
            return lambda trial: {k: v.suggest(trial, k) if isinstance(v, _Space) else v
                                  for k, v in config.items()}
        return config

    def __init__(self, h, *args, loss=None, valid_loss=None, config=None, search_alg=None,
                 num_samples=10, time_budget=None, refit_with_val=False, cpus=None, gpus=None,
                 verbose=False, alias=None, backend="optuna", callbacks=None):
        n_series = None
        if multivariate:
            if len(args) != 1:
                raise TypeError(f"{name}: Auto{name}(h, n_series, ...) needs n_series")
            n_series = _arguments.count(args[0], "n_series")
        elif args:
            raise TypeError(f"Auto{name}() takes h and keyword arguments")
        if config is None:
            config = {"input_size": tune.choice([h * x for x in multipliers]),
                      "step_size": tune.choice([1, h]), **space}
        BaseAuto.__init__(self, cls_model, h, MAE() if loss is None else loss, valid_loss,
                          config, search_alg, num_samples, time_budget, refit_with_val, cpus,
                          gpus, verbose, alias, backend, callbacks, n_series=n_series)

    doc = (f"neuralforecast.auto.Auto{name}: a search over {name}'s settings "
           f"({'h, n_series' if multivariate else 'h'}, then neuralforecast's Auto arguments).")
    return type(f"Auto{name}", (BaseAuto,), {
        "__init__": __init__, "__doc__": doc, "get_default_config": get_default_config,
        "default_config": {"input_size_multiplier": multipliers, "h": None, **space},
        "__module__": __name__})


for _name in _DEFAULT_CONFIGS:
    globals()[f"Auto{_name}"] = _auto_class(_name)
    __all__.append(f"Auto{_name}")
del _name
