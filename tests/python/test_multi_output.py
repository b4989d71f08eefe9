"""MQLoss and DistributionLoss through NeuralForecast: neuralforecast's columns in predict,
cross_validation and predict_insample, the same forecasts after save and load, and the
workflow pieces that need point forecasts refused by name. Parity of the fits themselves:
test_fit_parity.py; the losses: tests/layers/multi_output_losses_test.cpp."""

import numpy as np
import pytest

import shoal
from shoal.losses import DistributionLoss, MQLoss
from shoal.utils import AirPassengersDF


def forecaster(loss, **kw):
    model = shoal.NLinear(h=6, input_size=12, max_steps=30, loss=loss, random_seed=2, **kw)
    return shoal.NeuralForecast(models=[model], freq="ME")


CASES = [
    (MQLoss(level=[80]), ["NLinear-median", "NLinear-lo-80", "NLinear-hi-80"]),
    (DistributionLoss("Normal", level=[90]),
     ["NLinear", "NLinear-median", "NLinear-lo-90", "NLinear-hi-90"]),
    (DistributionLoss("StudentT", quantiles=[0.2, 0.5, 0.8], return_params=True),
     ["NLinear", "NLinear-lo-60.0", "NLinear-median", "NLinear-hi-60.0", "NLinear-df",
      "NLinear-loc", "NLinear-scale"]),
]


@pytest.mark.parametrize("loss, columns", CASES)
def test_columns_in_every_frame(loss, columns):
    nf = forecaster(loss)
    fc = nf.fit(AirPassengersDF).predict()
    assert list(fc.columns) == ["unique_id", "ds"] + columns
    assert np.isfinite(fc[columns].to_numpy(np.float64)).all()
    cv = nf.cross_validation(AirPassengersDF, n_windows=2)
    assert list(cv.columns) == ["unique_id", "ds", "cutoff"] + columns + ["y"]
    ins = nf.predict_insample(step_size=6)
    assert list(ins.columns) == ["unique_id", "ds", "cutoff"] + columns + ["y"]


@pytest.mark.parametrize("loss, columns", CASES)
def test_save_and_load_predict_the_same(loss, columns, tmp_path):
    nf = forecaster(loss)
    before = nf.fit(AirPassengersDF).predict()
    nf.save(tmp_path / "saved")
    after = shoal.NeuralForecast.load(tmp_path / "saved").predict()
    assert list(after.columns) == list(before.columns)
    np.testing.assert_array_equal(after[columns].to_numpy(), before[columns].to_numpy())


def test_distribution_forecasts_are_reproducible_and_follow_the_quantiles():
    nf = forecaster(DistributionLoss("Normal", level=[80, 90], num_samples=2000))
    fc = nf.fit(AirPassengersDF).predict()
    again = nf.predict()
    np.testing.assert_array_equal(fc.iloc[:, 2:].to_numpy(), again.iloc[:, 2:].to_numpy())
    lo90, lo80, med, hi80, hi90 = (fc[f"NLinear{s}"].to_numpy() for s in
                                  ("-lo-90", "-lo-80", "-median", "-hi-80", "-hi-90"))
    assert (lo90 < lo80).all() and (lo80 < med).all() and (med < hi80).all() and \
        (hi80 < hi90).all()


def test_what_needs_point_forecasts_is_refused_by_name():
    nf = forecaster(MQLoss())
    nf.fit(AirPassengersDF)
    with pytest.raises(NotImplementedError, match="MQLoss"):
        nf.predict(level=[80])
    with pytest.raises(NotImplementedError, match="beyond the models' horizon"):
        nf.predict(h=12)
    with pytest.raises(NotImplementedError, match="prediction_intervals"):
        forecaster(MQLoss()).fit(AirPassengersDF,
                                 prediction_intervals=shoal.utils.PredictionIntervals())


def test_a_model_per_series_gives_the_same_columns():
    df = shoal.utils.AirPassengersPanel[["unique_id", "ds", "y"]]
    model = shoal.NLinear(h=6, input_size=12, max_steps=20, loss=MQLoss(level=[80]))
    nf = shoal.NeuralForecast(models=[model], freq="ME", per_series=True)
    fc = nf.fit(df).predict()
    assert list(fc.columns) == ["unique_id", "ds", "NLinear-median", "NLinear-lo-80",
                                "NLinear-hi-80"]
    assert len(fc) == 12 and np.isfinite(fc.iloc[:, 2:].to_numpy(np.float64)).all()
