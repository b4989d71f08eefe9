// Global univariate windows: every series once per epoch in batch_size groups, valid windows
// only (their own series' points in both parts), a uniform draw, per-window scaling, and the
// neuralforecast rules for short batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "data/ts_test_util.h"
#include "shoal/data/global_windows.h"

namespace shoal::data {
namespace global_windows_test {

// Series i has 20 + 7·i rows: y = 100·i + t.
SeriesSet ragged(int n) {
  std::string csv = "unique_id,ds,y\n";
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < 20 + 7 * i; ++t) csv += fmt::format("s{:02},{},{}\n", i, t, 100 * i + t);
  return parse_series(csv, "ragged.csv");
}

std::vector<Index> all_series(const SeriesSet& s) {
  std::vector<Index> v(size_t(s.n_series()));
  for (Index i = 0; i < s.n_series(); ++i) v[size_t(i)] = i;
  return v;
}

TEST(GlobalWindows, EveryEpochCoversEverySeriesOnceInBatchSizeGroups) {
  const SeriesSet set = ragged(7);
  const Panel panel(set, all_series(set), {});
  const WindowConfig c{.input_size = 4, .h = 2, .windows_batch_size = 16, .batch_size = 3};
  GlobalBatcher b(panel, c, 5);
  std::vector<Index> first_epoch;
  for (int epoch = 0; epoch < 4; ++epoch) {
    std::vector<Index> seen;
    for (Index want : {3, 3, 1}) {  // 7 series: 3 + 3 + the short last batch
      b.next();
      ASSERT_EQ(Index(b.last_series().size()), want);
      seen.insert(seen.end(), b.last_series().begin(), b.last_series().end());
    }
    if (epoch == 0) first_epoch = seen;
    std::vector<Index> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, all_series(set)) << "epoch " << epoch;
    if (epoch == 3) {
      EXPECT_NE(seen, first_epoch) << "the permutation is redrawn every epoch";
    }
  }
}

TEST(GlobalWindows, PooledWindowsAreExactlyTheValidOnesOfTheBatchSeries) {
  const SeriesSet set = ragged(5);
  const Panel panel(set, all_series(set), {});
  const Index l = 6, h = 3;
  for (const bool pad : {false, true}) {
    const WindowConfig c{.input_size = l,
                         .h = h,
                         .step_size = 2,
                         .val_size = 3,
                         .start_padding = pad,
                         .min_insample_fraction = 0.5,
                         .min_outsample_fraction = 0.5,
                         .windows_batch_size = 4,
                         .batch_size = 2};
    GlobalBatcher b(panel, c, 9);
    const Index t = panel.length(), end = t - 3;
    for (int step = 0; step < 6; ++step) {
      b.next();
      Index longest = 0;
      for (Index k : b.last_series()) longest = std::max(longest, set.length(k));
      // The padded block of the batch, windows every step_size from its start.
      std::set<std::pair<Index, Index>> want;
      const Index first = (t - longest) - (pad ? l - 1 : 0);
      const Index padded = (pad ? l - 1 : 0) + (longest - 3) + h;
      for (Index k : b.last_series())
        for (Index q = 0; q + l + h <= padded; q += 2) {
          const Index s = first + q;
          Index in = 0, out = 0;
          for (Index p = s; p < s + l + h; ++p)
            if (p >= t - set.length(k) && p < end) (p < s + l ? in : out) += 1;
          if (in >= 3 && out >= 1) want.insert({k, s});
        }
      std::set<std::pair<Index, Index>> got;
      for (const SeriesWindow& w : b.last_pool()) got.insert({w.series, w.start});
      EXPECT_EQ(got, want) << "pad " << pad << " step " << step;
      for (const SeriesWindow& w : b.last_windows())
        EXPECT_TRUE(want.count({w.series, w.start})) << w.series << "@" << w.start;
    }
  }
}

TEST(GlobalWindows, DrawIsUniformWithoutReplacement) {
  // One batch of both series (27 and 20 rows, aligned at the end): 24 windows of the long one,
  // 19 of the short one (those starting up to 2 rows before it, in the batch's padding).
  const SeriesSet set = ragged(2);
  const Panel panel(set, all_series(set), {});
  const WindowConfig c{.input_size = 3, .h = 2, .windows_batch_size = 10, .batch_size = 2};
  GlobalBatcher b(panel, c, 3);
  std::map<std::pair<Index, Index>, int> count;
  const int steps = 4000;
  for (int i = 0; i < steps; ++i) {
    b.next();
    ASSERT_EQ(b.last_pool().size(), 43u);
    std::set<std::pair<Index, Index>> distinct;
    for (const SeriesWindow& w : b.last_windows()) {
      distinct.insert({w.series, w.start});
      ++count[{w.series, w.start}];
    }
    ASSERT_EQ(distinct.size(), 10u) << "drawn without replacement";
  }
  ASSERT_EQ(count.size(), 43u);
  const double expect = steps * 10.0 / 43.0;  // ≈ 930, binomial sd ≈ 27
  for (const auto& [w, k] : count) EXPECT_NEAR(k, expect, 6 * 27) << w.first << "@" << w.second;
}

TEST(GlobalWindows, FewerValidThanTheBatchDrawsWithReplacement) {
  const SeriesSet set = ragged(1);  // 20 rows, L 4, h 2: T - L = 16 windows
  std::vector<Index> one{0};
  const Panel panel(set, one, {});
  const WindowConfig c{.input_size = 4, .h = 2, .windows_batch_size = 40, .batch_size = 8};
  GlobalBatcher b(panel, c, 1);
  b.next();
  EXPECT_EQ(b.last_pool().size(), 16u);
  EXPECT_EQ(b.last_windows().size(), 40u);
  const WindowConfig all{.input_size = 4, .h = 2, .windows_batch_size = 0, .batch_size = 8};
  GlobalBatcher a(panel, all, 1);
  const WindowBatch& w = a.next();
  EXPECT_EQ(w.B, 16);
  for (Index i = 0; i < 16; ++i) EXPECT_EQ(a.last_windows()[size_t(i)].start, i);
}

TEST(GlobalWindows, EachWindowIsScaledByItsOwnInsampleStatistics) {
  const SeriesSet set = ragged(3);
  const Panel panel(set, all_series(set), {});
  const WindowConfig c{.input_size = 5,
                       .h = 2,
                       .windows_batch_size = 8,
                       .batch_size = 3,
                       .scaler = ScalerType::kStandard};
  GlobalBatcher b(panel, c, 2);
  const WindowBatch& w = b.next();
  ASSERT_EQ(w.N, 1);
  for (Index i = 0; i < w.B; ++i) {
    const SeriesWindow sw = b.last_windows()[size_t(i)];
    // Insample values of series k: y = 100·k + (position - first row), all real (no padding).
    const Index first_row = panel.length() - set.length(sw.series);
    double mean = 0, var = 0;
    for (Index t = 0; t < 5; ++t)
      mean += 100.0 * double(sw.series) + double(sw.start + t - first_row);
    mean /= 5;
    for (Index t = 0; t < 5; ++t) {
      const double d = 100.0 * double(sw.series) + double(sw.start + t - first_row) - mean;
      var += d * d / 5;
    }
    EXPECT_NEAR(w.y_shift.data[i], mean, 1e-3);
    EXPECT_NEAR(w.y_scale.data[i], std::sqrt(var) + kScalerEps, 1e-4);
    for (Index t = 0; t < 5; ++t)
      EXPECT_NEAR(w.insample_y.data[i * 5 + t], (double(t) - 2.0) / std::sqrt(var), 1e-4);
    EXPECT_NEAR(w.outsample_y_raw.data[i * 2],
                100.0 * double(sw.series) + double(sw.start + 5 - first_row), 1e-3);
  }
}

TEST(GlobalWindows, SameSeedSameBatchesAndABatchOfShortSeriesThrows) {
  const SeriesSet set = ragged(6);
  const Panel panel(set, all_series(set), {});
  const WindowConfig c{.input_size = 4, .h = 2, .windows_batch_size = 8, .batch_size = 2};
  GlobalBatcher a(panel, c, 11), b(panel, c, 11);
  for (int i = 0; i < 20; ++i) {
    a.next();
    b.next();
    ASSERT_TRUE(std::equal(
        a.last_windows().begin(), a.last_windows().end(), b.last_windows().begin(),
        b.last_windows().end(),
        [](SeriesWindow x, SeriesWindow y) { return x.series == y.series && x.start == y.start; }));
  }
  // L 24: only series 1.. (27+ rows) have a window; a batch of series 0 alone (20 rows) fails.
  const WindowConfig longer{.input_size = 24, .h = 2, .windows_batch_size = 8, .batch_size = 1};
  GlobalBatcher s(panel, longer, 1);
  bool threw = false;
  for (int i = 0; i < 6 && !threw; ++i) threw = testing::error_of([&] { s.next(); }) != "no error";
  EXPECT_TRUE(threw);
}

TEST(GlobalWindows, StaticRowsAreRepeatedPerWindowAndHistExogFollowsItsSeries) {
  std::string csv = "unique_id,ds,y,x\n", st = "unique_id,lvl,k\n";
  for (int i = 0; i < 4; ++i) {
    for (int t = 0; t < 20 + 3 * i; ++t)
      csv += fmt::format("s{},{},{},{}\n", i, t, 100 * i + t, 1000 * i + t);
    st += fmt::format("s{},{},{}\n", i, 7.5 * i, -i);
  }
  const SeriesSet set = parse_series(csv, "exog.csv");
  const StaticTable statics = parse_static(st, "static.csv");
  const Panel panel(set, all_series(set), {.hist = {"x"}, .stat = {"lvl", "k"}}, &statics);
  const WindowConfig c{.input_size = 4, .h = 2, .windows_batch_size = 12, .batch_size = 3};
  GlobalBatcher b(panel, c, 4);
  for (int step = 0; step < 5; ++step) {
    const WindowBatch& w = b.next();
    ASSERT_EQ(w.S, 2);
    ASSERT_EQ(w.X, 1);
    for (Index i = 0; i < w.B; ++i) {
      const SeriesWindow sw = b.last_windows()[size_t(i)];
      EXPECT_FLOAT_EQ(w.stat_exog.data[i * 2], 7.5f * float(sw.series));
      EXPECT_FLOAT_EQ(w.stat_exog.data[i * 2 + 1], -float(sw.series));
      const Index first_row = panel.length() - set.length(sw.series);
      for (Index t = 0; t < 4; ++t) {
        const Index pos = sw.start + t;
        const float want = pos >= first_row ? float(1000 * sw.series + pos - first_row) : 0.0f;
        EXPECT_FLOAT_EQ(w.hist_exog.data[i * 4 + t], want);
      }
    }
  }
}

}  // namespace global_windows_test
}  // namespace shoal::data
