// Long-format time-series tables: `unique_id, ds, y` plus exogenous columns, as neuralforecast
// takes them. A SeriesSet holds the series sorted by id (neuralforecast sorts by unique_id),
// each one a contiguous run of rows: ds, y and every exogenous column.
//
// ds is either an integer step (…, 7, 8, 9) or a timestamp `YYYY-MM-DD[ HH:MM[:SS]]` (a 'T'
// separator is accepted), stored as seconds since 1970-01-01 UTC. Rows of one series must be
// ascending in ds with no gaps: integer steps advance by exactly 1; timestamps advance by the
// series' frequency, inferred from its first two rows (a fixed number of seconds, or a number
// of calendar months for monthly, quarterly and yearly data, including month-end dates).
// Files may be gzip-compressed (detected by the magic bytes). Bad input is a shoal::Error
// naming the file, line, column, field, expected and found.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::data {

enum class TimeKind : uint8_t { kInteger, kTimestamp };

// Distance between consecutive ds of a series.
struct Frequency {
  enum class Unit : uint8_t { kStep, kSeconds, kMonths };
  Unit unit = Unit::kStep;
  int64_t n = 1;           // steps, seconds or months per period
  bool month_end = false;  // kMonths: dates sit on the last day of their month

  bool operator==(const Frequency&) const = default;
  // "1 step", "1h", "15min", "1d", "7d", "1mo", "3mo", "12mo".
  std::string str() const;
  // The usual seasonal period: hourly 24, 15-min 96, daily 7, weekly 52, monthly 12,
  // quarterly 4, yearly and integer steps 1.
  Index season_length() const;
};

// ds one period after `ds` (k periods when k > 1).
int64_t advance(int64_t ds, const Frequency& f, Index k = 1);
// "2016-07-01 00:00:00" (or "2016-07-01" when `date_only`); integers as decimal text.
std::string format_ds(int64_t ds, TimeKind kind, bool date_only);
// Parses one ds field; returns false when it is neither form.
bool parse_timestamp(std::string_view s, int64_t& seconds, bool& date_only);

struct SeriesSet {
  std::string source;  // file it was read from, for error messages
  TimeKind time_kind = TimeKind::kInteger;
  bool date_only = true;                  // every timestamp had no time of day
  std::vector<std::string> ids;           // sorted ascending (byte order)
  std::vector<Index> offsets;             // [n_series + 1] row ranges
  std::vector<Frequency> freq;            // [n_series]; a 1-row series gets its neighbours' one
  std::vector<int64_t> ds;                // [rows]
  std::vector<double> y;                  // [rows]
  std::vector<std::string> exog_names;    // every column besides unique_id, ds, y, file order
  std::vector<std::vector<double>> exog;  // [exog][rows]
  // [rows] 1 where y was observed, 0 where it is missing (neuralforecast's available_mask);
  // empty: every row observed. A missing row reads like padding: y 0 with mask 0.
  std::vector<uint8_t> available;
  // [rows] neuralforecast's sample_weight column: a training or validation window's loss terms
  // are weighted by the mean of its output rows' weights (rows past the data count 0). Empty:
  // no weights.
  std::vector<double> sample_weight;

  Index n_series() const { return static_cast<Index>(ids.size()); }
  Index rows() const { return static_cast<Index>(ds.size()); }
  Index length(Index s) const { return offsets[s + 1] - offsets[s]; }
  Index begin(Index s) const { return offsets[s]; }
  std::span<const double> y_of(Index s) const { return {y.data() + offsets[s], size_t(length(s))}; }
  std::span<const int64_t> ds_of(Index s) const {
    return {ds.data() + offsets[s], size_t(length(s))};
  }
  // Index of an exogenous column; throws naming the available ones.
  Index exog_column(const std::string& name) const;
  // Index of a series by id, or -1.
  Index find(std::string_view id) const;
  Index max_length() const;
  Index min_length() const;
};

// Reads a long-format CSV (or CSV.gz) file. Without `require_y` (a futr_df), a missing y
// column reads as zeros.
SeriesSet read_series(const std::string& path, bool require_y = true);
// Same, from text in memory (`source` names it in errors).
SeriesSet parse_series(const std::string& text, const std::string& source, bool require_y = true);

// Throws unless every series has at least `need` rows (`why` says which setting needs them,
// e.g. "input_size + h = 30").
void check_min_length(const SeriesSet& set, Index need, const std::string& why);

// Static features: `unique_id` plus numeric columns, one row per id.
struct StaticTable {
  std::string source;
  std::vector<std::string> columns;  // without unique_id
  std::vector<std::string> ids;      // file order
  std::vector<double> values;        // [ids, columns]
  Index cols() const { return static_cast<Index>(columns.size()); }
};
StaticTable read_static(const std::string& path);
StaticTable parse_static(const std::string& text, const std::string& source);
// The chosen columns for the chosen series, as float [series.size(), columns.size()]; throws
// when a series has no row or a column is missing.
std::vector<float> static_matrix(const StaticTable& table, const SeriesSet& set,
                                 std::span<const Index> series,
                                 std::span<const std::string> columns);

// Writes `unique_id,ds,<model>` for h steps after the end of each listed series;
// `values` is [series.size(), h]. Written atomically (core/file_io.h).
void write_forecasts(const std::string& path, const SeriesSet& set, std::span<const Index> series,
                     Index h, const std::string& model, std::span<const double> values);

}  // namespace shoal::data
