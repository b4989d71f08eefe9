"""The golden scripts' list of models (bench/peers/golden_models.py) is the registry's."""

import importlib.util
import pathlib

from shoal import _core

PEERS = pathlib.Path(__file__).resolve().parents[2] / "bench" / "peers"


def test_golden_scripts_cover_every_registered_model():
    spec = importlib.util.spec_from_file_location("golden_models", PEERS / "golden_models.py")
    golden_models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden_models)
    neural = {name for name, _, neural in _core.forecast_models() if neural}
    assert set(golden_models.MODELS) == neural
    for model, script in golden_models.SCRIPTS.items():
        assert (PEERS / script).is_file(), f"{model}: no script {script}"
