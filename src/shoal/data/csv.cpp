#include "shoal/data/csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string_view>

#include "shoal/core/rng.h"
#include "shoal/data/gzip.h"
#include "shoal/data/text.h"

namespace shoal::data {
namespace {

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  split_csv(line, out);
  return out;
}

}  // namespace

Index NumericTable::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<Index>(i);
  std::string have;
  for (const auto& c : columns) have += (have.empty() ? "" : ", ") + c;
  throw Error(fmt::format("no column named '{}'", name), ErrorContext{.file = source,
                                                                      .field = name,
                                                                      .expected = "one of: " + have,
                                                                      .actual = "no such column"});
}

NumericTable parse_numeric_csv(const std::string& text, const std::string& source) {
  NumericTable t;
  t.source = source;
  std::string_view rest = checked_text(text, source);
  int64_t line_no = 0;
  bool have_header = false;
  while (!rest.empty()) {
    const size_t nl = csv_record_end(rest);
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    line_no += 1 + std::count(line.begin(), line.end(), '\n');
    if (trim(line).empty()) {
      // Blank lines are only allowed at the end of the file.
      if (trim(rest).empty()) break;
      throw Error("blank line inside the table", ErrorContext{.file = source,
                                                              .line = line_no,
                                                              .expected = "a data row",
                                                              .actual = "an empty line"});
    }
    const auto fields = split_fields(line);
    if (!have_header) {
      for (size_t i = 0; i < fields.size(); ++i) {
        const std::string name(trim(fields[i]));
        if (name.empty())
          throw Error(
              "empty column name",
              ErrorContext{.file = source, .line = line_no, .column = static_cast<int64_t>(i) + 1});
        for (const auto& c : t.columns)
          if (c == name)
            throw Error("duplicated column name",
                        ErrorContext{.file = source,
                                     .line = line_no,
                                     .column = static_cast<int64_t>(i) + 1,
                                     .field = name});
        t.columns.push_back(name);
      }
      have_header = true;
      continue;
    }
    if (static_cast<Index>(fields.size()) != t.cols())
      throw Error("wrong number of fields",
                  ErrorContext{.file = source,
                               .line = line_no,
                               .expected = fmt::format("{} fields", t.cols()),
                               .actual = fmt::format("{}", fields.size())});
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string_view f = trim(fields[i]);
      double v = 0;
      const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || !std::isfinite(v))
        throw Error("not a finite number", ErrorContext{.file = source,
                                                        .line = line_no,
                                                        .column = static_cast<int64_t>(i) + 1,
                                                        .field = t.columns[i],
                                                        .expected = "a finite number",
                                                        .actual = fmt::format("'{}'", f)});
      t.values.push_back(v);
    }
    ++t.rows;
  }
  if (!have_header)
    throw Error(
        "empty file",
        ErrorContext{.file = source, .expected = "a header line and rows", .actual = "nothing"});
  if (t.rows == 0)
    throw Error("no data rows", ErrorContext{.file = source,
                                             .line = line_no,
                                             .expected = "at least one row after the header",
                                             .actual = "only the header"});
  return t;
}

NumericTable read_numeric_csv(const std::string& path) {
  return parse_numeric_csv(read_text_file(path), path);
}

void shuffled_xy(const NumericTable& t, Index target, uint64_t seed, std::vector<double>& x,
                 std::vector<double>& y) {
  std::vector<Index> order(static_cast<size_t>(t.rows));
  std::iota(order.begin(), order.end(), Index{0});
  RngStream rng(seed, 7);
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[rng.below(static_cast<uint32_t>(i))]);
  for (const Index r : order)
    for (Index c = 0; c < t.cols(); ++c) (c == target ? y : x).push_back(t.at(r, c));
}

}  // namespace shoal::data
