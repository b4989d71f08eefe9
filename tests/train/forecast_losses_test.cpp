// Every point loss through the forecast jobs: per series (windowed, unchunked), a multivariate
// model trained in chunks (TSMixerx), a global univariate fit over several threads (NLinear's
// data-parallel replicas); valid_loss steers validation alone; bad parameters are named.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "shoal/data/timeseries.h"
#include "shoal/train/forecast_job.h"

namespace shoal::forecast_losses_test {

data::SeriesSet make(int n, int len) {
  RngStream rng(5, 7);
  std::string csv = "unique_id,ds,y\n";
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < len; ++t)
      csv += fmt::format(
          "s{},{},{}\n", i, t,
          5.0 + i + 0.1 * t + 2.0 * std::sin(2.0 * M_PI * t / 6.0) + rng.uniform(-1.f, 1.f));
  return data::parse_series(csv, "synthetic.csv");
}

std::vector<Index> first(Index n) {
  std::vector<Index> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), Index{0});
  return v;
}

struct FitCase {
  const char* model;
  Index series;
};

const char* kLosses[] = {"mae", "mse", "rmse", "mape", "smape", "mase", "huber", "quantile"};

nlohmann::json options(const std::string& loss, bool weighted) {
  nlohmann::json o = {{"h", 4},
                      {"input_size", 12},
                      {"max_steps", 25},
                      {"val_size", 4},
                      {"val_check_steps", 5},
                      {"learning_rate", 1e-2},
                      {"loss", loss},
                      {"num_threads", 2},
                      {"windows_batch_size", 20},
                      {"scaler_type", "standard"}};
  // Only the parameters the loss reads: another one is refused.
  if (loss == "quantile") o["quantile"] = 0.8;
  if (loss == "mase") o["loss_seasonality"] = 6;
  if (loss == "huber") o["huber_delta"] = 0.5;
  if (weighted) o["horizon_weight"] = {1.0, 2.0, 0.5, 1.5};
  return o;
}

TEST(ForecastLosses, EveryLossTrainsPerSeriesChunkedAndGlobally) {
  const data::SeriesSet set = make(3, 60);
  for (const FitCase s : {FitCase{"nlinear", 1}, FitCase{"tsmixerx", 3}, FitCase{"nlinear", 3}}) {
    const data::Panel panel(set, first(s.series), {});
    std::vector<double> mae_forecast;
    for (const char* loss : kLosses) {
      for (const bool weighted : {false, true}) {
        SCOPED_TRACE(fmt::format("{} on {} series, loss {}{}", s.model, s.series, loss,
                                 weighted ? " with horizon_weight" : ""));
        const train::ForecastJob job = train::forecast_job(s.model, options(loss, weighted));
        const train::FitResult r = train::fit_forecast(panel, job);
        ASSERT_EQ(r.train_losses.size(), 25u);
        ASSERT_EQ(r.val_losses.size(), 5u);
        for (const double v : r.train_losses) EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
        for (const double v : r.val_losses) EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
        for (const double f : r.forecasts) EXPECT_TRUE(std::isfinite(f));
        if (std::string(loss) == "mae" && !weighted) {
          mae_forecast = r.forecasts;
        } else {
          EXPECT_NE(r.forecasts, mae_forecast) << "the loss changes the fit";
        }
      }
    }
  }
}

// Validation runs in raw space with valid_loss (default: the training loss); without early
// stopping it does not touch training.
TEST(ForecastLosses, ValidLossScoresValidationOnly) {
  const data::SeriesSet set = make(3, 60);
  for (const FitCase s : {FitCase{"tsmixerx", 3}, FitCase{"nlinear", 3}}) {
    SCOPED_TRACE(s.model);
    const data::Panel panel(set, first(s.series), {});
    nlohmann::json o = options("mae", false);
    const train::FitResult base = train::fit_forecast(panel, train::forecast_job(s.model, o));
    o["valid_loss"] = "mae";
    const train::FitResult same = train::fit_forecast(panel, train::forecast_job(s.model, o));
    o["valid_loss"] = "mase";
    o["valid_loss_seasonality"] = 6;
    const train::FitResult mase = train::fit_forecast(panel, train::forecast_job(s.model, o));
    EXPECT_EQ(same.val_losses, base.val_losses);
    EXPECT_EQ(mase.train_losses, base.train_losses);
    EXPECT_EQ(mase.forecasts, base.forecasts);
    ASSERT_EQ(mase.val_losses.size(), base.val_losses.size());
    for (size_t i = 0; i < base.val_losses.size(); ++i)
      EXPECT_NE(mase.val_losses[i], base.val_losses[i]);
    // Early stopping (patience 1) stops at the first check whose valid_loss did not improve.
    o["early_stop_patience_steps"] = 1;
    o["max_steps"] = 200;
    const train::FitResult stopped = train::fit_forecast(panel, train::forecast_job(s.model, o));
    const std::vector<double>& v = stopped.val_losses;
    ASSERT_FALSE(v.empty());
    double best = v[0];
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      EXPECT_LT(v[i], best) << "check " << i << " did not improve, yet training went on";
      best = std::min(best, v[i]);
    }
    if (v.size() < 40) {
      EXPECT_GE(v.back(), best) << "stopped although the last check improved";
    }
  }
}

TEST(ForecastLosses, SettingsRoundTrip) {
  nlohmann::json o = options("quantile", true);
  o["valid_loss"] = "huber";
  o["valid_huber_delta"] = 2.0;
  const train::ForecastJob job = train::forecast_job("nlinear", o);
  EXPECT_EQ(job.train.loss.kind, layers::LossKind::kQuantile);
  EXPECT_EQ(job.train.loss.q, 0.8);
  EXPECT_EQ(job.train.loss.horizon_weight, (std::vector<double>{1.0, 2.0, 0.5, 1.5}));
  ASSERT_TRUE(job.train.valid_loss.has_value());
  EXPECT_EQ(job.train.valid_loss->kind, layers::LossKind::kHuber);
  EXPECT_EQ(job.train.valid_loss->delta, 2.0);
  const nlohmann::json s = train::forecast_settings(job);
  EXPECT_EQ(s["loss"], "quantile");
  EXPECT_EQ(s["valid_loss"], "huber");
  const train::ForecastJob back = train::forecast_job("nlinear", [&] {
    nlohmann::json c = s;
    c.erase("model");
    return c;
  }());
  EXPECT_EQ(back.train.loss.horizon_weight, job.train.loss.horizon_weight);
  EXPECT_EQ(back.train.valid_loss->delta, 2.0);
  EXPECT_FALSE(train::forecast_job("nlinear", options("mae", false)).train.valid_loss);
}

void expect_error(nlohmann::json o, const std::string& needle) {
  try {
    train::forecast_job("nlinear", o);
    ADD_FAILURE() << "no error for " << o.dump();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ForecastLosses, BadParametersAreNamed) {
  nlohmann::json o = options("mae", false);
  o["horizon_weight"] = {1.0, 2.0};
  expect_error(o, "horizon_weight has 2 entries; it needs one per horizon step (h = 4)");
  o = options("quantile", false);
  o["quantile"] = 1.0;
  expect_error(o, "field 'quantile'");
  o["quantile"] = 0.0;
  expect_error(o, "field 'quantile'");
  o = options("mase", false);
  o["loss_seasonality"] = 0;
  expect_error(o, "field 'loss_seasonality'");
  o["loss_seasonality"] = 12;  // = input_size: no pair a season apart
  expect_error(o, "input_size = 12");
  o = options("mae", false);
  o["loss"] = "tukey";
  expect_error(o, "unknown loss 'tukey'");
  o["loss"] = "mae";
  o["valid_loss"] = "quantile";
  o["valid_quantile"] = -0.5;
  expect_error(o, "field 'valid_quantile'");
  o["valid_loss"] = "mae";
  o.erase("valid_quantile");
  o["valid_horizon_weight"] = {1.0};
  expect_error(o, "valid_horizon_weight has 1 entries");
  o["valid_horizon_weight"] = "1,x";
  expect_error(o, "must list finite numbers");
  o = options("mae", false);
  o["horizon_weight"] = {1.0, -1.0, 1.0, 1.0};
  expect_error(o,
               "field 'horizon_weight': hyper-parameter out of range (expected finite "
               "weights ≥ 0, got -1)");
  o["horizon_weight"] = {0.0, 0.0, 0.0, 0.0};
  expect_error(o, "horizon_weight is all zero");
}

// A loss parameter no loss of the job reads is refused, naming it, in every front end (they
// all build the job here); its default value changes nothing and passes.
TEST(ForecastLosses, ParametersTheLossDoesNotReadAreRefused) {
  nlohmann::json o = options("mae", false);
  o["quantile"] = 0.9;
  expect_error(o, "field 'quantile': loss mae does not read quantile");
  o["quantile"] = 0.5;
  EXPECT_NO_THROW(train::forecast_job("nlinear", o));
  o = options("quantile", false);
  o["huber_delta"] = 2.0;
  expect_error(o, "loss quantile does not read huber_delta");
  o = options("mse", false);
  o["loss_quantiles"] = {0.1, 0.9};
  expect_error(o, "loss mse does not read loss_quantiles");
  o = options("mae", false);
  o["num_samples"] = 10;
  expect_error(o, "loss mae does not read num_samples");
  o = options("mae", false);
  o["valid_quantile"] = 0.3;
  expect_error(o, "valid_quantile is read only with valid_loss set");
  o["valid_loss"] = "mse";
  expect_error(o, "valid_loss mse does not read valid_quantile");
  o["valid_loss"] = "quantile";
  EXPECT_EQ(train::forecast_job("nlinear", o).train.valid_loss->q, 0.3);
  for (const nlohmann::json& bad :
       {nlohmann::json{{"h", 4}, {"loss", "mse"}}, nlohmann::json{{"h", 4}, {"quantile", 0.9}},
        nlohmann::json{{"h", 4}, {"valid_loss", "mae"}}}) {
    try {
      train::forecast_job("naive", bad);
      ADD_FAILURE() << "no error for naive with " << bad.dump();
    } catch (const Error& e) {
      // A baseline trains nothing, so it reads no loss at all.
      EXPECT_NE(std::string(e.what()).find("for model 'naive' (expected one of: h, seasonality)"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(train::forecast_job("naive", {{"h", 4}, {"seasonality", 3}}));
}

}  // namespace shoal::forecast_losses_test
