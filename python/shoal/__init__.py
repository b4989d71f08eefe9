"""shoal: small neural networks trained at hardware speed on CPUs.

Forecasting with neuralforecast's API (TSMixer, TSMixerx, NLinear, DLinear, MLP,
MLPMultivariate, NHITS, NBEATS, NBEATSx, TiDE, RNN, GRU, LSTM, TCN, DilatedRNN,
iTransformer, BiTCN, PatchTST, NeuralForecast), one model per series on every core (NeuralForecast(..., per_series=True)) or
across a Dask cluster
(shoal.dask.fit_many), and NCF recommenders (NCF: any ids, recommend, save/load; with
split_leave_last_out / split_random_leave_one_out / split_chrono and full-ranking metrics);
shoal.profile() profiles the fits run inside it; shoal.auto's AutoNHITS, AutoTSMixerx, ...
search a model's hyper-parameters with their trials side by side on every core. See
docs/python.md and docs/ncf.md.
"""

from . import auto
from .auto import (AutoBiTCN, AutoDilatedRNN, AutoDLinear, AutoGRU, AutoiTransformer, AutoLSTM,
                   AutoMLP, AutoMLPMultivariate, AutoNBEATS, AutoNBEATSx, AutoNHITS,
                   AutoNLinear, AutoPatchTST, AutoRNN, AutoTCN, AutoTiDE, AutoTSMixer,
                   AutoTSMixerx)
from .core import NeuralForecast
from .losses import MAE, MAPE, MASE, MSE, RMSE, SMAPE, HuberLoss, QuantileLoss, loss_settings
from .models import (GRU, LSTM, MLP, NBEATS, NHITS, RNN, TCN, BiTCN, DilatedRNN, DLinear,
                     MLPMultivariate, NBEATSx, NLinear, PatchTST, TiDE, TSMixer, TSMixerx,
                     iTransformer)
from ._savedir import ModelFileError
from .ncf import NCF
from .recsys import (IdMap, metrics, split_chrono, split_leave_last_out,
                     split_random_leave_one_out)
from .profiling import profile

__version__ = "0.1.0"
__all__ = ["NeuralForecast", "TSMixer", "TSMixerx", "NLinear", "DLinear", "MLP",
           "MLPMultivariate", "NHITS", "NBEATS", "NBEATSx", "TiDE", "RNN", "GRU",
           "LSTM", "TCN", "DilatedRNN", "iTransformer", "BiTCN", "PatchTST", "NCF",
           "MAE", "MSE", "RMSE", "MAPE", "SMAPE", "MASE", "HuberLoss", "QuantileLoss",
           "loss_settings",
           "profile", "metrics", "split_leave_last_out", "split_random_leave_one_out",
           "split_chrono", "IdMap", "ModelFileError", "auto", "AutoDLinear", "AutoMLP",
           "AutoMLPMultivariate", "AutoNBEATS", "AutoNBEATSx", "AutoNHITS", "AutoNLinear",
           "AutoTiDE", "AutoTSMixer", "AutoTSMixerx", "AutoRNN", "AutoGRU", "AutoLSTM",
           "AutoTCN", "AutoDilatedRNN", "AutoiTransformer", "AutoBiTCN", "AutoPatchTST"]
