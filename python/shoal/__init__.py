"""shoal: small neural networks trained at hardware speed on CPUs.

Forecasting with neuralforecast's API (NeuralForecast and the models of shoal.models: NHITS,
TSMixerx, LSTM, iTransformer, ...), one model per series on every core
(NeuralForecast(..., per_series=True)) or across a Dask cluster (shoal.dask.fit_many), and NCF
recommenders (NCF: any ids, recommend, save/load; with split_leave_last_out /
split_random_leave_one_out / split_chrono and full-ranking metrics); shoal.profile() profiles
the fits run inside it; shoal.auto's AutoNHITS, AutoTSMixerx, ... (one per model) search a
model's hyper-parameters with their trials side by side on every core. See docs/python.md and
docs/ncf.md.
"""

from . import auto
from .core import NeuralForecast
from .losses import MAE, MAPE, MASE, MSE, RMSE, SMAPE, HuberLoss, QuantileLoss, loss_settings
# One class per registered model (models.__all__) and its Auto class (auto's Auto* names).
from .models import *  # noqa: F401,F403
from .models import __all__ as _model_names
_auto_classes = [n for n in auto.__all__ if n.startswith("Auto")]
globals().update({n: getattr(auto, n) for n in _auto_classes})
from ._savedir import ModelFileError
from .ncf import NCF
from .recsys import (IdMap, metrics, split_chrono, split_leave_last_out,
                     split_random_leave_one_out)
from .profiling import profile

__version__ = "0.1.0"
__all__ = ["NeuralForecast", *_model_names, "NCF",
           "MAE", "MSE", "RMSE", "MAPE", "SMAPE", "MASE", "HuberLoss", "QuantileLoss",
           "loss_settings",
           "profile", "metrics", "split_leave_last_out", "split_random_leave_one_out",
           "split_chrono", "IdMap", "ModelFileError", "auto",
           *_auto_classes]
