// Static-feature tables and the forecast writer (the reader of long tables is timeseries.cpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <unordered_set>

#include "shoal/core/file_io.h"
#include "shoal/data/gzip.h"
#include "shoal/data/text.h"
#include "shoal/data/timeseries.h"

namespace shoal::data {
namespace {

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  split_csv(line, out);
  return out;
}

}  // namespace

StaticTable parse_static(const std::string& text, const std::string& source) {
  StaticTable t;
  t.source = source;
  std::string_view rest = checked_text(text, source);
  int64_t line_no = 0;
  Index id_col = -1;
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  while (!rest.empty()) {
    const size_t nl = csv_record_end(rest);
    const std::string_view line = rest.substr(0, nl);
    rest = nl == rest.npos ? std::string_view{} : rest.substr(nl + 1);
    line_no += 1 + std::count(line.begin(), line.end(), '\n');
    if (trim(line).empty()) {
      if (trim(rest).find_first_not_of("\r\n \t") == rest.npos) break;
      throw Error("blank line inside the table",
                  ErrorContext{.file = source, .line = line_no, .expected = "a data row"});
    }
    const auto f = split(line);
    if (names.empty()) {
      for (size_t i = 0; i < f.size(); ++i) {
        std::string name(f[i]);
        const auto col = static_cast<int64_t>(i) + 1;
        if (name.empty())
          throw Error("empty column name",
                      ErrorContext{.file = source, .line = line_no, .column = col});
        for (const auto& n : names)
          if (n == name)
            throw Error(
                "duplicated column name",
                ErrorContext{.file = source, .line = line_no, .column = col, .field = name});
        if (name == "unique_id")
          id_col = static_cast<Index>(i);
        else
          t.columns.push_back(name);
        names.push_back(std::move(name));
      }
      if (id_col < 0)
        throw Error("missing column 'unique_id'",
                    ErrorContext{.file = source,
                                 .line = 1,
                                 .field = "unique_id",
                                 .expected = "a header with unique_id and feature columns",
                                 .actual = fmt::format("'{}'", trim(line))});
      continue;
    }
    if (f.size() != names.size())
      throw Error("wrong number of fields",
                  ErrorContext{.file = source,
                               .line = line_no,
                               .expected = fmt::format("{} fields", names.size()),
                               .actual = fmt::format("{}", f.size())});
    for (size_t i = 0; i < f.size(); ++i) {
      const auto col = static_cast<int64_t>(i) + 1;
      if (static_cast<Index>(i) == id_col) {
        std::string id(f[i]);
        if (!seen.insert(id).second)
          throw Error("duplicate unique_id", ErrorContext{.file = source,
                                                          .line = line_no,
                                                          .column = col,
                                                          .field = "unique_id",
                                                          .expected = "one row per series",
                                                          .actual = fmt::format("'{}'", id)});
        t.ids.push_back(std::move(id));
        continue;
      }
      double v = 0;
      const auto [p, ec] = std::from_chars(f[i].data(), f[i].data() + f[i].size(), v);
      if (f[i].empty() || ec != std::errc() || p != f[i].data() + f[i].size() || !std::isfinite(v))
        throw Error("not a finite number", ErrorContext{.file = source,
                                                        .line = line_no,
                                                        .column = col,
                                                        .field = names[i],
                                                        .expected = "a finite number",
                                                        .actual = fmt::format("'{}'", f[i])});
      t.values.push_back(v);
    }
  }
  if (names.empty())
    throw Error(
        "empty file",
        ErrorContext{.file = source, .expected = "a header line and rows", .actual = "nothing"});
  if (t.ids.empty())
    throw Error("no data rows", ErrorContext{.file = source,
                                             .line = line_no,
                                             .expected = "at least one row after the header",
                                             .actual = "only the header"});
  return t;
}

StaticTable read_static(const std::string& path) {
  return parse_static(read_text_file(path), path);
}

std::vector<float> static_matrix(const StaticTable& table, const SeriesSet& set,
                                 std::span<const Index> series,
                                 std::span<const std::string> columns) {
  std::vector<Index> cols;
  for (const auto& c : columns) {
    Index found = -1;
    for (Index j = 0; j < table.cols(); ++j)
      if (table.columns[size_t(j)] == c) found = j;
    if (found < 0)
      throw Error(fmt::format("no static column named '{}'", c),
                  ErrorContext{.file = table.source, .field = c, .actual = "no such column"});
    cols.push_back(found);
  }
  std::vector<float> out;
  out.reserve(series.size() * cols.size());
  for (Index s : series) {
    const std::string& id = set.ids[size_t(s)];
    Index row = -1;
    for (size_t r = 0; r < table.ids.size() && row < 0; ++r)
      if (table.ids[r] == id) row = static_cast<Index>(r);
    if (row < 0)
      throw Error(fmt::format("series '{}' has no static features", id),
                  ErrorContext{.file = table.source,
                               .field = "unique_id",
                               .expected = "one row per series of " + set.source,
                               .actual = "no row"});
    for (Index c : cols)
      out.push_back(static_cast<float>(table.values[size_t(row * table.cols() + c)]));
  }
  return out;
}

void write_forecasts(const std::string& path, const SeriesSet& set, std::span<const Index> series,
                     Index h, const std::string& model, std::span<const double> values) {
  SHOAL_CHECK(values.size() == series.size() * size_t(h),
              "write_forecasts: {} values for {} series x h {}", values.size(), series.size(), h);
  std::string text;
  append_csv_row(text, {"unique_id", "ds", model});
  text.reserve(values.size() * 32);
  for (size_t i = 0; i < series.size(); ++i) {
    const Index s = series[i];
    const int64_t last = set.ds[size_t(set.offsets[s + 1] - 1)];
    for (Index k = 1; k <= h; ++k) {
      append_csv_field(text, set.ids[size_t(s)]);
      fmt::format_to(std::back_inserter(text), ",{},{}\n",
                     format_ds(advance(last, set.freq[size_t(s)], k), set.time_kind, set.date_only),
                     values[i * size_t(h) + size_t(k - 1)]);
    }
  }
  write_file_atomic(path, text);
}

}  // namespace shoal::data
