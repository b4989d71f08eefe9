#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/data/windows.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/metrics.h"
#include "support/alloc_counter.h"

namespace shoal::train {
namespace metrics_test {

TEST(Metrics, HandComputedValues) {
  const std::vector<double> y = {10, 20}, y_hat = {12, 15};
  EXPECT_DOUBLE_EQ(mae(y, y_hat), 3.5);
  EXPECT_NEAR(smape(y, y_hat), (200.0 * 2 / 22 + 200.0 * 5 / 35) / 2, 1e-12);
  const std::vector<double> x = {1, 3, 2, 6, 4};
  EXPECT_DOUBLE_EQ(mase_scale(x, 2), 2.0);  // |2−1|, |6−3|, |4−2|
  EXPECT_DOUBLE_EQ(mase_scale(x, 1), 2.25);
  EXPECT_DOUBLE_EQ(mase_scale(x, 9), 2.25);  // n ≤ m: falls back to lag 1
  EXPECT_DOUBLE_EQ(mase(y, y_hat, x, 2), 1.75);
  // Both zero counts 0; one zero gives the maximum 200.
  EXPECT_DOUBLE_EQ(smape(std::vector<double>{0, 0}, std::vector<double>{0, 1}), 100.0);
}

TEST(Metrics, SeasonalNaiveRepeatsTheLastSeason) {
  const std::vector<double> x = {1, 3, 2, 6, 4};
  std::vector<double> out(5);
  seasonal_naive(x, 2, out);
  EXPECT_EQ(out, (std::vector<double>{6, 4, 6, 4, 6}));
  seasonal_naive(x, 3, out);
  EXPECT_EQ(out, (std::vector<double>{2, 6, 4, 2, 6}));
  naive(x, out);
  EXPECT_EQ(out, (std::vector<double>{4, 4, 4, 4, 4}));
  seasonal_naive(x, 12, out);  // shorter than a season: the last value
  EXPECT_EQ(out, (std::vector<double>{4, 4, 4, 4, 4}));
}

TEST(Metrics, AccumulatorSkipsZeroScales) {
  ScoreAccumulator acc;
  acc.add(std::vector<double>{10, 20}, std::vector<double>{12, 15},
          std::vector<double>{1, 3, 2, 6, 4}, 2);
  acc.add(std::vector<double>{1}, std::vector<double>{2}, std::vector<double>{5, 5, 5}, 1);
  EXPECT_EQ(acc.n, 2);
  EXPECT_EQ(acc.mase_skipped, 1);
  EXPECT_DOUBLE_EQ(acc.mae(), (3.5 + 1) / 2);
  EXPECT_DOUBLE_EQ(acc.mase(), 1.75);
}

TEST(Forecast, RegistryAndSeasonalNaiveOnAPanel) {
  const auto set = data::parse_series("unique_id,ds,y\na,1,1\na,2,3\na,3,2\na,4,6\n", "t.csv");
  const data::Panel p(set, {0}, {});
  const ForecastJob job = forecast_job("seasonal_naive", {{"h", 3}, {"seasonality", 2}});
  EXPECT_EQ(fit_forecast(p, job).forecasts, (std::vector<double>{2, 6, 2}));
  EXPECT_THROW(forecast_model("nope"), Error);
  EXPECT_TRUE(forecast_model("tsmixerx").neural);
  EXPECT_FALSE(forecast_model("naive").neural);
}

TEST(TrainBatcher, NoAllocationPerStep) {
  std::string text = "unique_id,ds,y,x,f\n";
  for (const char* id : {"a", "b", "c"})
    for (int t = 1; t <= 60; ++t)
      text += fmt::format("{},{},{},{},{}\n", id, t, t % 7, t * 0.5, t % 3);
  const auto set = data::parse_series(text, "t.csv");
  const data::Panel p(set, {0, 1, 2}, {.hist = {"x"}, .futr = {"f"}});
  data::TrainBatcher batcher(p, {.input_size = 12, .h = 4, .scaler = data::ScalerType::kRobust}, 3);
  batcher.next();  // warm-up
  testing::AllocCounter counter;
  for (int i = 0; i < 20; ++i) batcher.next();
  EXPECT_EQ(counter.count(), 0);
}

}  // namespace metrics_test
}  // namespace shoal::train
