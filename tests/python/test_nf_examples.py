"""neuralforecast's documented model examples (examples/python/neuralforecast) run on shoal, on
20 steps: each forecasts the held-out year of both airlines in the columns neuralforecast
names (point losses, MQLoss, DistributionLoss with Normal, StudentT and Poisson, GMM)."""

import importlib.util
import pathlib

import numpy as np
import pytest

import shoal

RUNNER = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "neuralforecast" / \
    "run.py"
_spec = importlib.util.spec_from_file_location("nf_examples", RUNNER)
examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(examples)


@pytest.mark.parametrize("name", examples.EXAMPLES)
def test_example_runs(name):
    namespace, report = examples.run(name, max_steps=20)
    fc = namespace["forecasts"]
    forecaster = next(v for v in namespace.values() if isinstance(v, shoal.NeuralForecast))
    model = forecaster.models[0]
    cols = [c for c in fc.columns if c.startswith(str(model))]
    assert cols, (name, list(fc.columns))
    assert len(fc) == 24  # 12 months of two airlines
    assert np.isfinite(fc[cols].to_numpy(np.float64)).all()
    assert f"MAE {cols[0]}" in report
