#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "data/ts_test_util.h"
#include "shoal/data/gzip.h"
#include "shoal/data/timeseries.h"

namespace shoal::data {
namespace timeseries_test {

using testing::error_of;
using testing::write_gzip;
using testing::write_text;

std::string parse_error(const std::string& text) {
  return error_of([&] { parse_series(text, "t.csv"); });
}

TEST(Series, ReadsLongFormatSortedById) {
  const auto s = parse_series(
      "unique_id,ds,y,temp\nb,3,1.5,10\nb,4,2.5,11\na,1,7,0\na,2,8,1\na,3,9,2\n", "t.csv");
  ASSERT_EQ(s.n_series(), 2);
  EXPECT_EQ(s.ids[0], "a");
  EXPECT_EQ(s.ids[1], "b");
  EXPECT_EQ(s.length(0), 3);
  EXPECT_EQ(s.length(1), 2);
  EXPECT_EQ(s.time_kind, TimeKind::kInteger);
  EXPECT_DOUBLE_EQ(s.y_of(0)[2], 9.0);
  EXPECT_EQ(s.ds_of(1)[0], 3);
  ASSERT_EQ(s.exog_names.size(), 1u);
  EXPECT_EQ(s.exog_names[0], "temp");
  EXPECT_DOUBLE_EQ(s.exog[0][size_t(s.begin(1))], 10.0);
  EXPECT_EQ(s.exog_column("temp"), 0);
  EXPECT_EQ(s.find("b"), 1);
  EXPECT_EQ(s.find("c"), -1);
}

TEST(Series, InterleavedRowsAndColumnOrder) {
  const auto s = parse_series("y,ds,unique_id\n1,1,x\n5,1,w\n2,2,x\n6,2,w\n", "t.csv");
  ASSERT_EQ(s.n_series(), 2);
  EXPECT_EQ(s.ids[0], "w");
  EXPECT_DOUBLE_EQ(s.y_of(0)[1], 6.0);
  EXPECT_DOUBLE_EQ(s.y_of(1)[1], 2.0);
}

TEST(Series, TimestampsAndFrequencies) {
  const auto h = parse_series(
      "unique_id,ds,y\nA,2016-07-01 00:00:00,1\nA,2016-07-01 01:00:00,2\nA,2016-07-01 "
      "02:00:00,3\n",
      "t.csv");
  EXPECT_EQ(h.time_kind, TimeKind::kTimestamp);
  EXPECT_FALSE(h.date_only);
  EXPECT_EQ(h.freq[0].str(), "1h");
  EXPECT_EQ(h.freq[0].season_length(), 24);
  EXPECT_EQ(format_ds(advance(h.ds[2], h.freq[0]), h.time_kind, false), "2016-07-01 03:00:00");

  const auto m =
      parse_series("unique_id,ds,y\nA,2019-11-01,1\nA,2019-12-01,2\nA,2020-01-01,3\n", "t.csv");
  EXPECT_TRUE(m.date_only);
  EXPECT_EQ(m.freq[0].unit, Frequency::Unit::kMonths);
  EXPECT_EQ(m.freq[0].season_length(), 12);
  EXPECT_EQ(format_ds(advance(m.ds[2], m.freq[0], 2), m.time_kind, true), "2020-03-01");

  const auto me =
      parse_series("unique_id,ds,y\nA,2019-12-31,1\nA,2020-01-31,2\nA,2020-02-29,3\n", "t.csv");
  EXPECT_TRUE(me.freq[0].month_end);
  EXPECT_EQ(format_ds(advance(me.ds[2], me.freq[0]), me.time_kind, true), "2020-03-31");

  const auto q =
      parse_series("unique_id,ds,y\nA,2019-10-01,1\nA,2020-01-01,2\nB,2020-01-01,5\n", "t.csv");
  EXPECT_EQ(q.freq[0].season_length(), 4);
  EXPECT_EQ(q.freq[1], q.freq[0]);  // a 1-row series borrows a neighbour's frequency

  const auto d =
      parse_series("unique_id,ds,y\nA,2020-02-28,1\nA,2020-02-29,2\nA,2020-03-01,3\n", "t.csv");
  EXPECT_EQ(d.freq[0].str(), "1d");
  const auto qm = parse_series(
      "unique_id,ds,y\nA,2020-01-01 00:00,1\nA,2020-01-01 00:15,2\nA,2020-01-01T00:30:00,3\n",
      "t.csv");
  EXPECT_EQ(qm.freq[0].season_length(), 96);
}

TEST(Series, RejectsBadFilesWithLocation) {
  EXPECT_EQ(parse_error(""), "t.csv: empty file (expected a header line and rows, got nothing)");
  EXPECT_EQ(parse_error("unique_id,ds,y\n"),
            "t.csv:1: no data rows (expected at least one row after the header, got only the "
            "header)");
  EXPECT_EQ(parse_error("unique_id,y\na,1\n"),
            "t.csv:1: field 'ds': missing column 'ds' (expected a header with unique_id, ds and "
            "y, got 'unique_id,y')");
  EXPECT_EQ(parse_error("unique_id,ds,y,y\na,1,2,3\n"),
            "t.csv:1:4: field 'y': duplicated column name");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,1,2\na,2\n"),
            "t.csv:3: wrong number of fields (expected 3 fields, got 2)");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,1,2\na,2,abc\n"),
            "t.csv:3:3: field 'y': not a finite number (expected a finite number, got 'abc')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,1,nan\n"),
            "t.csv:2:3: field 'y': not a finite number (expected a finite number, got 'nan')");
  EXPECT_EQ(parse_error("unique_id,ds,y,x\na,1,1,inf\n"),
            "t.csv:2:4: field 'x': not a finite number (expected a finite number, got 'inf')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,1,2\na,1,3\n"),
            "t.csv:3:2: field 'ds': duplicate (unique_id, ds) for series 'a' (expected one row "
            "per (unique_id, ds), got '1')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,2,2\na,1,3\n"),
            "t.csv:3:2: field 'ds': ds not ascending in series 'a' (expected a ds after 2, got "
            "'1')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,1,2\na,3,3\n"),
            "t.csv:3:2: field 'ds': gap in series 'a' (expected 2 (1 step after 1), got '3')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,2020-01-01,2\na,2020-01-02,3\na,2020-01-04,1\n"),
            "t.csv:4:2: field 'ds': gap in series 'a' (expected 2020-01-03 (1d after "
            "2020-01-02), got '2020-01-04')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,1,2\na,2020-01-02,3\n"),
            "t.csv:3:2: field 'ds': bad value (expected an integer step (as on the first row), "
            "got '2020-01-02')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,2020-13-01,2\n"),
            "t.csv:2:2: field 'ds': bad value (expected a timestamp YYYY-MM-DD[ HH:MM:SS], got "
            "'2020-13-01')");
  EXPECT_EQ(parse_error("unique_id,ds,y\n,1,2\n"),
            "t.csv:2:1: field 'unique_id': bad value (expected a non-empty id, got '')");
  EXPECT_EQ(parse_error("unique_id,ds,y\na,1,2\n\na,2,2\n"),
            "t.csv:3: blank line inside the table (expected a data row, got an empty line)");
}

TEST(Series, ChecksMinimumLength) {
  const auto s = parse_series("unique_id,ds,y\na,1,1\na,2,2\na,3,3\nb,1,1\nb,2,2\n", "t.csv");
  EXPECT_NO_THROW(check_min_length(s, 2, "input_size + h = 2"));
  EXPECT_EQ(error_of([&] { check_min_length(s, 3, "input_size + h = 3"); }),
            "t.csv: field 'unique_id': series 'b' is too short (expected at least 3 rows "
            "(input_size + h = 3), got 2 rows)");
}

TEST(Series, ReadsGzipAndRejectsTruncatedGzip) {
  std::string text = "unique_id,ds,y\n";
  for (int i = 1; i <= 2000; ++i)
    text += "s1," + std::to_string(i) + "," + std::to_string(i * 3) + "\n";
  const auto path = write_gzip("ok.csv.gz", text);
  const auto s = read_series(path);
  EXPECT_EQ(s.rows(), 2000);
  EXPECT_DOUBLE_EQ(s.y.back(), 6000.0);

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(is_gzip(bytes));
  const auto cut = write_text("cut.csv.gz", bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(error_of([&] { read_series(cut); }).find("truncated gzip file"), std::string::npos);
  std::string bad = bytes;
  bad[12] = static_cast<char>(bad[12] ^ 0x55);
  bad[13] = static_cast<char>(bad[13] ^ 0x55);
  const auto corrupt = write_text("bad.csv.gz", bad);
  EXPECT_NE(error_of([&] { read_series(corrupt); }), "no error");
  EXPECT_NE(error_of([&] { read_series(testing::temp_path("missing.csv")); }).find("cannot open"),
            std::string::npos);
}

TEST(StaticFeatures, ReadsAndAligns) {
  const auto t = parse_static("unique_id,size,region\nb,2,20\na,1,10\n", "s.csv");
  const auto s = parse_series("unique_id,ds,y\na,1,1\nb,1,1\n", "t.csv");
  const std::vector<Index> series = {0, 1};
  const std::vector<std::string> cols = {"region"};
  const auto m = static_matrix(t, s, series, cols);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_FLOAT_EQ(m[0], 10.0f);
  EXPECT_FLOAT_EQ(m[1], 20.0f);
  EXPECT_EQ(error_of([&] { parse_static("unique_id,a\nx,1\nx,2\n", "s.csv"); }),
            "s.csv:3:1: field 'unique_id': duplicate unique_id (expected one row per series, got "
            "'x')");
  EXPECT_EQ(error_of([&] { parse_static("a,b\n1,2\n", "s.csv"); }),
            "s.csv:1: field 'unique_id': missing column 'unique_id' (expected a header with "
            "unique_id and feature columns, got 'a,b')");
  const auto t2 = parse_static("unique_id,size\na,1\n", "s.csv");
  EXPECT_NE(error_of([&] {
              static_matrix(t2, s, series, std::vector<std::string>{"size"});
            }).find("series 'b' has no static features"),
            std::string::npos);
}

TEST(Forecasts, WritesContinuingDs) {
  const auto m = parse_series(
      "unique_id,ds,y\nA,2019-11-30,1\nA,2019-12-31,2\nB,2019-11-30,3\nB,2019-12-31,4\n", "t.csv");
  const std::vector<Index> series = {0, 1};
  const std::vector<double> v = {1.5, 2.5, 3.5, 4.5};
  const auto path = testing::temp_path("fc.csv");
  write_forecasts(path, m, series, 2, "SeasonalNaive", v);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "unique_id,ds,SeasonalNaive\nA,2020-01-31,1.5\nA,2020-02-29,2.5\nB,2020-01-31,3.5\n"
            "B,2020-02-29,4.5\n");
}

TEST(Series, RealFilesParseQuickly) {
  const auto m3 = testing::ts_data("m3_monthly_train.csv.gz");
  if (m3.empty()) GTEST_SKIP() << "SHOAL_DATA not set or data absent";
  const auto t0 = std::chrono::steady_clock::now();
  const auto s = read_series(m3);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.n_series(), 1428);
  EXPECT_EQ(s.rows(), 141858);
  EXPECT_EQ(s.min_length(), 48);
  EXPECT_EQ(s.max_length(), 126);
  EXPECT_TRUE(std::is_sorted(s.ids.begin(), s.ids.end()));
  RecordProperty("m3_monthly_read_s", std::to_string(secs));
  const auto ett = testing::ts_data("etth1.csv.gz");
  if (ett.empty()) return;
  const auto e = read_series(ett);
  EXPECT_EQ(e.n_series(), 7);
  EXPECT_EQ(e.length(0), 17420);
  EXPECT_EQ(e.freq[0].str(), "1h");
  EXPECT_EQ(format_ds(e.ds[0], e.time_kind, e.date_only), "2016-07-01 00:00:00");
}

}  // namespace timeseries_test
}  // namespace shoal::data
