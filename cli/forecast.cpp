// `shoal forecast`: read a long-format table, fit one model per panel (each series alone with
// --n-series 1, all series jointly with --n-series all), forecast h steps, write them as
// `unique_id,ds,<model>`, and score them against --test (MAE, sMAPE, MASE) into a JSON file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/profile_options.h"
#include "cli/stop_signal.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/fleet/fleet.h"
#include "shoal/profile/output.h"
#include "shoal/train/checks.h"
#include "shoal/train/forecast.h"
#include "shoal/train/metrics.h"

namespace shoal::cli {
namespace {

struct ForecastArgs {
  std::string data, static_df, futr_df, init_weights, model, n_series = "1", scaler = "identity",
                                                             out, test, metrics_out, loss = "mae",
                                                             init_generator = "torch";
  Index h = 0, input_size = 0, max_steps = 1000, seasonality = 0, step_size = 1,
        windows_batch_size = 32, val_size = 0, val_check_steps = 100, patience = -1,
        num_lr_decays = -1;
  double memory_limit_mb = 0;
  std::vector<std::string> hist, futr, stat;
  double lr = 1e-3;
  uint64_t seed = 1;
  int threads = 1;
  ProfileOptions profile;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

train::ForecastJob make_job(const ForecastArgs& a, Index seasonality) {
  train::ForecastJob job;
  job.model = a.model;
  job.windows = {.input_size = a.input_size,
                 .h = a.h,
                 .step_size = a.step_size,
                 .val_size = a.val_size,
                 .windows_batch_size = a.windows_batch_size,
                 .scaler = data::parse_scaler_type(a.scaler)};
  job.exog = {.hist = a.hist, .futr = a.futr, .stat = a.stat};
  job.train = {
      .max_steps = a.max_steps,
      .learning_rate = a.lr,
      .num_lr_decays = a.num_lr_decays,
      .val_check_steps = a.val_check_steps,
      .early_stop_patience_steps = a.patience,
      .loss = train::parse_loss(a.loss),
      .seed = a.seed,
      .init_generator = a.init_generator == "torch" ? Generator::kTorchCpu : Generator::kPhilox,
      .threads = a.threads};
  job.seasonality = seasonality;
  if (!a.init_weights.empty()) {
    std::ifstream in(a.init_weights, std::ios::binary);
    SHOAL_CHECK(in.good(), "cannot open --init-weights file '{}'", a.init_weights);
    job.init_weights.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
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

// Scores the forecasts ([set.n_series(), h]) of the listed series.
Scores score(const data::SeriesSet& set, const std::string& test_path, Index h, Index m,
             const std::vector<double>& forecasts, const std::vector<Index>& series) {
  const data::SeriesSet test = data::read_series(test_path);
  Scores s;
  for (const Index i : series) {
    s.acc.add(train::held_out(set, i, test, test_path, h),
              std::span<const double>(forecasts.data() + i * h, size_t(h)), set.y_of(i), m);
  }
  return s;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(2) + "\n");
}

// One fit's forecasts as a journal row: the h values of each of its series, "%.17g", comma
// separated, one line per series (exact round trip through the journal).
std::string encode_forecasts(const std::vector<double>& f, Index h) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i)
    out += fmt::format("{:.17g}{}", f[i], (Index(i) + 1) % h == 0 ? "\n" : ",");
  return out;
}

void decode_forecasts(const std::string& rows, double* dst, size_t count) {
  const char* p = rows.c_str();
  for (size_t i = 0; i < count; ++i) {
    char* end = nullptr;
    dst[i] = std::strtod(p, &end);
    SHOAL_CHECK(end != p, "journal row has {} of {} forecasts", i, count);
    p = *end != '\0' ? end + 1 : end;
  }
}

void run_forecast(const ForecastArgs& a) {
  const train::FitPredictFn fit = train::find_model(a.model);
  if (fit == nullptr)
    throw Error(
        fmt::format("model '{}' is not available in this build", a.model),
        ErrorContext{
            .field = "--model", .expected = "one of: " + train::model_names(), .actual = a.model});
  SHOAL_CHECK(a.threads >= 0, "--threads must be ≥ 0 (0: all cores), got {}", a.threads);
  // Hyper-parameters before any input is read or output written.
  if (train::is_neural(a.model))
    train::check_forecast_job(make_job(a, 1), /*fitting=*/true);
  else if (a.h < 1)
    train::hyper_parameter_out_of_range("h", "an integer ≥ 1", double(a.h));
  auto t0 = Clock::now();
  const data::SeriesSet set = data::read_series(a.data);
  // --n-series: 1 (one model per series), all, or the data's series count (the same as all).
  if (a.n_series != "1" && a.n_series != "all" && a.n_series != std::to_string(set.n_series()))
    throw Error("--n-series does not match the data",
                ErrorContext{.file = a.data,
                             .field = "--n-series",
                             .expected = fmt::format("1, all or {} (the series in the data)",
                                                     set.n_series()),
                             .actual = a.n_series});
  const double read_s = seconds_since(t0);
  data::StaticTable statics;
  if (!a.static_df.empty()) statics = data::read_static(a.static_df);
  data::SeriesSet futr;
  if (!a.futr_df.empty()) futr = data::read_series(a.futr_df, false);
  const bool neural = train::is_neural(a.model);
  const bool per_series = a.n_series == "1";
  if (neural) {
    SHOAL_CHECK(a.input_size >= 1, "--input-size is required for model '{}'", a.model);
    // One model per series: a too-short series fails alone (recorded by the fleet).
    if (!per_series)
      data::check_min_length(set, a.input_size + 1,
                             fmt::format("input_size + 1 = {} + 1", a.input_size));
  }
  const Index m = pick_seasonality(a, set);
  const train::ForecastJob job = make_job(a, m);
  const data::StaticTable* stat_ptr = a.static_df.empty() ? nullptr : &statics;
  const data::SeriesSet* futr_ptr = a.futr_df.empty() ? nullptr : &futr;
  const Index h = a.h;
  // --profile: one recorder for the whole run; started just before the fits.
  const std::unique_ptr<profile::Recorder> recorder = make_recorder(a.profile);
  train::ForecastJob job_profiled = job;
  job_profiled.profiler = recorder.get();

  std::vector<double> forecasts(size_t(set.n_series() * h));
  std::vector<Index> done;  // series with forecasts
  std::vector<double> fit_s;
  nlohmann::json fleet_j;
  Index models = 0;
  t0 = Clock::now();
  if (per_series && neural) {
    // One job per series through the fleet: pinned workers, journal next to --out (a rerun
    // after a crash or Ctrl-C resumes), a failing series recorded while the rest go on.
    size_t bytes = 0;
    try {
      const data::Panel p0(set, {0}, job.exog, stat_ptr, futr_ptr, h);
      bytes = train::planned_arena_bytes(p0, job);
    } catch (const std::exception&) {
      bytes = 0;  // the first series cannot be planned: its job reports why
    }
    std::vector<fleet::Job> jobs;
    jobs.reserve(size_t(set.n_series()));
    if (recorder) recorder->set_model_name(0, "fleet");
    // The first --profile-models fits get a trace process each; the rest share the last one.
    std::optional<profile::FitProcesses> processes;
    if (recorder)
      processes.emplace(*recorder, a.profile.models, fmt::format("{} (other series)", a.model));
    for (Index s = 0; s < set.n_series(); ++s)
      jobs.push_back(
          {set.ids[size_t(s)], bytes, [&, s] {
             const data::Panel panel(set, {s}, job.exog, stat_ptr, futr_ptr, h);
             // Profiled: each series' model is a trace process of its own.
             train::ForecastJob pj = job_profiled;
             if (recorder)
               pj.profile_model =
                   processes->pick(fmt::format("{} {}", a.model, set.ids[size_t(s)]));
             const train::FitResult r = fit(panel, pj);
             return fleet::JobOutput{
                 encode_forecasts(r.forecasts, h),
                 {{"fit_s", r.fit_seconds}, {"steps", r.steps}, {"arena_bytes", r.arena_bytes}}};
           }});
    const std::string journal = a.out + ".journal";
    fleet::FleetSummary sum;
    if (recorder) recorder->start();
    std::vector<fleet::JobRecord> records;
    {
      StopOnSignals stop;
      records = fleet::run_fleet(jobs,
                                 {.workers = a.threads,
                                  .memory_limit = size_t(a.memory_limit_mb * 1048576.0),
                                  .journal = journal,
                                  .progress = true,
                                  .stop = stop.flag(),
                                  .profiler = recorder.get()},
                                 &sum);
    }
    Index failed_shown = 0;
    for (size_t s = 0; s < records.size(); ++s) {
      const fleet::JobRecord& rec = records[s];
      if (!rec.ok) {
        if (rec.error != "not run" && failed_shown++ < 10)
          fmt::print(stderr, "shoal forecast: series '{}' failed: {}\n", rec.id, rec.error);
        continue;
      }
      decode_forecasts(rec.output.rows, forecasts.data() + s * size_t(h), size_t(h));
      done.push_back(Index(s));
      fit_s.push_back(rec.output.metrics.value("fit_s", rec.seconds));
    }
    models = Index(done.size());
    fleet_j = fleet::summary_json(sum);
    if (sum.not_run == 0) std::filesystem::remove(journal);  // complete: a rerun starts afresh
    if (sum.not_run > 0)
      fmt::print(stderr, "shoal forecast: stopped with {} series not run; rerun to resume\n",
                 sum.not_run);
  } else {
    std::vector<std::vector<Index>> panels;
    if (!per_series) {
      panels.emplace_back(size_t(set.n_series()));
      for (Index s = 0; s < set.n_series(); ++s) panels.back()[size_t(s)] = s;
    } else {
      for (Index s = 0; s < set.n_series(); ++s) panels.push_back({s});
    }
    std::vector<double> bytes;
    if (recorder) {
      recorder->set_model_name(0, a.model);
      recorder->start();
    }
    for (const auto& series : panels) {
      const data::Panel panel(set, series, job.exog, stat_ptr, futr_ptr, h);
      const auto t1 = Clock::now();
      const train::FitResult r = fit(panel, job_profiled);
      fit_s.push_back(neural ? r.fit_seconds : seconds_since(t1));
      bytes.push_back(double(r.arena_bytes));
      for (size_t n = 0; n < series.size(); ++n) {
        std::copy_n(r.forecasts.begin() + static_cast<std::ptrdiff_t>(n) * h, h,
                    forecasts.begin() + series[n] * h);
        done.push_back(series[n]);
      }
    }
    models = Index(panels.size());
    const double wall = seconds_since(t0);
    fleet_j = {
        {"jobs", panels.size()}, {"failed", 0},
        {"wall_s", wall},        {"fits_per_s", double(panels.size()) / std::max(wall, 1e-9)},
        {"threads", 1},          {"arena_bytes_median", size_t(median(bytes))}};
  }
  const double wall_s = seconds_since(t0);
  if (recorder) finish_profile(*recorder, a.profile, "forecast");
  std::vector<double> out_values;
  out_values.reserve(done.size() * size_t(h));
  for (const Index s : done)
    out_values.insert(out_values.end(), forecasts.begin() + s * h, forecasts.begin() + (s + 1) * h);
  data::write_forecasts(a.out, set, done, h, a.model, out_values);
  fmt::print("shoal forecast: {} series ({} rows, read in {:.3f} s), model {}, h {}, {} model(s)\n",
             set.n_series(), set.rows(), read_s, a.model, h, models);
  fmt::print("fit: median {:.6f} s per model, {:.1f} models/s; forecasts written to {}\n",
             median(fit_s), double(models) / std::max(wall_s, 1e-9), a.out);
  if (fleet_j.value("failed", 0) > 0)
    fmt::print("failed: {} of {} series (no forecasts written for them)\n",
               fleet_j.value("failed", 0), set.n_series());

  nlohmann::json j = {{"model", a.model},
                      {"data", a.data},
                      {"h", h},
                      {"input_size", a.input_size},
                      {"max_steps", a.max_steps},
                      {"n_series", set.n_series()},
                      {"series_per_model", a.n_series},
                      {"models", models},
                      {"fit_s_median", median(fit_s)},
                      {"fit_s_total", wall_s},
                      {"models_per_s", double(models) / std::max(wall_s, 1e-9)},
                      {"seasonality", m},
                      {"seed", a.seed}};
  for (const auto& [k, v] : fleet_j.items())
    if (k != "fit_s_median") j[k] = v;
  if (!a.test.empty()) {
    const Scores s = score(set, a.test, h, m, forecasts, done);
    fmt::print("test ({} series): MAE {:.4f}  sMAPE {:.4f}  MASE {:.4f} (seasonality {}{})\n",
               s.acc.n, s.acc.mae(), s.acc.smape(), s.acc.mase(), m,
               s.acc.mase_skipped > 0
                   ? fmt::format(", {} series with a zero MASE scale left out", s.acc.mase_skipped)
                   : "");
    j["test"] = a.test;
    j["scored_series"] = s.acc.n;
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
  cmd->add_option("--h", a.h, "Forecast horizon")->required();
  cmd->add_option("--input-size", a.input_size, "Input window length L (neural models)");
  cmd->add_option("--n-series", a.n_series, "Series per model: 1 (one model each) or all")
      ->capture_default_str();
  cmd->add_option("--hist-exog", a.hist, "Historical exogenous columns")->delimiter(',');
  cmd->add_option("--futr-exog", a.futr, "Future exogenous columns")->delimiter(',');
  cmd->add_option("--stat-exog", a.stat, "Static exogenous columns")->delimiter(',');
  cmd->add_option("--max-steps", a.max_steps, "Training steps")->capture_default_str();
  cmd->add_option("--learning-rate", a.lr, "Adam learning rate")->capture_default_str();
  cmd->add_option("--windows-batch-size,--batch-size", a.windows_batch_size,
                  "Windows per training step (0: every valid window)")
      ->capture_default_str();
  cmd->add_option("--val-size", a.val_size, "Validation rows at the end of each series (0 or ≥ h)")
      ->capture_default_str();
  cmd->add_option("--val-check-steps", a.val_check_steps, "Steps between validation checks")
      ->capture_default_str();
  cmd->add_option("--early-stop-patience-steps", a.patience,
                  "Validation checks without improvement before stopping (≤ 0: off)")
      ->capture_default_str();
  cmd->add_option("--num-lr-decays", a.num_lr_decays, "StepLR halvings over max_steps (-1: none)")
      ->capture_default_str();
  cmd->add_option("--loss", a.loss, "mae, mse or huber")->capture_default_str();
  cmd->add_option("--memory-limit-mb", a.memory_limit_mb,
                  "Fleet memory budget for concurrent fits' arenas (0: none)")
      ->capture_default_str();
  cmd->add_option("--step-size", a.step_size, "Stride between windows")->capture_default_str();
  cmd->add_option("--scaler-type", a.scaler,
                  "identity, standard, robust, minmax, minmax1, invariant or revin")
      ->capture_default_str();
  cmd->add_option("--seasonality", a.seasonality,
                  "Season length for seasonal_naive and MASE (0: from the data's frequency)")
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "Random seed")->capture_default_str();
  cmd->add_option("--init-generator", a.init_generator,
                  "Initial weights' generator: torch (neuralforecast's for the same seed) or "
                  "philox (shoal's own stream)")
      ->check(CLI::IsMember({"torch", "philox"}))
      ->capture_default_str();
  cmd->add_option("--init-weights", a.init_weights,
                  "Initial weights (safetensors, neuralforecast names) instead of the seed's");
  cmd->add_option("--threads", a.threads, "Fleet workers for --n-series 1 (0: all cores)")
      ->capture_default_str();
  cmd->add_option("--out", a.out, "Forecasts CSV to write")->required();
  cmd->add_option("--test", a.test, "Held-out table to score the forecasts against");
  cmd->add_option("--metrics-out", a.metrics_out, "Write fit time and scores as JSON");
  add_profile_options(*cmd, a.profile);
  cmd->callback([] { run_forecast(a); });
}

}  // namespace shoal::cli
