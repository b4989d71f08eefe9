#include "shoal/data/timeseries.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "shoal/data/gzip.h"
#include "shoal/data/text.h"

namespace shoal::data {
namespace {

constexpr int64_t kDay = 86400;

// Days since 1970-01-01 of a proleptic Gregorian date (the usual era-based formula).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct Civil {
  int64_t y, m, d;
};
Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}
int64_t days_in_month(int64_t y, int64_t m) {
  static constexpr int64_t kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}
int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

bool parse_int(std::string_view s, int64_t& v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}
bool parse_double(std::string_view s, double& v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}
bool digits(std::string_view s, size_t pos, size_t n, int64_t& v) {
  if (pos + n > s.size()) return false;
  v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  return true;
}

// Splits a line into fields without allocating: `out` is reused across lines.
void split(std::string_view line, std::vector<std::string_view>& out) {
  split_csv(line, out);
}

// Iterates lines of a text buffer, counting them (1-based) and skipping trailing blank lines.
class LineReader {
 public:
  LineReader(std::string_view text, const std::string& source) : rest_(text), source_(source) {}
  bool next(std::string_view& line) {
    while (!rest_.empty()) {
      const size_t nl = csv_record_end(rest_);
      line = rest_.substr(0, nl);
      rest_ = nl == std::string_view::npos ? std::string_view{} : rest_.substr(nl + 1);
      line_no_ += 1 + std::count(line.begin(), line.end(), '\n');
      if (!trim(line).empty()) return true;
      if (trim(rest_).find_first_not_of("\r\n \t") == std::string_view::npos) return false;
      throw Error("blank line inside the table", ErrorContext{.file = source_,
                                                              .line = line_no_,
                                                              .expected = "a data row",
                                                              .actual = "an empty line"});
    }
    return false;
  }
  int64_t line_no() const { return line_no_; }

 private:
  std::string_view rest_;
  const std::string& source_;
  int64_t line_no_ = 0;
};

struct Header {
  std::vector<std::string> names;
  Index id = -1, ds = -1, y = -1;
  std::vector<Index> exog;  // field index of each exogenous column
};

Header parse_header(std::string_view line, const std::string& source, bool need_ds_y, bool need_y) {
  Header h;
  std::vector<std::string_view> f;
  split(line, f);
  for (size_t i = 0; i < f.size(); ++i) {
    const std::string name(f[i]);
    const auto col = static_cast<int64_t>(i) + 1;
    if (name.empty())
      throw Error("empty column name", ErrorContext{.file = source, .line = 1, .column = col});
    if (std::find(h.names.begin(), h.names.end(), name) != h.names.end())
      throw Error("duplicated column name",
                  ErrorContext{.file = source, .line = 1, .column = col, .field = name});
    h.names.push_back(name);
    const auto idx = static_cast<Index>(i);
    if (name == "unique_id")
      h.id = idx;
    else if (need_ds_y && name == "ds")
      h.ds = idx;
    else if (need_ds_y && name == "y")
      h.y = idx;
    else
      h.exog.push_back(idx);
  }
  const char* want = need_ds_y ? "unique_id, ds and y" : "unique_id";
  for (const char* c : {"unique_id", "ds", "y"}) {
    if (!need_ds_y && std::string_view(c) != "unique_id") continue;
    if (!need_y && std::string_view(c) == "y") continue;
    if (std::find(h.names.begin(), h.names.end(), c) == h.names.end())
      throw Error(fmt::format("missing column '{}'", c),
                  ErrorContext{.file = source,
                               .line = 1,
                               .field = c,
                               .expected = fmt::format("a header with {}", want),
                               .actual = fmt::format("'{}'", trim(line))});
  }
  return h;
}

[[noreturn]] void throw_empty(const std::string& source, bool header_seen, int64_t line) {
  if (!header_seen)
    throw Error(
        "empty file",
        ErrorContext{.file = source, .expected = "a header line and rows", .actual = "nothing"});
  throw Error("no data rows", ErrorContext{.file = source,
                                           .line = line,
                                           .expected = "at least one row after the header",
                                           .actual = "only the header"});
}

// Infers the step between the first two timestamps of a series.
Frequency infer_frequency(int64_t a, int64_t b) {
  const int64_t da = floor_div(a, kDay), db = floor_div(b, kDay);
  const Civil ca = civil_from_days(da), cb = civil_from_days(db);
  const int64_t months = (cb.y * 12 + cb.m) - (ca.y * 12 + ca.m);
  const bool same_time = a - da * kDay == b - db * kDay;
  if (same_time && months >= 1 && db - da >= 28) {
    if (ca.d == cb.d && ca.d <= 28) return {Frequency::Unit::kMonths, months, false};
    if (ca.d == days_in_month(ca.y, ca.m) && cb.d == days_in_month(cb.y, cb.m))
      return {Frequency::Unit::kMonths, months, true};
    if (ca.d == cb.d) return {Frequency::Unit::kMonths, months, false};
  }
  return {Frequency::Unit::kSeconds, b - a, false};
}

// Per-series state while reading, before sorting by id.
struct Pending {
  std::string id;
  Index rows = 0;
  int64_t last_ds = 0;
  Frequency freq;
  bool has_freq = false;
};

}  // namespace

std::string Frequency::str() const {
  switch (unit) {
    case Unit::kStep:
      return fmt::format("{} step", n);
    case Unit::kMonths:
      return fmt::format("{}mo{}", n, month_end ? " (month end)" : "");
    case Unit::kSeconds:
      if (n % kDay == 0) return fmt::format("{}d", n / kDay);
      if (n % 3600 == 0) return fmt::format("{}h", n / 3600);
      if (n % 60 == 0) return fmt::format("{}min", n / 60);
      return fmt::format("{}s", n);
  }
  return "?";
}

Index Frequency::season_length() const {
  switch (unit) {
    case Unit::kStep:
      return 1;
    case Unit::kMonths:
      return n == 1 ? 12 : n == 3 ? 4 : 1;
    case Unit::kSeconds:
      if (n == 7 * kDay) return 52;
      if (n == kDay) return 7;
      if (n > 0 && kDay % n == 0) return kDay / n;  // hourly 24, 15-min 96, ...
      return 1;
  }
  return 1;
}

int64_t advance(int64_t ds, const Frequency& f, Index k) {
  switch (f.unit) {
    case Frequency::Unit::kStep:
      return ds + f.n * k;
    case Frequency::Unit::kSeconds:
      return ds + f.n * k;
    case Frequency::Unit::kMonths: {
      const int64_t day = floor_div(ds, kDay);
      const int64_t tod = ds - day * kDay;
      const Civil c = civil_from_days(day);
      const int64_t m0 = c.y * 12 + (c.m - 1) + f.n * k;
      const int64_t y = floor_div(m0, 12), m = m0 - y * 12 + 1;
      const int64_t d = f.month_end ? days_in_month(y, m) : std::min(c.d, days_in_month(y, m));
      return days_from_civil(y, m, d) * kDay + tod;
    }
  }
  return ds;
}

std::string format_ds(int64_t ds, TimeKind kind, bool date_only) {
  if (kind == TimeKind::kInteger) return fmt::format("{}", ds);
  const int64_t day = floor_div(ds, kDay);
  const int64_t tod = ds - day * kDay;
  const Civil c = civil_from_days(day);
  if (date_only) return fmt::format("{:04d}-{:02d}-{:02d}", c.y, c.m, c.d);
  return fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}", c.y, c.m, c.d, tod / 3600,
                     tod / 60 % 60, tod % 60);
}

bool parse_timestamp(std::string_view s, int64_t& seconds, bool& date_only) {
  int64_t y = 0, m = 0, d = 0, hh = 0, mm = 0, ss = 0;
  if (!digits(s, 0, 4, y) || s.size() < 10 || s[4] != '-' || !digits(s, 5, 2, m) || s[7] != '-' ||
      !digits(s, 8, 2, d))
    return false;
  if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) return false;
  date_only = s.size() == 10;
  if (!date_only) {
    if (s.size() < 16 || (s[10] != ' ' && s[10] != 'T') || !digits(s, 11, 2, hh) || s[13] != ':' ||
        !digits(s, 14, 2, mm))
      return false;
    if (s.size() > 16) {
      if (s.size() != 19 || s[16] != ':' || !digits(s, 17, 2, ss)) return false;
    }
    if (hh > 23 || mm > 59 || ss > 59) return false;
  }
  seconds = days_from_civil(y, m, d) * kDay + hh * 3600 + mm * 60 + ss;
  return true;
}

Index SeriesSet::exog_column(const std::string& name) const {
  for (size_t i = 0; i < exog_names.size(); ++i)
    if (exog_names[i] == name) return static_cast<Index>(i);
  std::string have;
  for (const auto& c : exog_names) have += (have.empty() ? "" : ", ") + c;
  throw Error(fmt::format("no exogenous column named '{}'", name),
              ErrorContext{.file = source,
                           .field = name,
                           .expected = have.empty() ? "no exogenous columns in this file"
                                                    : "one of: " + have,
                           .actual = "no such column"});
}

Index SeriesSet::find(std::string_view id) const {
  const auto it = std::lower_bound(ids.begin(), ids.end(), id);
  return it != ids.end() && *it == id ? static_cast<Index>(it - ids.begin()) : -1;
}

Index SeriesSet::max_length() const {
  Index m = 0;
  for (Index s = 0; s < n_series(); ++s) m = std::max(m, length(s));
  return m;
}
Index SeriesSet::min_length() const {
  Index m = n_series() > 0 ? length(0) : 0;
  for (Index s = 0; s < n_series(); ++s) m = std::min(m, length(s));
  return m;
}

namespace {

// One pass over the rows in file order: values go to flat arrays (file order), each row
// remembers its series; ordering and gaps are checked per series as rows arrive.
class SeriesParser {
 public:
  SeriesParser(const std::string& source, const Header& h) : source_(source), h_(h) {
    exog_.resize(h.exog.size());
  }

  void row(std::string_view line, int64_t line_no) {
    // The ids are keys of index_ and last_id_ across rows: decoded ones live in decoded_.
    split_csv(line, f_, decoded_);
    if (f_.size() != h_.names.size())
      throw Error("wrong number of fields",
                  ErrorContext{.file = source_,
                               .line = line_no,
                               .expected = fmt::format("{} fields", h_.names.size()),
                               .actual = fmt::format("{}", f_.size())});
    const std::string_view id = f_[static_cast<size_t>(h_.id)];
    if (id.empty()) fail(line_no, h_.id, "a non-empty id", id);
    if (id != last_id_ || pending_.empty()) {
      auto [it, fresh] = index_.try_emplace(id, static_cast<int32_t>(pending_.size()));
      if (fresh) pending_.push_back(Pending{.id = std::string(id)});
      cur_ = it->second;
      last_id_ = id;
    }
    const int64_t ds = parse_ds(f_[static_cast<size_t>(h_.ds)], line_no);
    check_order(pending_[static_cast<size_t>(cur_)], ds, line_no);
    series_.push_back(cur_);
    ds_.push_back(ds);
    y_.push_back(h_.y >= 0 ? number(line_no, h_.y) : 0.0);
    for (size_t e = 0; e < h_.exog.size(); ++e) exog_[e].push_back(number(line_no, h_.exog[e]));
  }

  SeriesSet finish() {
    SeriesSet out;
    out.source = source_;
    out.time_kind = kind_;
    out.date_only = date_only_;
    const size_t n = pending_.size();
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return pending_[size_t(a)].id < pending_[size_t(b)].id;
    });
    Frequency fallback = kind_ == TimeKind::kInteger
                             ? Frequency{}
                             : Frequency{Frequency::Unit::kSeconds, kDay, false};
    for (const auto& p : pending_)
      if (p.has_freq) {
        fallback = p.freq;
        break;
      }
    std::vector<Index> cursor(n);
    out.offsets.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      const Pending& p = pending_[size_t(order[i])];
      out.ids.push_back(p.id);
      out.freq.push_back(p.has_freq ? p.freq : fallback);
      cursor[size_t(order[i])] = out.offsets[i];
      out.offsets[i + 1] = out.offsets[i] + p.rows;
    }
    const size_t rows = ds_.size();
    out.ds.resize(rows);
    out.y.resize(rows);
    out.exog_names.clear();
    for (Index e : h_.exog) out.exog_names.push_back(h_.names[size_t(e)]);
    out.exog.assign(h_.exog.size(), std::vector<double>(rows));
    for (size_t r = 0; r < rows; ++r) {
      const auto dst = static_cast<size_t>(cursor[size_t(series_[r])]++);
      out.ds[dst] = ds_[r];
      out.y[dst] = y_[r];
      for (size_t e = 0; e < exog_.size(); ++e) out.exog[e][dst] = exog_[e][r];
    }
    return out;
  }

 private:
  [[noreturn]] void fail(int64_t line_no, Index field, const std::string& expected,
                         std::string_view found, const std::string& what = "bad value") const {
    throw Error(what, ErrorContext{.file = source_,
                                   .line = line_no,
                                   .column = field + 1,
                                   .field = h_.names[size_t(field)],
                                   .expected = expected,
                                   .actual = fmt::format("'{}'", found)});
  }

  double number(int64_t line_no, Index field) const {
    const std::string_view s = f_[static_cast<size_t>(field)];
    double v = 0;
    if (!parse_double(s, v) || !std::isfinite(v))
      fail(line_no, field, "a finite number", s, "not a finite number");
    return v;
  }

  int64_t parse_ds(std::string_view s, int64_t line_no) {
    int64_t v = 0;
    bool date_only = true;
    if (!kind_known_) {
      kind_ = parse_int(s, v) ? TimeKind::kInteger : TimeKind::kTimestamp;
      kind_known_ = true;
    }
    if (kind_ == TimeKind::kInteger) {
      if (!parse_int(s, v)) fail(line_no, h_.ds, "an integer step (as on the first row)", s);
      return v;
    }
    if (!parse_timestamp(s, v, date_only))
      fail(line_no, h_.ds, "a timestamp YYYY-MM-DD[ HH:MM:SS]", s);
    date_only_ = date_only_ && date_only;
    return v;
  }

  void check_order(Pending& p, int64_t ds, int64_t line_no) {
    const auto fmt_ds = [&](int64_t v) { return format_ds(v, kind_, date_only_); };
    if (p.rows > 0) {
      if (ds == p.last_ds)
        fail(line_no, h_.ds, "one row per (unique_id, ds)", fmt_ds(ds),
             fmt::format("duplicate (unique_id, ds) for series '{}'", p.id));
      if (ds < p.last_ds)
        fail(line_no, h_.ds, fmt::format("a ds after {}", fmt_ds(p.last_ds)), fmt_ds(ds),
             fmt::format("ds not ascending in series '{}'", p.id));
      if (kind_ == TimeKind::kInteger) {
        p.freq = Frequency{};
        p.has_freq = true;
      } else if (!p.has_freq) {
        p.freq = infer_frequency(p.last_ds, ds);
        p.has_freq = true;
      }
      const int64_t want = advance(p.last_ds, p.freq);
      if (ds != want)
        fail(line_no, h_.ds,
             fmt::format("{} ({} after {})", fmt_ds(want), p.freq.str(), fmt_ds(p.last_ds)),
             fmt_ds(ds),
             fmt::format("{} in series '{}'", ds > want ? "gap" : "irregular step", p.id));
    }
    p.last_ds = ds;
    ++p.rows;
  }

  const std::string& source_;
  const Header& h_;
  std::vector<std::string_view> f_;
  std::unordered_map<std::string_view, int32_t> index_;
  std::vector<Pending> pending_;
  std::string_view last_id_;
  std::deque<std::string> decoded_;  // field values with a doubled quote inside
  int32_t cur_ = 0;
  bool kind_known_ = false;
  TimeKind kind_ = TimeKind::kInteger;
  bool date_only_ = true;
  std::vector<int32_t> series_;
  std::vector<int64_t> ds_;
  std::vector<double> y_;
  std::vector<std::vector<double>> exog_;
};

}  // namespace

SeriesSet parse_series(const std::string& text, const std::string& source, bool require_y) {
  LineReader lines(checked_text(text, source), source);
  std::string_view line;
  if (!lines.next(line)) throw_empty(source, false, 0);
  const Header h = parse_header(line, source, true, require_y);
  SeriesParser parser(source, h);
  bool any = false;
  while (lines.next(line)) {
    parser.row(line, lines.line_no());
    any = true;
  }
  if (!any) throw_empty(source, true, lines.line_no());
  return parser.finish();
}

SeriesSet read_series(const std::string& path, bool require_y) {
  return parse_series(read_text_file(path), path, require_y);
}

void check_min_length(const SeriesSet& set, Index need, const std::string& why) {
  for (Index s = 0; s < set.n_series(); ++s)
    if (set.length(s) < need)
      throw Error(fmt::format("series '{}' is too short", set.ids[size_t(s)]),
                  ErrorContext{.file = set.source,
                               .field = "unique_id",
                               .expected = fmt::format("at least {} rows ({})", need, why),
                               .actual = fmt::format("{} rows", set.length(s))});
}

}  // namespace shoal::data
