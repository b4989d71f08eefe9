#include "shoal/core/options.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "shoal/core/error.h"

namespace shoal {

void option_out_of_range(std::string_view key, const std::string& expected, double got) {
  throw Error("hyper-parameter out of range", ErrorContext{.field = std::string(key),
                                                           .expected = expected,
                                                           .actual = fmt::format("{}", got)});
}

std::string option_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

namespace {

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

// A value as a list of texts: a JSON array, or comma-separated text. Blank text is the empty
// list; an empty item among others ("8,,4", "8,") is refused, never silently dropped.
std::vector<std::string> list_of(const nlohmann::json& v, std::string_view key) {
  std::vector<std::string> out;
  std::string text;
  if (v.is_array()) {  // the CLI's list flags and Python's lists
    for (const auto& e : v) {
      out.push_back(trimmed(option_text(e)));
      text += (text.empty() ? "" : ",") + option_text(e);
    }
    if (out.size() == 1 && out[0].empty()) out.clear();  // `--flag ""`: the empty list
  } else {
    text = option_text(v);
    if (trimmed(text).empty()) return out;
    for (size_t start = 0;;) {  // every item, a last empty one ("8,") included
      const size_t comma = text.find(',', start);
      out.push_back(trimmed(std::string_view(text).substr(start, comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  for (const std::string& part : out)
    if (part.empty())
      throw Error("a list with an empty item", ErrorContext{.field = std::string(key),
                                                            .expected = "comma-separated values",
                                                            .actual = fmt::format("'{}'", text)});
  return out;
}

// Parses an integer from text exactly (no rounding of floats, no wrap-around).
bool parse_integer(const std::string& s, bool is_signed, int64_t& i, uint64_t& u) {
  if (s.empty()) return false;
  size_t pos = 0;
  const bool neg = s[0] == '-';
  if (neg || s[0] == '+') pos = 1;
  if (pos == s.size()) return false;
  uint64_t acc = 0;
  for (; pos < s.size(); ++pos) {
    const char c = s[pos];
    if (c < '0' || c > '9') return false;
    const uint64_t d = uint64_t(c - '0');
    if (acc > (UINT64_MAX - d) / 10) return false;
    acc = acc * 10 + d;
  }
  if (!is_signed) {
    if (neg && acc != 0) return false;
    u = acc;
    return true;
  }
  if (neg ? acc > uint64_t(INT64_MAX) + 1 : acc > uint64_t(INT64_MAX)) return false;
  i = neg ? int64_t(0 - acc) : int64_t(acc);
  return true;
}

}  // namespace

OptionReader::OptionReader(nlohmann::json values, std::string owner)
    : values_(std::move(values)), owner_(std::move(owner)) {
  SHOAL_CHECK(values_.is_object() || values_.is_null(), "options for {} must be an object", owner_);
}

const nlohmann::json* OptionReader::find(std::string_view key) {
  used_.insert(std::string(key));
  if (!values_.is_object()) return nullptr;
  auto it = values_.find(key);
  if (it == values_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool OptionReader::has(std::string_view key) {
  return find(key) != nullptr;
}

double OptionReader::number(std::string_view key, const nlohmann::json& v) const {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  const std::string s = trimmed(option_text(v));
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  SHOAL_CHECK(!s.empty() && end == s.c_str() + s.size(), "config '{}' must be a number, got '{}'",
              key, s);
  return d;
}

void OptionReader::operator()(std::string_view key, int64_t& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j == nullptr) return;
  if (j->is_number_integer() && !j->is_number_unsigned()) {
    v = j->get<int64_t>();
    return;
  }
  int64_t i = 0;
  uint64_t u = 0;
  const std::string s = j->is_number_unsigned() ? j->dump() : trimmed(option_text(*j));
  if (parse_integer(s, true, i, u)) {
    v = i;
    return;
  }
  const double d = number(key, *j);
  SHOAL_CHECK(d == std::floor(d), "config '{}' must be an integer, got {}", key, s);
  // Past ±2^63 the conversion is undefined; such values are errors, never wrapped.
  throw Error(
      fmt::format("config '{}' is out of range, got {}", key, s),
      ErrorContext{
          .field = std::string(key), .expected = "an integer in [-2^63, 2^63)", .actual = s});
}

void OptionReader::operator()(std::string_view key, uint64_t& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j == nullptr) return;
  if (j->is_number_unsigned()) {
    v = j->get<uint64_t>();
    return;
  }
  int64_t i = 0;
  uint64_t u = 0;
  const std::string s = trimmed(option_text(*j));
  if (parse_integer(s, false, i, u)) {
    v = u;
    return;
  }
  throw Error(fmt::format("config '{}' must be an integer in [0, 2^64), got {}", key, s),
              ErrorContext{.field = std::string(key),
                           .expected = "an integer in [0, 18446744073709551615]",
                           .actual = s});
}

void OptionReader::operator()(std::string_view key, double& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j == nullptr) return;
  const double d = number(key, *j);
  // strtod gives ±inf for a value beyond float range written out ("1e999"): not a setting.
  SHOAL_CHECK(!std::isinf(d), "config '{}' is out of range, got {}", key, option_text(*j));
  v = d;
}

void OptionReader::operator()(std::string_view key, bool& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j == nullptr) return;
  if (j->is_boolean()) {
    v = j->get<bool>();
    return;
  }
  const std::string s = trimmed(option_text(*j));
  SHOAL_CHECK(s == "true" || s == "false" || s == "1" || s == "0" || s == "True" || s == "False",
              "config '{}' must be true or false, got '{}'", key, s);
  v = s == "true" || s == "1" || s == "True";
}

void OptionReader::operator()(std::string_view key, std::string& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j != nullptr) v = option_text(*j);
}

void OptionReader::operator()(std::string_view key, std::vector<std::string>& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j != nullptr) v = list_of(*j, key);
}

void OptionReader::operator()(std::string_view key, std::vector<int64_t>& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j == nullptr) return;
  std::vector<int64_t> out;
  for (const std::string& s : list_of(*j, key)) {
    int64_t i = 0;
    uint64_t u = 0;
    SHOAL_CHECK(parse_integer(s, true, i, u) && i > 0,
                "config '{}' must list positive integers, got '{}'", key, s);
    out.push_back(i);
  }
  v = std::move(out);
}

void OptionReader::operator()(std::string_view key, std::vector<double>& v, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j == nullptr) return;
  std::vector<double> out;
  for (const std::string& s : list_of(*j, key)) {
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    SHOAL_CHECK(!s.empty() && end == s.c_str() + s.size() && std::isfinite(d),
                "config '{}' must list finite numbers, got '{}'", key, s);
    out.push_back(d);
  }
  v = std::move(out);
}

void OptionReader::choice(std::string_view key, std::string& v,
                          std::span<const std::string_view> choices, std::string_view) {
  const nlohmann::json* j = find(key);
  if (j == nullptr) return;
  const std::string s = trimmed(option_text(*j));
  for (const std::string_view c : choices)
    if (c == s) {
      v = s;
      return;
    }
  std::string names;
  for (size_t i = 0; i < choices.size(); ++i)
    names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(choices[i]);
  throw Error(fmt::format("unknown {} '{}'", key, s),
              ErrorContext{.field = std::string(key), .expected = names, .actual = s});
}

void OptionReader::check_all_used() const {
  if (!values_.is_object()) return;
  for (const auto& [k, v] : values_.items()) {
    (void)v;
    if (used_.count(k) == 0) {
      std::string known;
      for (const auto& u : used_) known += (known.empty() ? "" : ", ") + u;
      throw Error(fmt::format("unknown config key '{}' for {}", k, owner_),
                  ErrorContext{.field = k, .expected = "one of: " + known});
    }
  }
}

void OptionWriter::operator()(std::string_view k, int64_t& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::operator()(std::string_view k, uint64_t& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::operator()(std::string_view k, double& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::operator()(std::string_view k, bool& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::operator()(std::string_view k, std::string& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::operator()(std::string_view k, std::vector<std::string>& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::operator()(std::string_view k, std::vector<int64_t>& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::operator()(std::string_view k, std::vector<double>& v, std::string_view) {
  json[std::string(k)] = v;
}
void OptionWriter::choice(std::string_view k, std::string& v, std::span<const std::string_view>,
                          std::string_view) {
  json[std::string(k)] = v;
}

void OptionLister::add(std::string_view key, std::string def, std::string_view help,
                       const char* kind) {
  options.push_back({std::string(key), std::move(def), std::string(help), kind, {}});
}
void OptionLister::operator()(std::string_view k, int64_t& v, std::string_view h) {
  add(k, fmt::format("{}", v), h, "integer");
}
void OptionLister::operator()(std::string_view k, uint64_t& v, std::string_view h) {
  add(k, fmt::format("{}", v), h, "integer");
}
void OptionLister::operator()(std::string_view k, double& v, std::string_view h) {
  add(k, fmt::format("{}", v), h, "number");
}
void OptionLister::operator()(std::string_view k, bool& v, std::string_view h) {
  add(k, v ? "true" : "false", h, "flag");
}
void OptionLister::operator()(std::string_view k, std::string& v, std::string_view h) {
  add(k, v, h, "text");
}
void OptionLister::operator()(std::string_view k, std::vector<std::string>& v, std::string_view h) {
  add(k, fmt::format("{}", fmt::join(v, ",")), h, "list");
}
void OptionLister::operator()(std::string_view k, std::vector<int64_t>& v, std::string_view h) {
  add(k, fmt::format("{}", fmt::join(v, ",")), h, "list");
}
void OptionLister::operator()(std::string_view k, std::vector<double>& v, std::string_view h) {
  add(k, fmt::format("{}", fmt::join(v, ",")), h, "list");
}
void OptionLister::choice(std::string_view k, std::string& v,
                          std::span<const std::string_view> choices, std::string_view h) {
  add(k, v, h, "choice");
  for (const std::string_view c : choices) options.back().choices.emplace_back(c);
}

}  // namespace shoal
