"""shoal: small neural networks trained at hardware speed on CPUs.

Forecasting with neuralforecast's API (TSMixer, TSMixerx, NLinear, DLinear, MLP,
MLPMultivariate, NHITS, NBEATS, NBEATSx, TiDE, NeuralForecast), one model per series on every
core (NeuralForecast(..., per_series=True)) or across a Dask cluster
(shoal.dask.fit_many), and NCF recommenders (NCF: any ids, recommend, save/load; with
split_leave_last_out / split_random_leave_one_out / split_chrono and full-ranking metrics);
shoal.profile() profiles the fits run inside it. See docs/python.md and docs/ncf.md.
"""

from .core import NeuralForecast
from .losses import MAE, MAPE, MASE, MSE, RMSE, SMAPE, HuberLoss, QuantileLoss, loss_settings
from .models import (MLP, NBEATS, NHITS, DLinear, MLPMultivariate, NBEATSx, NLinear, TiDE,
                     TSMixer, TSMixerx)
from ._savedir import ModelFileError
from .ncf import NCF
from .recsys import (IdMap, metrics, split_chrono, split_leave_last_out,
                     split_random_leave_one_out)
from .profiling import profile

__version__ = "0.1.0"
__all__ = ["NeuralForecast", "TSMixer", "TSMixerx", "NLinear", "DLinear", "MLP",
           "MLPMultivariate", "NHITS", "NBEATS", "NBEATSx", "TiDE", "NCF",
           "MAE", "MSE", "RMSE", "MAPE", "SMAPE", "MASE", "HuberLoss", "QuantileLoss",
           "loss_settings",
           "profile", "metrics", "split_leave_last_out", "split_random_leave_one_out",
           "split_chrono", "IdMap", "ModelFileError"]
