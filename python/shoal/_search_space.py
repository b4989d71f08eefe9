"""Search spaces for shoal.auto, written as with Ray Tune (`tune.choice`, `tune.randint`,
`tune.uniform`, `tune.loguniform`, `tune.quniform`), and the samplers that draw from them: an
Optuna study (TPE unless another Optuna sampler is given) or, without Optuna, shoal's own random
draws."""

from __future__ import annotations

import copy
import math

import numpy as np

class Space:
    def sample(self, rng):
        raise NotImplementedError

    def suggest(self, trial, name):
        raise NotImplementedError


class _Choice(Space):
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


class _RandInt(Space):
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


class _Uniform(Space):
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


def constants(config):
    return {k: v for k, v in config.items() if not isinstance(v, Space)}


def with_input_sizes(config, h):
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


class MockTrial:
    """The constants of an Optuna config function: every suggestion is None."""

    def __getattr__(self, name):
        if name.startswith("suggest"):
            return lambda *a, **k: None
        raise AttributeError(name)


def sampler(config, search_alg, seed=1):
    """(ask, tell, study) for one search drawing from `seed` (a search per series seeds each
    series' own sequence): ask() gives (handle, config dict); tell(handle, loss, pruned_at) with
    loss None for a failed trial and pruned_at the validation losses of a pruned one; study is
    the Optuna study (None without Optuna)."""
    try:
        import optuna
    except ImportError:
        optuna = None
    if optuna is None:
        if callable(config):
            raise ImportError("a config function takes an Optuna trial: pip install optuna")
        rng = np.random.default_rng(seed)
        return (lambda: (None, {k: v.sample(rng) if isinstance(v, Space) else v
                                for k, v in config.items()}),
                lambda handle, loss, pruned_at=None: None, None)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Each search its own sampler: a per-series search's studies share no state.
    chosen = (copy.deepcopy(search_alg) if isinstance(search_alg, optuna.samplers.BaseSampler)
              else optuna.samplers.TPESampler(seed=seed))
    study = optuna.create_study(direction="minimize", sampler=chosen)
    to_config = config if callable(config) else (
        lambda trial: {k: v.suggest(trial, k) if isinstance(v, Space) else v
                       for k, v in config.items()})

    def ask():
        trial = study.ask()
        return trial, {k: v for k, v in to_config(trial).items()
                       if k not in ("h", "loss", "valid_loss")}

    def tell(trial, loss, pruned_at=None):
        if pruned_at is not None:  # the validation losses up to where it stopped
            for k, v in enumerate(pruned_at):
                trial.report(v, k + 1)
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        elif loss is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, loss)

    return ask, tell, study
