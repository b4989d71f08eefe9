// Jobs files (JSON lines or CSV) read into job specs, sweeps expanded (fleet/job_specs.h).
#include "shoal/fleet/job_specs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/data/gzip.h"
#include "shoal/data/text.h"
#include "shoal/train/forecast_registry.h"

namespace shoal::fleet {
namespace {

namespace fs = std::filesystem;

const std::set<std::string> kLineKeys = {"id",     "data",    "model",      "seed",
                                         "config", "test",    "series",     "sweep",
                                         "static", "futr_df", "max_series", "tune"};

// One CSV record's fields, by the one CSV reader (data/text.h).
std::vector<std::string> split_csv_line(std::string_view line) {
  std::vector<std::string_view> fields;
  data::split_csv(line, fields);
  return {fields.begin(), fields.end()};
}

// A CSV cell as JSON: a number when it reads as one, else the text.
nlohmann::json cell_value(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v)) {
    if (v == std::floor(v) && std::abs(v) < 9e15 && s.find_first_of(".eE") == std::string::npos)
      return static_cast<int64_t>(v);
    return v;
  }
  return s;
}

// Keys and digests dump a line as JSON, which must be UTF-8 (JSON lines are checked when
// parsed; CSV cells are not).
bool is_utf8(const std::string& s) {
  return data::invalid_utf8_at(s) == std::string_view::npos;
}

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Fills a spec from one parsed JSON object; sweeps expand into `out`.
bool univariate(const std::string& model) {
  for (const train::ForecastModel& m : train::forecast_models())
    if (m.name == model) return m.neural && !m.multivariate;
  return false;
}

void add_json_line(const nlohmann::json& j, JobSpec base, const std::string& base_dir,
                   std::vector<JobSpec>& out) {
  SHOAL_CHECK(j.is_object(), "a jobs line must be a JSON object, got {}", j.type_name());
  for (const auto& [k, v] : j.items()) {
    (void)v;
    SHOAL_CHECK(kLineKeys.count(k) > 0,
                "unknown field '{}' (expected id, data, model, seed, config, test, static, "
                "futr_df, series, max_series, sweep, tune)",
                k);
  }
  if (j.contains("id")) base.id = base.group = value_text(j.at("id"));
  base.model = j.value("model", std::string());
  base.data = resolve_job_path(j.value("data", std::string()), base_dir);
  base.test = resolve_job_path(j.value("test", std::string()), base_dir);
  base.static_df = resolve_job_path(j.value("static", std::string()), base_dir);
  base.futr_df = resolve_job_path(j.value("futr_df", std::string()), base_dir);
  // nlohmann converts a float to an integer type unchecked (undefined past its range;
  // UBSan, fuzz/jobs_fuzz).
  for (const char* k : {"seed", "max_series"})
    SHOAL_CHECK(!j.contains(k) || j.at(k).is_number_integer(), "'{}' must be an integer, got {}", k,
                j.at(k).dump());
  base.seed = j.value("seed", uint64_t{1});
  // A univariate model trains globally over the line's series by default, as neuralforecast.
  base.series = j.value("series", univariate(base.model) ? std::string("all") : "each");
  base.max_series = j.value("max_series", int64_t{0});
  if (j.contains("config")) {
    SHOAL_CHECK(j.at("config").is_object(), "'config' must be an object of overrides");
    base.config = j.at("config");
  }
  if (j.contains("tune")) base.tune = j.at("tune");
  if (!j.contains("sweep")) {
    out.push_back(std::move(base));
    return;
  }
  const nlohmann::json& sweep = j.at("sweep");
  SHOAL_CHECK(sweep.is_object() && !sweep.empty(),
              "'sweep' must be an object of lists, e.g. {{\"seed\": [1, 2, 3]}}");
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> axes;
  for (const auto& [k, v] : sweep.items()) {
    SHOAL_CHECK(v.is_array() && !v.empty(), "sweep '{}' must be a non-empty list", k);
    axes.push_back({k, std::vector<nlohmann::json>(v.begin(), v.end())});
  }
  std::vector<size_t> at(axes.size(), 0);
  for (;;) {
    JobSpec s = base;
    std::string tag;
    for (size_t a = 0; a < axes.size(); ++a) {
      const auto& [k, values] = axes[a];
      const nlohmann::json& v = values[at[a]];
      if (k == "seed") {
        SHOAL_CHECK(v.is_number_unsigned(), "sweep seeds must be non-negative integers");
        s.seed = v.get<uint64_t>();
      } else {
        s.config[k] = v;
      }
      tag += fmt::format("{}{}={}", a ? "," : "", k, value_text(v));
    }
    s.id = base.id + "[" + tag + "]";
    out.push_back(std::move(s));
    size_t a = 0;
    while (a < axes.size() && ++at[a] == axes[a].second.size()) at[a++] = 0;
    if (a == axes.size()) break;
  }
}

}  // namespace

std::vector<JobSpec> parse_jobs(const std::string& text, const std::string& source,
                                const std::string& base_dir) {
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::vector<JobSpec> out;
  bool csv = false;
  std::vector<std::string> header;
  size_t first = 0;
  while (first < lines.size() &&
         (data::trim(lines[first]).empty() || data::trim(lines[first]).front() == '#'))
    ++first;
  if (first < lines.size() && data::trim(lines[first]).front() != '{') {
    csv = true;
    header = split_csv_line(lines[first]);
    for (const char* need : {"data", "model"})
      if (std::find(header.begin(), header.end(), need) == header.end())
        throw Error("a CSV jobs file needs columns data and model",
                    ErrorContext{.file = source,
                                 .line = static_cast<int64_t>(first) + 1,
                                 .field = need,
                                 .expected = "a header naming data, model [, id, seed, test, "
                                             "static, futr_df, series, max_series, config "
                                             "keys...]",
                                 .actual = fmt::format("'{}'", data::trim(lines[first]))});
    ++first;
  }
  for (size_t i = first; i < lines.size(); ++i) {
    const std::string_view t = data::trim(lines[i]);
    if (t.empty() || t.front() == '#') continue;
    JobSpec base;
    base.base_dir = base_dir;
    base.line = static_cast<int>(i) + 1;
    base.source = source;
    base.id = base.group = fmt::format("line{}", base.line);
    try {
      nlohmann::json j;
      if (csv) {
        const std::vector<std::string> cells = split_csv_line(t);
        SHOAL_CHECK(cells.size() == header.size(), "{} fields where the header has {}",
                    cells.size(), header.size());
        j = nlohmann::json::object();
        for (size_t c = 0; c < cells.size(); ++c) {
          if (cells[c].empty()) continue;
          SHOAL_CHECK(is_utf8(cells[c]) && is_utf8(header[c]),
                      "field {} (column '{}') is not valid UTF-8 text", c + 1,
                      is_utf8(header[c]) ? header[c] : "?");
          if (kLineKeys.count(header[c]) && header[c] != "config" && header[c] != "sweep")
            j[header[c]] = header[c] == "seed" || header[c] == "max_series"
                               ? cell_value(cells[c])
                               : nlohmann::json(cells[c]);
          else
            j["config"][header[c]] = cell_value(cells[c]);
        }
      } else {
        j = nlohmann::json::parse(t);
      }
      add_json_line(j, base, base_dir, out);
    } catch (const std::exception& e) {
      base.error = format_error(e.what(), {.file = source, .line = base.line});
      out.push_back(std::move(base));
    }
  }
  std::set<std::string> seen;
  for (JobSpec& s : out)
    if (!seen.insert(s.id).second && s.error.empty())
      s.error = fmt::format("{}:{}: duplicate job id '{}'", source, s.line, s.id);
  return out;
}

std::vector<JobSpec> read_jobs_file(const std::string& path) {
  const std::string text = data::read_text_file(path);
  return parse_jobs(text, path, fs::path(path).parent_path().string());
}

std::string resolve_job_path(const std::string& path, const std::string& base_dir) {
  if (path.empty() || fs::path(path).is_absolute() || base_dir.empty()) return path;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

}  // namespace shoal::fleet
