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

from ._auto import *  # noqa: F401,F403  (BaseAuto, tune and one Auto class per model)
from ._auto import __all__ as _auto_names
# Model choice by validation among Auto models and seasonal naive.
from ._selection import Selection, select

__all__ = [*_auto_names, "select", "Selection"]
