// Forecasting hooks the Python package relies on: a fit's weights (safetensors bytes) reproduce
// its forecasts through predict_windows, bad weights are rejected by name, and the stop flag
// ends a fit at its next step.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/safetensors.h"
#include "support/registry_models.h"
#include "support/step_scale.h"

namespace shoal::train {
namespace forecast_weights_test {

data::SeriesSet two_series() {
  data::SeriesSet s;
  s.source = "synthetic";
  s.offsets.push_back(0);
  for (int i = 0; i < 2; ++i) {
    s.ids.push_back("s" + std::to_string(i));
    const Index len = 40 - 4 * i;
    for (Index t = 0; t < len; ++t) {
      s.ds.push_back(t);
      s.y.push_back(10.0 + 0.1 * double(t) + 2.0 * std::sin(2.0 * std::numbers::pi * t / 12.0) +
                    double(i));
    }
    s.offsets.push_back(Index(s.ds.size()));
    s.freq.push_back({});
  }
  return s;
}

ForecastJob job_for(const std::string& model) {
  ForecastJob job;
  job.model = model;
  job.windows.h = 4;
  job.windows.input_size = 12;
  job.windows.scaler = data::ScalerType::kStandard;
  job.train.max_steps = 15;
  job.keep_weights = true;
  return job;
}

// Every neural model of the registry: its saved weights, loaded again, reproduce its fit.
TEST(ForecastWeights, PredictFromWeightsEqualsTheFitsForecasts) {
  const data::SeriesSet set = two_series();
  for (const std::string& model : testing::registered_models()) {
    // A univariate model's pass holds every series' windows, whose GEMMs may round unlike a
    // pass of one: it is checked to a tolerance, at small widths. A multivariate model keeps its
    // widths and bitwise equality, but for iTransformer, whose GEMMs run over every token of
    // the pass (N per window, at widths of 512 and 2,048) and so round with the pass's size too.
    const bool exact = forecast_model(model).multivariate && model != "itransformer";
    const nlohmann::json options = {
        {"h", 4}, {"input_size", 12}, {"max_steps", testing::scaled_steps(15)}};
    ForecastJob job =
        forecast_job(model, exact ? options : testing::small_widths(model, options, 8));
    job.windows.scaler = data::ScalerType::kStandard;
    job.keep_weights = true;
    const data::Panel panel(set, {0, 1}, job.exog);
    const FitResult r = fit_forecast(panel, job);
    ASSERT_FALSE(r.weights.empty()) << model;
    const Index start = data::predict_window_start(panel, job.windows);
    const std::vector<double> f =
        predict_windows(panel, job, r.weights, {&start, 1}, panel.length(), true);
    ASSERT_EQ(f.size(), r.forecasts.size());
    for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i], r.forecasts[i]) << model << " " << i;
    // Two windows at once: the second is the predict window again.
    const std::vector<Index> starts = {start - 3, start};
    const std::vector<double> g =
        predict_windows(panel, job, r.weights, starts, panel.length(), true);
    for (Index s = 0; s < 2; ++s)
      for (Index t = 0; t < 4; ++t) {
        const double got = g[size_t((s * 2 + 1) * 4 + t)], want = r.forecasts[size_t(s * 4 + t)];
        if (exact)
          EXPECT_EQ(got, want) << model;
        else
          EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want))) << model;
      }
  }
}

// recurrent=True (step-by-step forecasts, windows one step longer than input_size, their own
// training horizon and inference length): the fit's forecasts come back from its weights, over
// many series (the global fit) and one (the windowed fit), at the window after the data and at
// an earlier one.
TEST(ForecastWeights, RecurrentTrueForecastsComeBackFromTheWeights) {
  const data::SeriesSet set = two_series();
  for (const std::string model : {"rnn", "gru", "lstm"})
    for (const std::vector<Index>& series : {std::vector<Index>{0, 1}, std::vector<Index>{1}}) {
      SCOPED_TRACE(model + " series " + std::to_string(series.size()));
      const nlohmann::json options = {{"h", 4},          {"input_size", 12},
                                      {"max_steps", 15}, {"recurrent", true},
                                      {"h_train", 2},    {"inference_input_size", 9}};
      ForecastJob job = forecast_job(model, testing::small_widths(model, options, 8));
      job.windows.scaler = data::ScalerType::kStandard;
      job.keep_weights = true;
      const data::Panel panel(set, series, job.exog);
      const FitResult r = fit_forecast(panel, job);
      const Index n = panel.n_series();
      ASSERT_EQ(r.forecasts.size(), size_t(n * 4));
      for (const double v : r.forecasts) EXPECT_TRUE(std::isfinite(v));
      const Index start = data::predict_window_start(panel, job.windows);
      const std::vector<Index> starts = {start - 3, start};
      const std::vector<double> g =
          predict_windows(panel, job, r.weights, starts, panel.length(), true);
      ASSERT_EQ(g.size(), size_t(n * 2 * 4));
      for (Index s = 0; s < n; ++s)
        for (Index t = 0; t < 4; ++t) {
          const double got = g[size_t((s * 2 + 1) * 4 + t)], want = r.forecasts[size_t(s * 4 + t)];
          EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want)));
        }
    }
}

TEST(ForecastWeights, WeightsNameNeuralforecastTensors) {
  const data::SeriesSet set = two_series();
  const ForecastJob job = job_for("tsmixerx");
  const data::Panel panel(set, {0, 1}, job.exog);
  const FitResult r = fit_forecast(panel, job);
  const SafetensorsFile f = decode_safetensors(r.weights, "fit");
  ASSERT_NE(f.find("out.weight"), nullptr);
  EXPECT_EQ(f.find("out.weight")->shape.str(), Shape({2, 64}).str());
  EXPECT_NE(f.find("mixing_block.0.temporal_mixer.temporal_lin.weight"), nullptr);
  EXPECT_NE(f.find("norm.affine_weight"), nullptr);
}

TEST(ForecastWeights, MismatchedWeightsAreRejected) {
  const data::SeriesSet set = two_series();
  const ForecastJob job = job_for("tsmixerx");
  const data::Panel both(set, {0, 1}, job.exog), one(set, {0}, job.exog);
  const FitResult r = fit_forecast(one, job);
  const Index start = data::predict_window_start(both, job.windows);
  try {
    predict_windows(both, job, r.weights, {&start, 1}, both.length(), true);
    FAIL() << "a 1-series model loaded into a 2-series one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
  EXPECT_THROW(predict_windows(both, job, "junk", {&start, 1}, both.length(), true), Error);
}

TEST(ForecastWeights, StopFlagEndsTheFit) {
  const data::SeriesSet set = two_series();
  ForecastJob job = job_for("tsmixer");
  job.train.max_steps = 1'000'000;
  std::atomic<bool> stop{true};
  job.train.stop = &stop;
  const data::Panel panel(set, {0, 1}, job.exog);
  try {
    fit_forecast(panel, job);
    FAIL() << "the fit ignored the stop flag";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted at step 1"), std::string::npos);
  }
}

}  // namespace forecast_weights_test
}  // namespace shoal::train
