#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "data/ts_test_util.h"
#include "shoal/data/windows.h"

namespace shoal::data {
namespace windows_test {

using testing::error_of;

// a: y = 1..6 (x = 10·y), b: y = 101..103 (x = 10·y) over the last 3 positions.
SeriesSet two_series() {
  return parse_series(
      "unique_id,ds,y,x,f\n"
      "b,4,101,1010,-1\nb,5,102,1020,-2\nb,6,103,1030,-3\n"
      "a,1,1,10,1\na,2,2,20,2\na,3,3,30,3\na,4,4,40,4\na,5,5,50,5\na,6,6,60,6\n",
      "t.csv");
}

TEST(Windows, SingleSeriesTrainingWindowsMatchNeuralforecast) {
  const auto set = two_series();
  const Panel p(set, {0}, {});
  EXPECT_EQ(p.length(), 6);
  const WindowConfig c{.input_size = 2, .h = 2};
  // T - L = 4 windows; the last has one real horizon point.
  EXPECT_EQ(train_window_starts(p, c), (std::vector<Index>{0, 1, 2, 3}));
  WindowAssembler a(p, c, 4);
  const std::vector<Index> starts = {3, 0};
  const auto& b = a.assemble(starts, train_end(p, c));
  EXPECT_EQ(b.insample_y.shape, (Shape{2, 2, 1}));
  EXPECT_EQ(std::vector<float>(b.insample_y.begin(), b.insample_y.end()),
            (std::vector<float>{4, 5, 1, 2}));
  EXPECT_EQ(std::vector<float>(b.outsample_y.begin(), b.outsample_y.end()),
            (std::vector<float>{6, 0, 3, 4}));
  EXPECT_EQ(std::vector<float>(b.outsample_mask.begin(), b.outsample_mask.end()),
            (std::vector<float>{1, 0, 1, 1}));
  // step_size 2, and val/test cut the training span.
  EXPECT_EQ(train_window_starts(p, {.input_size = 2, .h = 2, .step_size = 2}),
            (std::vector<Index>{0, 2}));
  EXPECT_EQ(train_window_starts(p, {.input_size = 2, .h = 1, .val_size = 2}),
            (std::vector<Index>{0, 1}));
  // start padding: L - 1 zeros on the left give windows that start before the data.
  EXPECT_EQ(train_window_starts(p, {.input_size = 3, .h = 1, .start_padding = true}).front(), -2);
  EXPECT_EQ(error_of([&] { train_window_starts(p, {.input_size = 6, .h = 2, .val_size = 2}); }),
            "t.csv: field 'input_size': time series is too short for training (expected at least "
            "6 training rows (input_size 6 without start padding), got 4 rows)");
}

TEST(Windows, MissingRowsReadAsPaddingAndLeaveWindowsWithoutObservedPoints) {
  auto set = two_series();
  // a (series 0, rows 0..5): positions 2 and 3 (y 3 and 4) missing, y NaN at one of them.
  set.available.assign(size_t(set.rows()), 1);
  set.available[2] = set.available[3] = 0;
  set.y[2] = std::nan("");
  const Panel p(set, {0}, {.hist = {"x"}});
  EXPECT_EQ(p.y()[2], 0.0f);
  EXPECT_EQ(p.y()[3], 0.0f);
  EXPECT_EQ(p.mask()[2], 0.0f);
  EXPECT_EQ(p.mask()[3], 0.0f);
  EXPECT_EQ(p.mask()[4], 1.0f);
  EXPECT_EQ(p.mask_sum(0, 6, 6), 4.0);
  // The exogenous values of a missing row stay: only y is missing.
  WindowAssembler a(p, {.input_size = 2, .h = 1}, 1);
  const std::vector<Index> starts = {2};
  const auto& b = a.assemble(starts, 6);
  EXPECT_EQ(std::vector<float>(b.hist_exog.begin(), b.hist_exog.end()),
            (std::vector<float>{30, 40}));
  EXPECT_EQ(std::vector<float>(b.insample_mask.begin(), b.insample_mask.end()),
            (std::vector<float>{0, 0}));
  // Windows 0 and 1 have no observed horizon point, window 2 no observed insample point.
  EXPECT_EQ(train_window_starts(p, {.input_size = 2, .h = 1}), (std::vector<Index>{3}));
  // Every row available equals no mask at all.
  auto all = two_series();
  all.available.assign(size_t(all.rows()), 1);
  EXPECT_EQ(Panel(all, {0, 1}, {}).mask(), Panel(two_series(), {0, 1}, {}).mask());
}

TEST(Windows, MultivariateLeftPaddingAndValidity) {
  const auto set = two_series();
  const Panel p(set, {0, 1}, {.hist = {"x"}, .futr = {"f"}});
  ASSERT_EQ(p.length(), 6);
  // b is left-padded: zeros with mask 0 over positions 0..2.
  EXPECT_EQ(p.mask()[2 * 2 + 1], 0.0f);
  EXPECT_EQ(p.mask()[3 * 2 + 1], 1.0f);
  const WindowConfig c{.input_size = 2, .h = 1};
  EXPECT_EQ(train_window_starts(p, c), (std::vector<Index>{0, 1, 2, 3}));
  WindowConfig strict = c;
  strict.min_insample_fraction = 1.0;  // int(2·1·2) = 4 real insample points
  EXPECT_EQ(train_window_starts(p, strict), (std::vector<Index>{3}));

  WindowAssembler a(p, c, 2);
  const std::vector<Index> starts = {2};
  const std::vector<Index> order = {1, 0};
  const auto& b = a.assemble(starts, train_end(p, c), false, order);
  EXPECT_EQ(b.N, 2);
  // [B=1, L=2, N=2], N axis holds (b, a).
  EXPECT_EQ(std::vector<float>(b.insample_y.begin(), b.insample_y.end()),
            (std::vector<float>{0, 3, 101, 4}));
  EXPECT_EQ(std::vector<float>(b.insample_mask.begin(), b.insample_mask.end()),
            (std::vector<float>{0, 1, 1, 1}));
  EXPECT_EQ(b.hist_exog.shape, (Shape{1, 1, 2, 2}));
  EXPECT_EQ(std::vector<float>(b.hist_exog.begin(), b.hist_exog.end()),
            (std::vector<float>{0, 30, 1010, 40}));
  EXPECT_EQ(b.futr_exog.shape, (Shape{1, 1, 3, 2}));
  EXPECT_EQ(std::vector<float>(b.futr_exog.begin(), b.futr_exog.end()),
            (std::vector<float>{0, 3, -1, 4, -2, 5}));
}

TEST(Windows, ValidationPredictAndCrossValidation) {
  std::string text = "unique_id,ds,y\n";
  for (int t = 1; t <= 10; ++t) text += "s," + std::to_string(t) + "," + std::to_string(t) + "\n";
  const auto set = parse_series(text, "t.csv");
  const Panel p(set, {0}, {});
  const WindowConfig c{.input_size = 3, .h = 2, .val_size = 4};
  EXPECT_EQ(val_window_starts(p, c), (std::vector<Index>{3, 4, 5}));  // (4 − 2)/1 + 1
  // A series shorter than L + val_size: neuralforecast keeps what there is.
  EXPECT_EQ(val_window_starts(p, {.input_size = 8, .h = 2, .val_size = 4}),
            (std::vector<Index>{0}));
  // Shorter than one window: left-padded to L + val_size.
  EXPECT_EQ(val_window_starts(p, {.input_size = 9, .h = 2, .val_size = 2}),
            (std::vector<Index>{-1}));
  EXPECT_EQ(predict_window_start(p, c), 7);
  EXPECT_EQ(cv_window_starts(p, {.input_size = 3, .h = 2, .step_size = 2}, 3),
            (std::vector<Index>{1, 3, 5}));
  // The predict window: last L values; left-padded when the series is shorter than L.
  WindowAssembler a(p, {.input_size = 12, .h = 2}, 1);
  const std::vector<Index> s = {predict_window_start(p, {.input_size = 12, .h = 2})};
  const auto& b = a.assemble(s, p.length());
  EXPECT_EQ(b.insample_y.data[0], 0.0f);
  EXPECT_EQ(b.insample_mask.data[1], 0.0f);
  EXPECT_EQ(b.insample_y.data[2], 1.0f);
  EXPECT_EQ(b.insample_y.data[11], 10.0f);
}

TEST(Windows, PredictUsesFutureExogenousRows) {
  const auto set = parse_series("unique_id,ds,y,f\na,1,1,10\na,2,2,20\na,3,3,30\n", "t.csv");
  const auto futr = parse_series("unique_id,ds,f\na,4,40\na,5,50\n", "f.csv", false);
  const Panel p(set, {0}, {.futr = {"f"}}, nullptr, &futr, 2);
  const WindowConfig c{.input_size = 2, .h = 2};
  WindowAssembler a(p, c, 1);
  const std::vector<Index> s = {predict_window_start(p, c)};
  const auto& b = a.assemble(s, p.length(), true);
  EXPECT_EQ(std::vector<float>(b.futr_exog.begin(), b.futr_exog.end()),
            (std::vector<float>{20, 30, 40, 50}));
  const auto bad = parse_series("unique_id,ds,f\na,5,40\na,6,50\n", "f.csv", false);
  EXPECT_NE(error_of([&] {
              Panel(set, {0}, {.futr = {"f"}}, nullptr, &bad, 2);
            }).find("futr_df lacks the 2 future rows of series 'a'"),
            std::string::npos);
}

TEST(Windows, StaticFeaturesFollowTheSeriesOrder) {
  const auto set = two_series();
  const auto st = parse_static("unique_id,s1,s2\na,1,2\nb,3,4\n", "s.csv");
  const Panel p(set, {0, 1}, {.stat = {"s2", "s1"}}, &st);
  WindowAssembler a(p, {.input_size = 2, .h = 1}, 1);
  const std::vector<Index> s = {0};
  const std::vector<Index> order = {1, 0};
  const auto& b = a.assemble(s, 6, false, order);
  EXPECT_EQ(std::vector<float>(b.stat_exog.begin(), b.stat_exog.end()),
            (std::vector<float>{4, 3, 2, 1}));
}

TEST(Windows, ScaledBatchAndInverse) {
  const auto set = two_series();
  const Panel p(set, {0}, {.hist = {"x"}});
  const WindowConfig c{.input_size = 4, .h = 2, .scaler = ScalerType::kStandard};
  WindowAssembler a(p, c, 1);
  const std::vector<Index> s = {0};
  const auto& b = a.assemble(s, 6);
  const float sd = std::sqrt(1.25f) + 1e-6f;  // of 1, 2, 3, 4
  EXPECT_FLOAT_EQ(b.y_shift.data[0], 2.5f);
  EXPECT_FLOAT_EQ(b.y_scale.data[0], sd);
  EXPECT_FLOAT_EQ(b.insample_y.data[0], (1 - 2.5f) / sd);
  EXPECT_FLOAT_EQ(b.outsample_y.data[1], (6 - 2.5f) / sd);
  EXPECT_FLOAT_EQ(b.outsample_y_raw.data[1], 6.0f);
  EXPECT_NEAR(b.hist_exog.data[3], (40 - 25.0f) / (10 * std::sqrt(1.25f) + 1e-6f), 1e-5);
  float y_hat[2] = {b.outsample_y.data[0], b.outsample_y.data[1]};
  a.inverse_scale(y_hat);
  EXPECT_NEAR(y_hat[0], 5.0f, 1e-5);
  EXPECT_NEAR(y_hat[1], 6.0f, 1e-5);
}

TEST(Sampler, WithoutReplacementWhenEnoughWindows) {
  std::vector<Index> valid(100);
  for (Index i = 0; i < 100; ++i) valid[size_t(i)] = 3 * i;
  WindowSampler s(valid, 32, 4, true, 7);
  std::vector<int> count(300, 0);
  for (int step = 0; step < 2000; ++step) {
    s.next();
    std::set<Index> distinct(s.starts().begin(), s.starts().end());
    ASSERT_EQ(distinct.size(), 32u);
    for (Index w : s.starts()) {
      ASSERT_EQ(w % 3, 0);
      ++count[size_t(w)];
    }
    std::vector<Index> order(s.series_order().begin(), s.series_order().end());
    std::sort(order.begin(), order.end());
    ASSERT_EQ(order, (std::vector<Index>{0, 1, 2, 3}));
  }
  // Each window is drawn with probability 0.32 per step: 640 ± 5·sqrt(2000·0.32·0.68).
  for (Index i = 0; i < 100; ++i) EXPECT_NEAR(count[size_t(3 * i)], 640, 105);
}

TEST(Sampler, WithReplacementWhenFewWindowsAndAllWhenUnbounded) {
  WindowSampler s({5, 6, 7}, 32, 1, true, 1);
  std::vector<int> count(8, 0);
  for (int step = 0; step < 300; ++step) {
    s.next();
    ASSERT_EQ(s.starts().size(), 32u);
    for (Index w : s.starts()) ++count[size_t(w)];
    ASSERT_EQ(s.series_order().size(), 1u);
  }
  for (Index w = 5; w <= 7; ++w) EXPECT_NEAR(count[size_t(w)], 3200, 200);
  WindowSampler all({5, 6, 7}, 0, 2, false, 1);
  all.next();
  EXPECT_EQ(std::vector<Index>(all.starts().begin(), all.starts().end()),
            (std::vector<Index>{5, 6, 7}));
  EXPECT_EQ(std::vector<Index>(all.series_order().begin(), all.series_order().end()),
            (std::vector<Index>{0, 1}));
}

TEST(Sampler, TrainBatcherIsDeterministicPerSeed) {
  const auto set = two_series();
  const Panel p(set, {0, 1}, {});
  const WindowConfig c{.input_size = 2, .h = 1, .windows_batch_size = 3};
  TrainBatcher b1(p, c, 11), b2(p, c, 11);
  for (int i = 0; i < 5; ++i) {
    const auto& x = b1.next();
    const auto& y = b2.next();
    ASSERT_TRUE(std::equal(x.insample_y.begin(), x.insample_y.end(), y.insample_y.begin()));
    ASSERT_TRUE(std::equal(x.series_order.begin(), x.series_order.end(), y.series_order.begin()));
  }
  EXPECT_EQ(b1.n_valid(), 4);
}

}  // namespace windows_test
}  // namespace shoal::data
