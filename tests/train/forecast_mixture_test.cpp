// DistributionLoss('Poisson') and GMM through the forecast jobs: each trains, forecasts its mean,
// quantiles and parameters (in neuralforecast's return_params order), forecasts the same again
// from saved weights, validates on its mean with a point valid_loss, and refuses what
// neuralforecast's GMM does not take by name. Parity with neuralforecast:
// tests/python/test_fit_parity.py.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "shoal/data/timeseries.h"
#include "shoal/layers/forecast_loss.h"
#include "shoal/train/forecast_job.h"

namespace shoal::forecast_mixture_test {

data::SeriesSet make(int n, int len) {
  RngStream rng(9, 7);
  std::string csv = "unique_id,ds,y\n";
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < len; ++t)
      csv += fmt::format("s{},{},{}\n", i, t,
                         std::round(20.0 + 3 * i + 0.1 * t + 2.0 * std::sin(2.0 * M_PI * t / 6.0) +
                                    rng.uniform(-1.f, 1.f)));
  return data::parse_series(csv, "counts.csv");
}

std::vector<Index> first(Index n) {
  std::vector<Index> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), Index{0});
  return v;
}

nlohmann::json options(const std::string& loss) {
  nlohmann::json o = {{"h", 4},
                      {"input_size", 12},
                      {"max_steps", 300},
                      {"val_size", 4},
                      {"val_check_steps", 50},
                      {"learning_rate", 1e-2},
                      {"loss", loss},
                      {"loss_quantiles", {0.5, 0.1, 0.9}},
                      {"num_samples", 400},
                      {"return_params", true},
                      {"num_threads", 2},
                      {"windows_batch_size", 16},
                      {"scaler_type", "robust"}};
  // Only GMM reads these; given to another loss they are refused.
  if (loss == "gmm") {
    o["loss_n_components"] = 2;
    o["loss_weighted"] = true;
  }
  return o;
}

TEST(ForecastMixture, TrainsAndForecastsMeanQuantilesAndParameters) {
  const data::SeriesSet set = make(3, 60);
  for (const Index series : {Index{1}, Index{3}}) {
    const data::Panel panel(set, first(series), {});
    for (const char* loss : {"poisson", "gmm"}) {
      SCOPED_TRACE(fmt::format("nlinear on {} series, loss {}", series, loss));
      const train::ForecastJob job = train::forecast_job("nlinear", options(loss));
      const bool gmm = std::string(loss) == "gmm";
      const Index c = layers::forecast_values(job.train.loss);
      ASSERT_EQ(c, 1 + 3 + (gmm ? 6 : 1));
      train::ForecastJob keep = job;
      keep.keep_weights = true;
      const train::FitResult r = train::fit_forecast(panel, keep);
      ASSERT_EQ(r.forecasts.size(), size_t(series * 4 * c));
      ASSERT_EQ(r.val_losses.size(), 6u);
      for (const double v : r.val_losses) EXPECT_TRUE(std::isfinite(v)) << v;
      EXPECT_LT(r.train_losses.back(), r.train_losses.front());
      for (Index k = 0; k < series * 4; ++k) {
        const double* v = r.forecasts.data() + k * c;
        EXPECT_LE(v[2], v[1]) << k;  // 10% ≤ median ≤ 90% (Poisson's draws are counts)
        EXPECT_LE(v[1], v[3]) << k;
        double mean = v[4];  // Poisson: the rate
        if (gmm) {           // μ_1, σ_1, w_1, μ_2, σ_2, w_2
          EXPECT_GT(v[5], 0);
          EXPECT_GT(v[8], 0);
          EXPECT_NEAR(v[6] + v[9], 1.0, 1e-5);
          mean = v[6] * v[4] + v[9] * v[7];
        }
        EXPECT_NEAR(v[0], mean, 0.1 * std::abs(mean) + 1) << "sample mean vs the mean";
        EXPECT_NEAR(v[0], 26 + 3 * double(k / 4), 5) << "the level after 60 steps of trend";
      }
      const Index start = data::predict_window_start(panel, job.windows);
      const std::vector<double> again =
          train::predict_windows(panel, job, r.weights, {&start, 1}, panel.length(), true);
      EXPECT_EQ(again, r.forecasts);
    }
  }
}

TEST(ForecastMixture, ValidatesOnTheMeanWithAPointLoss) {
  const data::SeriesSet set = make(2, 60);
  const data::Panel panel(set, first(2), {});
  for (const char* loss : {"poisson", "gmm"}) {
    nlohmann::json o = options(loss);
    o["max_steps"] = 100;
    const train::FitResult nll = train::fit_forecast(panel, train::forecast_job("nlinear", o));
    o["valid_loss"] = "mae";
    const train::FitResult mae = train::fit_forecast(panel, train::forecast_job("nlinear", o));
    EXPECT_EQ(mae.train_losses, nll.train_losses);
    ASSERT_EQ(mae.val_losses.size(), nll.val_losses.size());
    for (size_t i = 0; i < mae.val_losses.size(); ++i) {
      EXPECT_NE(mae.val_losses[i], nll.val_losses[i]);
      EXPECT_GT(mae.val_losses[i], 0);
      EXPECT_LT(mae.val_losses[i], 10) << "an MAE on the data's scale (level 20)";
    }
  }
}

void expect_error(const nlohmann::json& o, const std::string& needle) {
  try {
    const data::SeriesSet set = make(1, 60);
    train::fit_forecast(data::Panel(set, first(1), {}), train::forecast_job("nlinear", o));
    ADD_FAILURE() << "no error for " << o.dump();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ForecastMixture, RefusesWhatNeuralforecastsGmmDoesNotTake) {
  nlohmann::json o = options("gmm");
  o["loss_n_components"] = 0;
  expect_error(o, "loss_n_components");
  o["loss_n_components"] = layers::kMaxMixtureComponents + 1;
  expect_error(o, "loss_n_components");
  o = options("gmm");
  o["horizon_weight"] = {1, 2, 1, 1};
  expect_error(o, "GMM takes no horizon weight");
  o = options("poisson");
  o["loss"] = "pmm";
  expect_error(o, "pmm");
}

}  // namespace shoal::forecast_mixture_test
