"""neuralforecast's single-output losses through shoal: every loss trains and changes the fit,
loss_settings gives the job settings of shoal's and neuralforecast's loss objects, valid_loss
reaches the job, multi-output losses are refused by name, and a high quantile forecasts above a
low one on a real series."""

import gzip

import numpy as np
import pandas as pd
import pytest

import shoal
from shoal import losses
from conftest import DATA

LOSSES = [shoal.MSE(), shoal.RMSE(), shoal.MAPE(), shoal.SMAPE(), shoal.MASE(seasonality=12),
          shoal.HuberLoss(delta=0.5), shoal.QuantileLoss(q=0.8),
          shoal.MAE(horizon_weight=[1, 2, 3, 4, 5, 6])]


def forecast(panel, loss, valid_loss=None, model=shoal.NLinear, val_size=0, **kw):
    m = model(h=6, input_size=24, max_steps=30, learning_rate=1e-2, loss=loss,
              valid_loss=valid_loss, **kw)
    nf = shoal.NeuralForecast([m], freq="ME")
    nf.fit(panel, val_size=val_size)
    return nf.predict()[type(m).__name__].to_numpy()


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_each_loss_trains_and_differs_from_mae(panel, loss):
    base = forecast(panel, shoal.MAE())
    out = forecast(panel, loss)
    assert np.isfinite(out).all()
    assert not np.allclose(out, base), repr(loss)


def test_multivariate_and_valid_loss(panel):
    kw = dict(model=shoal.TSMixerx, n_series=3)
    out = forecast(panel, shoal.QuantileLoss(0.3, horizon_weight=[1, 1, 1, 2, 2, 2]), **kw)
    assert np.isfinite(out).all()
    # valid_loss scores validation only: without early stopping the fit is the same.
    a = forecast(panel, shoal.MAE(), val_size=6, **kw)
    b = forecast(panel, shoal.MAE(), valid_loss=shoal.MASE(seasonality=12), val_size=6, **kw)
    np.testing.assert_array_equal(a, b)


def test_loss_settings():
    s = losses.loss_settings
    assert s(shoal.MAE()) == {"loss": "mae"}
    assert s("mse") == {"loss": "mse"}
    assert s(shoal.RMSE(horizon_weight=np.array([1.0, 2.0]))) == \
        {"loss": "rmse", "horizon_weight": [1.0, 2.0]}
    assert s(shoal.HuberLoss(0.5), prefix="valid_") == \
        {"valid_loss": "huber", "valid_huber_delta": 0.5}
    assert s(shoal.QuantileLoss(q=0.9)) == {"loss": "quantile", "quantile": 0.9}
    assert s(shoal.MASE(seasonality=7, horizon_weight=[1, 1, 2])) == \
        {"loss": "mase", "loss_seasonality": 7, "horizon_weight": [1.0, 1.0, 2.0]}
    assert s(shoal.MAPE()) == {"loss": "mape"} and s(shoal.SMAPE()) == {"loss": "smape"}
    m = shoal.NLinear(h=3, input_size=6, loss=shoal.QuantileLoss(0.2),
                      valid_loss=shoal.HuberLoss(2.0))
    settings = m._settings()
    assert (settings["loss"], settings["quantile"]) == ("quantile", 0.2)
    assert (settings["valid_loss"], settings["valid_huber_delta"]) == ("huber", 2.0)
    assert "valid_loss" not in shoal.NLinear(h=3, input_size=6)._settings()


def test_bad_values_raise(panel):
    with pytest.raises(ValueError, match="horizon_weight"):
        forecast(panel, shoal.MAE(horizon_weight=[1, 2]))
    # Refused when the loss is made, naming the argument (the job's checks name the key).
    with pytest.raises(ValueError, match=r"q must lie in \(0, 1\), got 1.5"):
        shoal.QuantileLoss(q=1.5)
    with pytest.raises(ValueError, match="seasonality must be in"):
        shoal.MASE(seasonality=0)
    with pytest.raises(TypeError, match="seasonality must be an integer"):
        shoal.MASE(seasonality=2.5)
    with pytest.raises(ValueError, match="delta must be > 0"):
        shoal.HuberLoss(delta=-1)


def test_losses_shoal_lacks_are_refused_by_name():
    for name in ("IQLoss", "PMM", "NBMM", "relMSE"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(losses, name)()
    with pytest.raises(NotImplementedError, match="NegativeBinomial"):
        losses.DistributionLoss("NegativeBinomial")
    with pytest.raises(NotImplementedError, match="horizon_correlation"):
        losses.GMM(horizon_correlation=True)

    class GMM:  # a neuralforecast instance is recognised by its class name
        n_components = 3
        batch_correlation = True

    with pytest.raises(NotImplementedError, match="batch_correlation"):
        losses.loss_settings(GMM())
    with pytest.raises(NotImplementedError, match="batch_correlation"):
        shoal.NLinear(h=3, input_size=6, loss=GMM())


def test_multi_output_losses_name_their_columns_as_neuralforecast():
    mq = losses.MQLoss(level=[90, 80])
    assert mq.output_names == ["-median", "-lo-90", "-lo-80", "-hi-80", "-hi-90"]
    assert mq.quantiles == pytest.approx([0.5, 0.05, 0.1, 0.9, 0.95])
    assert losses.MQLoss(quantiles=[0.1, 0.5, 0.9]).output_names == [
        "-lo-80.0", "-median", "-hi-80.0"]
    d = losses.DistributionLoss("StudentT", level=[80], return_params=True)
    assert d.output_names == ["", "-median", "-lo-80", "-hi-80", "-df", "-loc", "-scale"]
    assert d.outputsize_multiplier == 3
    assert losses.loss_settings(d) == {
        "loss": "studentt", "loss_quantiles": pytest.approx([0.5, 0.1, 0.9]),
        "num_samples": 1000, "return_params": True}
    assert losses.loss_settings(mq, prefix="valid_")["valid_loss"] == "mqloss"
    g = losses.GMM(n_components=2, weighted=True, level=[80], return_params=True)
    assert g.output_names == ["", "-median", "-lo-80", "-hi-80", "-mu-1", "-std-1", "-weight-1",
                              "-mu-2", "-std-2", "-weight-2"]
    assert g.outputsize_multiplier == 6
    assert losses.loss_settings(g) == {
        "loss": "gmm", "loss_quantiles": pytest.approx([0.5, 0.1, 0.9]), "num_samples": 1000,
        "return_params": True, "loss_n_components": 2, "loss_weighted": True}
    p = losses.DistributionLoss("Poisson", level=[80], return_params=True)
    assert p.output_names == ["", "-median", "-lo-80", "-hi-80", "-loc"]
    assert losses.loss_settings(p)["loss"] == "poisson"


def test_multi_output_names_match_neuralforecast():
    nfl = pytest.importorskip("neuralforecast.losses.pytorch")
    for ours, theirs in [(losses.MQLoss(), nfl.MQLoss()),
                         (losses.MQLoss(quantiles=[0.2, 0.5, 0.7]),
                          nfl.MQLoss(quantiles=[0.2, 0.5, 0.7])),
                         (losses.DistributionLoss("Normal", level=[70, 95], return_params=True),
                          nfl.DistributionLoss("Normal", level=[70, 95], return_params=True)),
                         (losses.DistributionLoss("Poisson", return_params=True),
                          nfl.DistributionLoss("Poisson", return_params=True)),
                         (losses.GMM(n_components=3, return_params=True),
                          nfl.GMM(n_components=3, return_params=True)),
                         (losses.GMM(n_components=2, weighted=True, quantiles=[0.1, 0.5],
                                     return_params=True),
                          nfl.GMM(n_components=2, weighted=True, quantiles=[0.1, 0.5],
                                  return_params=True))]:
        assert ours.output_names == theirs.output_names
        assert ours.outputsize_multiplier == theirs.outputsize_multiplier
        assert losses.loss_settings(ours) == losses.loss_settings(theirs)


def test_neuralforecast_instances():
    nfl = pytest.importorskip("neuralforecast.losses.pytorch")
    s = losses.loss_settings
    assert s(nfl.MAE()) == {"loss": "mae"}
    assert s(nfl.RMSE(horizon_weight=np.array([1.0, 0.5]))) == \
        {"loss": "rmse", "horizon_weight": [1.0, 0.5]}
    assert s(nfl.MASE(seasonality=4)) == {"loss": "mase", "loss_seasonality": 4}
    assert s(nfl.HuberLoss(delta=0.3), prefix="valid_") == \
        {"valid_loss": "huber", "valid_huber_delta": 0.3}
    assert s(nfl.QuantileLoss(q=0.25)) == {"loss": "quantile", "quantile": 0.25}
    assert s(nfl.SMAPE()) == {"loss": "smape"} and s(nfl.MAPE()) == {"loss": "mape"}
    assert s(nfl.MSE()) == {"loss": "mse"}
    assert s(nfl.GMM(n_components=2, weighted=True))["loss_n_components"] == 2
    with pytest.raises(NotImplementedError, match="PMM"):
        s(nfl.PMM())


def test_high_quantile_forecasts_above_low_on_a_real_series():
    # ETTh1's oil temperature, its last 2000 hours: ~1900 training windows, enough for the
    # fitted quantiles to separate at every step of the horizon.
    path = DATA / "ts" / "etth1.csv.gz"
    if not path.exists():
        pytest.skip(f"no {path}")
    with gzip.open(path, "rt") as f:
        df = pd.read_csv(f)
    s = df[df["unique_id"] == "OT"].tail(2000).copy()
    s["ds"] = pd.to_datetime(s["ds"])

    def fit(q):
        m = shoal.NLinear(h=24, input_size=48, max_steps=200, learning_rate=1e-2,
                          windows_batch_size=256, loss=shoal.QuantileLoss(q=q))
        nf = shoal.NeuralForecast([m], freq="h")
        return nf.fit(s).predict()["NLinear"].to_numpy()

    hi, lo = fit(0.9), fit(0.1)
    assert (hi > lo).all(), hi - lo
