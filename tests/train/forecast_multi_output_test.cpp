// MQLoss and DistributionLoss through the forecast jobs: a model per series (windowed) and one
// model over many series (data-parallel replicas), each forecast value per step (C of them:
// MQLoss's quantiles; a distribution's mean, quantiles and parameters), validation with the
// pairs neuralforecast allows, the same forecasts again from saved weights, and the pairs it
// refuses refused by name. Parity with neuralforecast: tests/python/test_fit_parity.py.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "shoal/data/timeseries.h"
#include "shoal/layers/forecast_loss.h"
#include "shoal/train/forecast_job.h"

namespace shoal::forecast_multi_output_test {

data::SeriesSet make(int n, int len) {
  RngStream rng(9, 7);
  std::string csv = "unique_id,ds,y\n";
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < len; ++t)
      csv += fmt::format(
          "s{},{},{}\n", i, t,
          20.0 + 3 * i + 0.1 * t + 2.0 * std::sin(2.0 * M_PI * t / 6.0) + rng.uniform(-1.f, 1.f));
  return data::parse_series(csv, "synthetic.csv");
}

std::vector<Index> first(Index n) {
  std::vector<Index> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), Index{0});
  return v;
}

nlohmann::json options(const std::string& loss) {
  nlohmann::json o = {{"h", 4},
                      {"input_size", 12},
                      {"max_steps", 60},
                      {"val_size", 4},
                      {"val_check_steps", 20},
                      {"learning_rate", 1e-2},
                      {"loss", loss},
                      {"num_threads", 2},
                      {"windows_batch_size", 16},
                      {"scaler_type", "robust"}};
  // Only the parameters the loss reads: another one is refused.
  if (loss == "mae") return o;
  o["loss_quantiles"] = {0.5, 0.1, 0.9};
  if (loss == "mqloss") return o;
  o["num_samples"] = 400;
  o["return_params"] = true;
  return o;
}

TEST(ForecastMultiOutput, TrainsAndForecastsEveryValue) {
  const data::SeriesSet set = make(3, 60);
  // NLinear per series (windowed) and over many series (data-parallel); TSMixerx over a panel
  // (windows in chunks, each with its own rows of loc and scale).
  for (const auto& [model, series] :
       {std::pair{"nlinear", Index{1}}, std::pair{"nlinear", Index{3}},
        std::pair{"tsmixerx", Index{3}}}) {
    const data::Panel panel(set, first(series), {});
    for (const char* loss : {"mqloss", "normal", "studentt"}) {
      SCOPED_TRACE(fmt::format("{} on {} series, loss {}", model, series, loss));
      nlohmann::json o = options(loss);
      o["max_steps"] = 300;  // long enough for the quantile outputs to separate
      const train::ForecastJob job = train::forecast_job(model, o);
      const Index c = layers::forecast_values(job.train.loss);
      const bool dist = std::string(loss) != "mqloss";
      EXPECT_EQ(c, dist ? 1 + 3 + layers::loss_outputs(job.train.loss) : 3);
      train::ForecastJob keep = job;
      keep.keep_weights = true;
      const train::FitResult r = train::fit_forecast(panel, keep);
      ASSERT_EQ(r.forecasts.size(), size_t(series * 4 * c));
      ASSERT_EQ(r.val_losses.size(), 15u);  // every val_check_steps = 20
      for (const double v : r.val_losses) EXPECT_TRUE(std::isfinite(v)) << v;
      for (const double f : r.forecasts) EXPECT_TRUE(std::isfinite(f));
      EXPECT_LT(r.train_losses.back(), r.train_losses.front());
      // Values per (series, step): MQLoss's quantiles 0.5, 0.1, 0.9; a distribution's mean,
      // median, 10% and 90% quantiles (of draws: ordered at every step), then its parameters.
      // MQLoss's separate outputs may cross at a step on little data; on average they are
      // ordered.
      const Index lo = dist ? 2 : 1, hi = dist ? 3 : 2, med = dist ? 1 : 0;
      double below = 0, above = 0;
      for (Index k = 0; k < series * 4; ++k) {
        const double* v = r.forecasts.data() + k * c;
        below += v[med] - v[lo];
        above += v[hi] - v[med];
        if (dist) {
          EXPECT_LT(v[lo], v[med]) << k;
          EXPECT_LT(v[med], v[hi]) << k;
          const Index scale = c - 1, mean_param = c - 2;
          EXPECT_GT(v[scale], 0);
          EXPECT_NEAR(v[0], v[mean_param], 0.5 * v[scale]) << "sample mean vs μ";
        }
      }
      EXPECT_GT(below, 0);
      EXPECT_GT(above, 0);
      // The same forecasts (draws included) from the saved weights.
      const Index start = data::predict_window_start(panel, job.windows);
      const std::vector<double> again =
          train::predict_windows(panel, job, r.weights, {&start, 1}, panel.length(), true);
      EXPECT_EQ(again, r.forecasts);
    }
  }
}

TEST(ForecastMultiOutput, DistributionValidatesOnItsMeanWithAPointLoss) {
  const data::SeriesSet set = make(3, 60);
  const data::Panel panel(set, first(3), {});
  nlohmann::json o = options("normal");
  const train::FitResult nll = train::fit_forecast(panel, train::forecast_job("nlinear", o));
  o["valid_loss"] = "mae";
  const train::FitResult mae = train::fit_forecast(panel, train::forecast_job("nlinear", o));
  EXPECT_EQ(mae.train_losses, nll.train_losses);
  ASSERT_EQ(mae.val_losses.size(), nll.val_losses.size());
  for (size_t i = 0; i < mae.val_losses.size(); ++i) {
    EXPECT_NE(mae.val_losses[i], nll.val_losses[i]);
    EXPECT_GT(mae.val_losses[i], 0);
  }
  // A distribution valid_loss is the training loss's likelihood, as neuralforecast makes it.
  o["valid_loss"] = "studentt";
  EXPECT_EQ(train::fit_forecast(panel, train::forecast_job("nlinear", o)).val_losses,
            nll.val_losses);
}

void expect_error(const nlohmann::json& o, const std::string& model, const std::string& needle) {
  try {
    const data::SeriesSet set = make(1, 60);
    train::fit_forecast(data::Panel(set, first(1), {}), train::forecast_job(model, o));
    ADD_FAILURE() << "no error for " << o.dump();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ForecastMultiOutput, RefusedPairsAreNamed) {
  nlohmann::json o = options("mae");
  o["valid_loss"] = "normal";
  expect_error(o, "nlinear", "valid_loss normal needs a model trained with it");
  o = options("mqloss");
  o["valid_loss"] = "mae";
  expect_error(o, "nlinear", "validates with an MQLoss of as many quantiles (3)");
  o = options("normal");
  o["valid_loss"] = "mqloss";
  o["valid_loss_quantiles"] = {0.5, 0.1, 0.9};
  expect_error(o, "nlinear", "is not supported");
  o = options("mqloss");
  o["loss_quantiles"] = nlohmann::json::array();
  expect_error(o, "nlinear", "loss_quantiles needs at least one quantile");
  o = options("mqloss");
  o["loss_quantiles"] = {0.5, 1.0};
  expect_error(o, "nlinear", "loss_quantiles");
  expect_error({{"h", 4}, {"loss", "mqloss"}, {"loss_quantiles", {0.5}}}, "naive",
               "unknown config key 'loss' for model 'naive'");
}

}  // namespace shoal::forecast_multi_output_test

namespace shoal::forecast_multi_output_test {

// Lightning's gradient_clip_val: a norm no step reaches leaves the fit bit for bit as it was
// (the clipped path multiplies by exactly 1), a small one changes it, and the data-parallel
// step's clip (squares summed chunk by chunk) is deterministic. Parity with torch's
// clip_grad_norm_: tests/python/test_fit_parity.py (NLinear-clipped).
TEST(ForecastGradientClip, ClipsOnlyAboveTheNorm) {
  const data::SeriesSet set = make(3, 60);
  for (const Index series : {Index{1}, Index{3}}) {
    SCOPED_TRACE(series);
    const data::Panel panel(set, first(series), {});
    nlohmann::json o = options("mae");
    const train::FitResult base = train::fit_forecast(panel, train::forecast_job("nlinear", o));
    o["gradient_clip_val"] = 1e9;
    EXPECT_EQ(train::fit_forecast(panel, train::forecast_job("nlinear", o)).forecasts,
              base.forecasts);
    o["gradient_clip_val"] = 1e-3;
    const train::FitResult clipped = train::fit_forecast(panel, train::forecast_job("nlinear", o));
    EXPECT_NE(clipped.forecasts, base.forecasts);
    EXPECT_EQ(train::fit_forecast(panel, train::forecast_job("nlinear", o)).forecasts,
              clipped.forecasts);
  }
  nlohmann::json o = options("mae");
  o["gradient_clip_val"] = -1;
  expect_error(o, "nlinear", "gradient_clip_val");
}

}  // namespace shoal::forecast_multi_output_test
