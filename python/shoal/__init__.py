"""shoal: small neural networks trained at hardware speed on CPUs.

Forecasting with neuralforecast's API (TSMixer, TSMixerx, NLinear, NeuralForecast), one model per series
on every core (NeuralForecast(..., per_series=True)) or across a Dask cluster
(shoal.dask.fit_many), and NCF recommenders (NCF); shoal.profile() profiles the fits run inside it. See
docs/python.md.
"""

from .core import NeuralForecast
from .losses import MAE, MSE, HuberLoss
from .models import NLinear, TSMixer, TSMixerx
from .ncf import NCF
from .profiling import profile

__version__ = "0.1.0"
__all__ = ["NeuralForecast", "TSMixer", "TSMixerx", "NLinear", "NCF", "MAE", "MSE", "HuberLoss", "profile"]
