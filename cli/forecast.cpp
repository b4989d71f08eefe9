// `shoal forecast`: read a long-format table, fit one model per panel (each series alone with
// --n-series 1, all series jointly with --n-series all), forecast h steps, write them as
// `unique_id,ds,<model>`, and score them against --test (MAE, sMAPE, MASE) into a JSON file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/train/forecast.h"
#include "shoal/train/metrics.h"

namespace shoal::cli {
namespace {

struct ForecastArgs {
  std::string data, static_df, futr_df, model, n_series = "1", scaler = "identity", out, test,
                                               metrics_out;
  Index h = 0, input_size = 0, max_steps = 1000, seasonality = 0, step_size = 1,
        windows_batch_size = 32;
  std::vector<std::string> hist, futr, stat;
  double lr = 1e-3;
  uint64_t seed = 1;
  int threads = 1;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

train::ForecastJob make_job(const ForecastArgs& a, Index seasonality) {
  train::ForecastJob job;
  job.model = a.model;
  job.windows = {.input_size = a.input_size,
                 .h = a.h,
                 .step_size = a.step_size,
                 .windows_batch_size = a.windows_batch_size,
                 .scaler = data::parse_scaler_type(a.scaler)};
  job.exog = {.hist = a.hist, .futr = a.futr, .stat = a.stat};
  job.train = {
      .max_steps = a.max_steps, .learning_rate = a.lr, .seed = a.seed, .threads = a.threads};
  job.seasonality = seasonality;
  return job;
}

// The data's season length unless --seasonality says otherwise (integer ds: 1).
Index pick_seasonality(const ForecastArgs& a, const data::SeriesSet& set) {
  if (a.seasonality > 0) return a.seasonality;
  if (set.time_kind == data::TimeKind::kInteger) {
    fmt::print(stderr,
               "shoal forecast: ds is an integer step, so the frequency is unknown; using "
               "seasonality 1 (pass --seasonality, e.g. 12 for monthly data)\n");
    return 1;
  }
  return set.freq.front().season_length();
}

struct Scores {
  train::ScoreAccumulator acc;
};

Scores score(const data::SeriesSet& set, const std::string& test_path, Index h, Index m,
             const std::vector<double>& forecasts) {
  const data::SeriesSet test = data::read_series(test_path);
  Scores s;
  for (Index i = 0; i < set.n_series(); ++i) {
    const std::string& id = set.ids[size_t(i)];
    const Index t = test.find(id);
    const int64_t first = data::advance(set.ds_of(i).back(), set.freq[size_t(i)]);
    if (t < 0 || test.length(t) < h || test.ds_of(t)[0] != first)
      throw Error(
          fmt::format("test data lacks the {} rows after the end of series '{}'", h, id),
          ErrorContext{
              .file = test_path,
              .field = "ds",
              .expected = fmt::format("{} rows from ds {}", h,
                                      data::format_ds(first, set.time_kind, set.date_only)),
              .actual = t < 0 ? "no rows for this id"
                              : fmt::format("{} rows from ds {}", test.length(t),
                                            data::format_ds(test.ds_of(t)[0], test.time_kind,
                                                            test.date_only))});
    s.acc.add(test.y_of(t).first(size_t(h)),
              std::span<const double>(forecasts.data() + i * h, size_t(h)), set.y_of(i), m);
  }
  return s;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw Error("cannot write file", ErrorContext{.file = tmp});
    out << j.dump(2) << "\n";
    if (!out) throw Error("write failed", ErrorContext{.file = tmp});
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error("cannot rename output", ErrorContext{.file = path, .actual = tmp});
}

void run_forecast(const ForecastArgs& a) {
  const train::FitPredictFn fit = train::find_model(a.model);
  if (fit == nullptr)
    throw Error(
        fmt::format("model '{}' is not available in this build", a.model),
        ErrorContext{
            .field = "--model", .expected = "one of: " + train::model_names(), .actual = a.model});
  SHOAL_CHECK(a.n_series == "1" || a.n_series == "all", "--n-series must be 1 or all, got '{}'",
              a.n_series);
  auto t0 = Clock::now();
  const data::SeriesSet set = data::read_series(a.data);
  const double read_s = seconds_since(t0);
  data::StaticTable statics;
  if (!a.static_df.empty()) statics = data::read_static(a.static_df);
  data::SeriesSet futr;
  if (!a.futr_df.empty()) futr = data::read_series(a.futr_df, false);
  const bool neural = train::is_neural(a.model);
  if (neural) {
    SHOAL_CHECK(a.input_size >= 1, "--input-size is required for model '{}'", a.model);
    data::check_min_length(set, a.input_size + a.h,
                           fmt::format("input_size + h = {} + {}", a.input_size, a.h));
  }
  const Index m = pick_seasonality(a, set);
  const train::ForecastJob job = make_job(a, m);

  std::vector<std::vector<Index>> panels;
  if (a.n_series == "all") {
    panels.emplace_back(size_t(set.n_series()));
    for (Index s = 0; s < set.n_series(); ++s) panels.back()[size_t(s)] = s;
  } else {
    for (Index s = 0; s < set.n_series(); ++s) panels.push_back({s});
  }
  std::vector<double> forecasts(size_t(set.n_series() * a.h));
  std::vector<double> fit_s;
  t0 = Clock::now();
  for (const auto& series : panels) {
    const data::Panel panel(set, series, job.exog, a.static_df.empty() ? nullptr : &statics,
                            a.futr_df.empty() ? nullptr : &futr, a.h);
    const auto t1 = Clock::now();
    const train::FitResult r = fit(panel, job);
    fit_s.push_back(neural ? r.fit_seconds : seconds_since(t1));
    for (size_t n = 0; n < series.size(); ++n)
      std::copy_n(r.forecasts.begin() + static_cast<std::ptrdiff_t>(n) * a.h, a.h,
                  forecasts.begin() + series[n] * a.h);
  }
  const double wall_s = seconds_since(t0);
  std::vector<Index> all(size_t(set.n_series()));
  for (Index s = 0; s < set.n_series(); ++s) all[size_t(s)] = s;
  data::write_forecasts(a.out, set, all, a.h, a.model, forecasts);
  fmt::print("shoal forecast: {} series ({} rows, read in {:.3f} s), model {}, h {}, {} model(s)\n",
             set.n_series(), set.rows(), read_s, a.model, a.h, panels.size());
  fmt::print("fit: median {:.6f} s per model, {:.1f} models/s; forecasts written to {}\n",
             median(fit_s), double(panels.size()) / std::max(wall_s, 1e-9), a.out);

  nlohmann::json j = {{"model", a.model},
                      {"data", a.data},
                      {"h", a.h},
                      {"input_size", a.input_size},
                      {"n_series", set.n_series()},
                      {"series_per_model", a.n_series},
                      {"models", panels.size()},
                      {"fit_s_median", median(fit_s)},
                      {"fit_s_total", wall_s},
                      {"models_per_s", double(panels.size()) / std::max(wall_s, 1e-9)},
                      {"seasonality", m},
                      {"seed", a.seed},
                      {"threads", a.threads}};
  if (!a.test.empty()) {
    const Scores s = score(set, a.test, a.h, m, forecasts);
    fmt::print("test ({} series): MAE {:.4f}  sMAPE {:.4f}  MASE {:.4f} (seasonality {}{})\n",
               s.acc.n, s.acc.mae(), s.acc.smape(), s.acc.mase(), m,
               s.acc.mase_skipped > 0
                   ? fmt::format(", {} series with a zero MASE scale left out", s.acc.mase_skipped)
                   : "");
    j["test"] = a.test;
    j["mae"] = s.acc.mae();
    j["smape"] = s.acc.smape();
    j["mase"] = s.acc.mase();
    j["mase_skipped"] = s.acc.mase_skipped;
  }
  if (!a.metrics_out.empty()) write_json(a.metrics_out, j);
}

}  // namespace

void register_forecast(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "forecast",
      "Fit a forecaster on a long-format table (unique_id, ds, y) and forecast h steps");
  static ForecastArgs a;
  cmd->add_option("--data", a.data, "Training table: CSV or CSV.gz with unique_id, ds, y")
      ->required();
  cmd->add_option("--static", a.static_df, "Static features: unique_id + numeric columns");
  cmd->add_option("--futr-df", a.futr_df, "Future exogenous values for the h forecast steps");
  cmd->add_option("--model", a.model, "tsmixerx, tsmixer, seasonal_naive or naive")->required();
  cmd->add_option("--h", a.h, "Forecast horizon")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--input-size", a.input_size, "Input window length L (neural models)");
  cmd->add_option("--n-series", a.n_series, "Series per model: 1 (one model each) or all")
      ->capture_default_str();
  cmd->add_option("--hist-exog", a.hist, "Historical exogenous columns")->delimiter(',');
  cmd->add_option("--futr-exog", a.futr, "Future exogenous columns")->delimiter(',');
  cmd->add_option("--stat-exog", a.stat, "Static exogenous columns")->delimiter(',');
  cmd->add_option("--max-steps", a.max_steps, "Training steps")->capture_default_str();
  cmd->add_option("--learning-rate", a.lr, "Adam learning rate")->capture_default_str();
  cmd->add_option("--windows-batch-size", a.windows_batch_size, "Windows per training step")
      ->capture_default_str();
  cmd->add_option("--step-size", a.step_size, "Stride between windows")->capture_default_str();
  cmd->add_option("--scaler-type", a.scaler,
                  "identity, standard, robust, minmax, minmax1, invariant or revin")
      ->capture_default_str();
  cmd->add_option("--seasonality", a.seasonality,
                  "Season length for seasonal_naive and MASE (0: from the data's frequency)")
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "Random seed")->capture_default_str();
  cmd->add_option("--threads", a.threads, "Threads")->capture_default_str();
  cmd->add_option("--out", a.out, "Forecasts CSV to write")->required();
  cmd->add_option("--test", a.test, "Held-out table to score the forecasts against");
  cmd->add_option("--metrics-out", a.metrics_out, "Write fit time and scores as JSON");
  cmd->callback([] { run_forecast(a); });
}

}  // namespace shoal::cli
