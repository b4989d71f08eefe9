// A univariate model (NLinear) over a panel of many series trains one model globally: it learns,
// it beats one model per series where each series alone is short, its data-parallel steps are
// deterministic for a thread count and agree across thread counts (every univariate model),
// and its saved weights predict what the fit forecast.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "support/alloc_counter.h"
#include "support/registry_models.h"
#include "support/step_scale.h"

namespace shoal::global_fit_test {

// n series of `len` rows sharing a period-6 pattern and a trend, each with its own level and
// noise; the last `held` rows of each are returned apart (the truth to score against).
struct Data {
  data::SeriesSet set;
  std::vector<double> truth;  // [n, held]
};

double value(int i, int t, double noise) {
  return 10.0 * i + 0.3 * t + 3.0 * std::sin(2.0 * M_PI * t / 6.0) + noise;
}

Data make(int n, int len, int held, uint64_t seed) {
  RngStream rng(seed, 7);
  std::string csv = "unique_id,ds,y\n";
  Data d;
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < len; ++t)
      csv += fmt::format("s{:02},{},{}\n", i, t, value(i, t, rng.uniform(-1.f, 1.f)));
    for (int t = len; t < len + held; ++t) d.truth.push_back(value(i, t, 0));
  }
  d.set = data::parse_series(csv, "synthetic.csv");
  return d;
}

std::vector<Index> all(const data::SeriesSet& s) {
  std::vector<Index> v(size_t(s.n_series()));
  std::iota(v.begin(), v.end(), Index{0});
  return v;
}

double mae(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e += std::abs(a[i] - b[i]);
  return e / double(a.size());
}

TEST(GlobalFit, NLinearIsUnivariateAndTrainsOneModelOverEverySeries) {
  EXPECT_FALSE(train::forecast_model("nlinear").multivariate);
  EXPECT_TRUE(train::forecast_model("tsmixerx").multivariate);
  const Data d = make(6, 60, 6, 1);
  const data::Panel panel(d.set, all(d.set), {});
  const train::ForecastJob job = train::forecast_job("nlinear", {{"h", 6},
                                                                 {"input_size", 12},
                                                                 {"max_steps", 200},
                                                                 {"learning_rate", 1e-2},
                                                                 {"batch_size", 4},
                                                                 {"windows_batch_size", 64},
                                                                 {"scaler_type", "standard"}});
  EXPECT_EQ(job.windows.batch_size, 4);
  EXPECT_EQ(job.windows.inference_windows_batch_size, 1024);  // NLinear's own default
  const train::FitResult r = train::fit_forecast(panel, job);
  ASSERT_EQ(r.forecasts.size(), 36u);
  ASSERT_EQ(r.train_losses.size(), 200u);
  const auto mean = [&](size_t a, size_t b) {
    return std::accumulate(r.train_losses.begin() + ptrdiff_t(a),
                           r.train_losses.begin() + ptrdiff_t(b), 0.0) /
           double(b - a);
  };
  EXPECT_LT(mean(180, 200), 0.7 * mean(0, 20)) << "the training loss falls";
  EXPECT_LT(mae(r.forecasts, d.truth), 2.0);
}

TEST(GlobalFit, BeatsOneModelPerSeriesOnShortSeries) {
#if defined(__SANITIZE_ADDRESS__)
  // An accuracy test needs its full training: the release run holds it; the sanitizers check
  // the same code's memory in the other fits of this suite.
  GTEST_SKIP() << "accuracy: run in the release build";
#endif
  const Data d = make(12, 26, 6, 3);
  const nlohmann::json options = {{"h", 6},
                                  {"input_size", 12},
                                  {"max_steps", 300},
                                  {"learning_rate", 1e-2},
                                  {"scaler_type", "standard"},
                                  {"random_seed", 2}};
  const train::ForecastJob job = train::forecast_job("nlinear", options);
  const train::FitResult global = train::fit_forecast(data::Panel(d.set, all(d.set), {}), job);
  std::vector<double> local;
  for (Index s = 0; s < d.set.n_series(); ++s) {
    const train::FitResult r = train::fit_forecast(data::Panel(d.set, {s}, {}), job);
    local.insert(local.end(), r.forecasts.begin(), r.forecasts.end());
  }
  const double g = mae(global.forecasts, d.truth), l = mae(local, d.truth);
  EXPECT_LT(g, 0.9 * l) << "global " << g << " vs per series " << l;
}

// Every univariate model of the registry: replicas hold the source's params and state (NBEATS'
// fixed bases are state), so a step over 2 threads is the step over 1 up to summation order.
class GlobalFitThreads : public ::testing::TestWithParam<std::string> {};

TEST_P(GlobalFitThreads, AgreeAndAThreadCountIsBitwiseDeterministic) {
  const Data d = make(9, 80, 6, 5);
  const data::Panel panel(d.set, all(d.set), {});
  const int64_t steps = testing::scaled_steps(30);
  nlohmann::json options = {{"h", 6},
                            {"input_size", 12},
                            {"max_steps", steps},
                            {"learning_rate", 1e-3},
                            {"windows_batch_size", 203},
                            {"batch_size", 5},
                            {"scaler_type", "robust"}};
  options = testing::small_widths(GetParam(), options);
  train::FitResult runs[3];
  const int threads[3] = {1, 2, 2};
  for (int k = 0; k < 3; ++k) {
    options["num_threads"] = threads[k];
    train::ForecastJob job = train::forecast_job(GetParam(), options);
    job.keep_weights = true;
    runs[k] = train::fit_forecast(panel, job);
  }
  ASSERT_EQ(runs[0].train_losses.size(), size_t(steps));
  for (size_t i = 0; i < size_t(steps); ++i)
    EXPECT_NEAR(runs[1].train_losses[i], runs[0].train_losses[i],
                1e-4 * std::max(1.0, std::abs(runs[0].train_losses[i])))
        << "step " << i;
  for (size_t i = 0; i < runs[0].forecasts.size(); ++i)
    EXPECT_NEAR(runs[1].forecasts[i], runs[0].forecasts[i],
                1e-3 * std::max(1.0, std::abs(runs[0].forecasts[i])))
        << "forecast " << i;
  EXPECT_EQ(runs[1].weights, runs[2].weights) << "same seed and threads: identical weights";
  EXPECT_EQ(runs[1].train_losses, runs[2].train_losses);
  EXPECT_EQ(runs[1].forecasts, runs[2].forecasts);
}

INSTANTIATE_TEST_SUITE_P(Univariate, GlobalFitThreads,
                         ::testing::ValuesIn(testing::registered_models(/*univariate=*/true)));

TEST(GlobalFit, SavedWeightsPredictTheFitsForecastsAndValidationStopsEarly) {
  const Data d = make(5, 70, 6, 9);
  const data::Panel panel(d.set, all(d.set), {});
  train::ForecastJob job = train::forecast_job("nlinear", {{"h", 6},
                                                           {"input_size", 12},
                                                           {"max_steps", 400},
                                                           {"learning_rate", 5e-2},
                                                           {"val_size", 12},
                                                           {"val_check_steps", 10},
                                                           {"early_stop_patience_steps", 2},
                                                           {"inference_windows_batch_size", 3},
                                                           {"scaler_type", "minmax"}});
  job.keep_weights = true;
  const train::FitResult r = train::fit_forecast(panel, job);
  ASSERT_FALSE(r.val_losses.empty());
  EXPECT_EQ(size_t(r.steps / 10), r.val_losses.size());
  EXPECT_LT(r.steps, 400) << "early stopping on the validation windows of every series";
  const Index start = data::predict_window_start(panel, job.windows);
  const std::vector<double> p =
      train::predict_windows(panel, job, r.weights, {&start, 1}, panel.length(), /*future=*/true);
  ASSERT_EQ(p.size(), r.forecasts.size());
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], r.forecasts[i], 1e-4) << i;
}

TEST(GlobalFit, NoAllocationPerStep) {
  const Data d = make(7, 60, 6, 4);
  const data::Panel panel(d.set, all(d.set), {});
  auto allocations = [&](Index steps) {
    const train::ForecastJob job = train::forecast_job("nlinear", {{"h", 6},
                                                                   {"input_size", 12},
                                                                   {"max_steps", steps},
                                                                   {"val_size", 6},
                                                                   {"val_check_steps", 5},
                                                                   {"batch_size", 3},
                                                                   {"windows_batch_size", 50},
                                                                   {"num_threads", 2}});
    const shoal::testing::AllocCounter counter;
    const train::FitResult r = train::fit_forecast(panel, job);
    EXPECT_EQ(r.steps, steps);
    return counter.count();
  };
  allocations(5);  // warm-up: lazily built kernels allocate once per process
  EXPECT_EQ(allocations(10), allocations(40));
}

}  // namespace shoal::global_fit_test
