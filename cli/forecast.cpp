// `shoal forecast`: read a long-format table, fit one model per panel (each series alone with
// --n-series 1, all series jointly with --n-series all), forecast h steps, write them as
// `unique_id,ds,<model>`, and score them against --test (MAE, sMAPE, MASE) into a JSON file.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "cli/model_options.h"
#include "cli/profile_options.h"
#include "cli/stop_signal.h"
#include "shoal/core/arena.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/fleet/fleet.h"
#include "shoal/fleet/forecast_jobs.h"
#include "shoal/fleet/jobs.h"
#include "shoal/profile/output.h"
#include "shoal/train/checks.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/metrics.h"
#include "shoal/train/safetensors.h"

namespace shoal::cli {
namespace {

// The command's own flags; every model option is an OptionFlags flag (cli/model_options.h).
struct ForecastArgs {
  std::string data, static_df, futr_df, init_weights, model, n_series, out, test, metrics_out;
  double memory_limit_mb = 0;
  int threads = 1;
  bool no_resume = false, allow_failures = false;
  OptionFlags options;
  ProfileOptions profile;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The bytes of --init-weights, checked as safetensors here so that a bad file is named (its
// shapes are checked against the model by the setup fit).
std::string read_init_weights(const std::string& path) {
  if (path.empty()) return {};
  std::string bytes = read_input_file(path, "--init-weights");
  (void)train::decode_safetensors(bytes, path);
  return bytes;
}

// The checks a run makes before it reads or fits anything: options, numbers, and every output
// path (not an input, not a folder or device, in an existing folder).
void check_paths(const ForecastArgs& a) {
  SHOAL_CHECK(a.memory_limit_mb >= 0 && std::isfinite(a.memory_limit_mb),
              "--memory-limit-mb must be a finite number ≥ 0 (0: none), got {}", a.memory_limit_mb);
  const std::vector<std::string> inputs = {a.data, a.static_df, a.futr_df, a.test, a.init_weights};
  OutputPlan outputs(inputs);
  outputs.file(a.out, "--out").file(a.metrics_out, "--metrics-out");
  plan_profile_outputs(outputs, a.profile, "forecast");
  for (const std::string& in : inputs)
    if (!in.empty()) check_input_file(in);
}

// A fit of the first job on one series, one step: what fails for every series (an exogenous
// column the data lacks, initial weights of another shape, --input-size longer than every
// series, values beyond float range) fails here, once, before any output or journal is written,
// instead of as one failure per series. The longest series is the one least likely to fail
// for a reason of its own.
void check_setup(const data::SeriesSet& set, const data::StaticTable* statics,
                 const data::SeriesSet* futr, Index h, const train::ForecastJob& job) {
  Index longest = 0;
  for (Index s = 1; s < set.n_series(); ++s)
    if (set.length(s) > set.length(longest)) longest = s;
  train::ForecastJob probe = job;
  probe.train.max_steps = 1;
  probe.train.early_stop_patience_steps = -1;
  probe.profiler = nullptr;
  probe.keep_weights = false;
  const data::Panel panel(set, {longest}, job.exog, statics, futr, h);
  (void)train::fit_forecast(panel, probe);
  // The loss history of a fit is max_steps doubles: a count no machine can hold is an error here.
  const double bytes = double(job.train.max_steps) * sizeof(double);
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (ram > 0 && bytes > ram)
    throw Error("max_steps is more than this machine can train (its loss history alone)",
                ErrorContext{.field = "max_steps",
                             .expected = fmt::format("at most {:.0f} steps ({:.1f} GiB of memory)",
                                                     ram / sizeof(double), ram / 1073741824.0),
                             .actual = fmt::format("{}", job.train.max_steps)});
}

// The data's season length unless --seasonality says otherwise (integer ds: 1).
Index pick_seasonality(const train::ForecastJob& job, const data::SeriesSet& set) {
  if (job.seasonality > 0) return job.seasonality;
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
Scores score(const data::SeriesSet& set, const data::SeriesSet& test, const std::string& test_path,
             Index h, Index m, const std::vector<double>& forecasts,
             const std::vector<Index>& series) {
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

// The fits of a run: forecasts [n_series, h] of the series in `done`, each fit's seconds, the
// fleet's summary, and the failed series ("series 'X' failed: why").
struct FitOutcome {
  std::vector<double> forecasts;
  std::vector<Index> done;
  std::vector<double> fit_s;
  nlohmann::json fleet_j;
  std::vector<std::string> failures;
  Index models = 0;
};

// Per-series neural fits on the fleet's pinned workers, journaled next to --out (a rerun after
// a crash or Ctrl-C resumes), a failing series recorded while the rest go on. Exits on a
// signal; throws when every series failed.
FitOutcome run_on_fleet(const std::vector<fleet::Job>& jobs, const data::SeriesSet& set, Index h,
                        fleet::FleetConfig cfg) {
  FitOutcome r;
  r.forecasts.resize(size_t(set.n_series() * h));
  fleet::FleetSummary sum;
  std::vector<fleet::JobRecord> records;
  {
    StopOnSignals stop;
    cfg.stop = stop.flag();
    records = fleet::run_fleet(jobs, cfg, &sum);
  }
  if (sum.not_run > 0)
    exit_interrupted(fmt::format(
        "interrupted with {} of {} series not run; nothing written, the {} finished are kept "
        "in {}: rerun the same command to resume",
        sum.not_run, sum.jobs, sum.jobs - sum.not_run, cfg.journal));
  for (size_t s = 0; s < records.size(); ++s) {
    const fleet::JobRecord& rec = records[s];
    if (!rec.ok) {
      r.failures.push_back(fmt::format("series '{}' failed: {}", rec.id, rec.error));
      continue;
    }
    decode_forecasts(rec.output.rows, r.forecasts.data() + s * size_t(h), size_t(h));
    r.done.push_back(Index(s));
    r.fit_s.push_back(rec.output.metrics.value("fit_s", rec.seconds));
  }
  r.models = Index(r.done.size());
  r.fleet_j = fleet::summary_json(sum);
  std::filesystem::remove(cfg.journal);  // complete (or failed whole): a rerun starts afresh
  // Every series failed: the run failed, with the first reason and no output.
  if (r.done.empty())
    throw Error(fmt::format("every series failed ({}); the first, {}", records.size(),
                            r.failures.empty() ? std::string("?") : r.failures.front()));
  return r;
}

// A joint model or a baseline: its jobs run here, on this thread.
FitOutcome run_here(const std::vector<fleet::Job>& jobs,
                    const std::vector<std::vector<Index>>& panels, const data::SeriesSet& set,
                    Index h, bool neural) {
  FitOutcome r;
  r.forecasts.resize(size_t(set.n_series() * h));
  const auto t0 = Clock::now();
  std::vector<double> bytes;
  for (size_t p = 0; p < jobs.size(); ++p) {
    const auto t1 = Clock::now();
    const fleet::JobOutput o = jobs[p].run();
    const std::vector<Index>& series = panels[p];
    r.fit_s.push_back(neural ? o.metrics.value("fit_s", 0.0) : seconds_since(t1));
    bytes.push_back(o.metrics.value("arena_bytes", 0.0));
    std::vector<double> f(series.size() * size_t(h));
    decode_forecasts(o.rows, f.data(), f.size());
    for (size_t n = 0; n < series.size(); ++n) {
      std::copy_n(f.begin() + static_cast<std::ptrdiff_t>(n) * h, h,
                  r.forecasts.begin() + series[n] * h);
      r.done.push_back(series[n]);
    }
  }
  r.models = Index(panels.size());
  const double wall = seconds_since(t0);
  r.fleet_j = {
      {"jobs", panels.size()}, {"failed", 0},
      {"wall_s", wall},        {"fits_per_s", double(panels.size()) / std::max(wall, 1e-9)},
      {"threads", 1},          {"arena_bytes_median", size_t(median(bytes))}};
  return r;
}

// The run's key: its settings and the contents of its inputs, so that a journal left by an
// interrupted run is reused only by a run with the same settings on the same data.
std::string run_key(const train::ForecastJob& job, const std::string& n_series,
                    const data::SeriesSet& set, const data::StaticTable* statics,
                    const data::SeriesSet* futr) {
  nlohmann::json k = train::forecast_settings(job);
  k["n_series"] = n_series;
  k["data"] = fleet::content_digest(set);
  if (futr != nullptr) k["futr_df"] = fleet::content_digest(*futr);
  if (statics != nullptr)
    k["static"] = fleet::digest(nlohmann::json{
        {"ids", statics->ids},
        {"columns", statics->columns},
        {"values", statics->values}}.dump());
  if (!job.init_weights.empty()) k["init_weights"] = fleet::digest(job.init_weights);
  return fleet::digest(k.dump());
}

void run_forecast(const ForecastArgs& a) {
  // Options before any input is read or output written.
  train::ForecastJob job = train::forecast_job(a.model, a.options.given());
  const bool neural = train::is_neural(job);
  train::check_forecast_job(job, /*fitting=*/neural);
  // Jobs files and the CLI write one point forecast per step.
  SHOAL_CHECK(layers::is_point_loss(job.train.loss.kind),
              "loss {} forecasts several values per step, which this output does not hold; "
              "train it from Python (shoal.NeuralForecast)",
              train::loss_name(job.train.loss.kind));
  const int threads = cap_threads(a.threads, "forecast");
  SHOAL_CHECK(job.exog.futr.empty() || !a.futr_df.empty() || !neural,
              "--futr-exog needs the future values of its columns: give them with --futr-df");
  check_paths(a);
  // One run per output: a second one on the same --out fails here, before any work.
  const OutputLock lock(a.out + ".lock", a.out);
  const std::string journal = a.out + ".journal";
  if (a.no_resume) std::filesystem::remove(journal);
  job.init_weights = read_init_weights(a.init_weights);
  auto t0 = Clock::now();
  const data::SeriesSet set = data::read_series(a.data);
  // A univariate model trains globally over every series unless --n-series 1 asks otherwise.
  const std::string n_series = !a.n_series.empty()                      ? a.n_series
                               : neural && !train::is_multivariate(job) ? "all"
                                                                        : "1";
  // --n-series: 1 (one model per series), all, or the data's series count (the same as all).
  if (n_series != "1" && n_series != "all" && n_series != std::to_string(set.n_series()))
    throw Error("--n-series does not match the data",
                ErrorContext{.file = a.data,
                             .field = "--n-series",
                             .expected = fmt::format("1, all or {} (the series in the data)",
                                                     set.n_series()),
                             .actual = n_series});
  const double read_s = seconds_since(t0);
  // The forecasts of every series (and their copies on the way out), before any is made.
  check_fits_in_memory(double(set.n_series()) * double(job.windows.h) * sizeof(double) * 4, "h",
                       fmt::format("h {} for {} series", job.windows.h, set.n_series()));
  data::StaticTable statics;
  if (!a.static_df.empty()) statics = data::read_static(a.static_df);
  data::SeriesSet futr;
  if (!a.futr_df.empty()) futr = data::read_series(a.futr_df, false);
  // The held-out rows every series is scored against, before any fit.
  data::SeriesSet test;
  if (!a.test.empty()) {
    test = data::read_series(a.test);
    for (Index s = 0; s < set.n_series(); ++s)
      (void)train::held_out(set, s, test, a.test, job.windows.h);
  }
  const bool per_series = n_series == "1";
  const Index h = job.windows.h, input_size = job.windows.input_size;
  // One model per series: a too-short series fails alone (recorded by the fleet).
  if (neural && !per_series && train::is_multivariate(job))
    data::check_min_length(set, input_size + 1, fmt::format("input_size + 1 = {} + 1", input_size));
  const Index m = pick_seasonality(job, set);
  job.seasonality = m;
  const data::StaticTable* stat_ptr = a.static_df.empty() ? nullptr : &statics;
  const data::SeriesSet* futr_ptr = a.futr_df.empty() ? nullptr : &futr;
  if (neural && per_series) check_setup(set, stat_ptr, futr_ptr, h, job);
  // --profile: one recorder for the whole run; started just before the fits.
  const std::unique_ptr<profile::Recorder> recorder = make_recorder(a.profile);
  job.profiler = recorder.get();
  // One fleet job per panel. Per-series neural fits run on the fleet's pinned workers, with a
  // journal next to --out (a rerun after a crash or Ctrl-C resumes) and a failing series
  // recorded while the rest go on; a joint model or a baseline runs here, on this thread.
  const bool on_fleet = per_series && neural;
  std::optional<profile::FitProcesses> processes;
  if (recorder) {
    recorder->set_model_name(0, on_fleet ? "fleet" : a.model);
    // The first --profile-models fits get a trace process each; the rest share the last one.
    if (on_fleet)
      processes.emplace(*recorder, a.profile.models, fmt::format("{} (other series)", a.model));
  }
  fleet::ForecastJobsConfig jc{.key = run_key(job, n_series, set, stat_ptr, futr_ptr)};
  if (processes)
    jc.profile_process = [&](const std::string& id) {
      return processes->pick(fmt::format("{} {}", a.model, id));
    };
  const auto panels = fleet::forecast_panels(set.n_series(), per_series);
  const std::vector<fleet::Job> jobs = fleet::forecast_jobs(
      {.set = &set, .statics = stat_ptr, .futr = futr_ptr, .h_future = h}, job, panels, jc,
      [h](std::span<const Index>, train::FitResult& r) {
        return fleet::JobOutput{
            encode_forecasts(r.forecasts, h),
            {{"fit_s", r.fit_seconds}, {"steps", r.steps}, {"arena_bytes", r.arena_bytes}}};
      });

  t0 = Clock::now();
  if (recorder) recorder->start();
  FitOutcome fits;
  if (on_fleet) {
    fits = run_on_fleet(jobs, set, h,
                        {.workers = threads,
                         .memory_limit = size_t(a.memory_limit_mb * 1048576.0),
                         .journal = journal,
                         .progress = isatty(2) != 0,
                         .profiler = recorder.get()});
  } else {
    fits = run_here(jobs, panels, set, h, neural);
  }
  auto& [forecasts, done, fit_s, fleet_j, failures, models] = fits;
  const double wall_s = seconds_since(t0);
  if (recorder) finish_profile(*recorder, a.profile, "forecast");
  std::vector<double> out_values;
  out_values.reserve(done.size() * size_t(h));
  for (const Index s : done)
    out_values.insert(out_values.end(), forecasts.begin() + s * h, forecasts.begin() + (s + 1) * h);
  if (done.empty()) {  // nothing to write: an earlier run's --out stays as it was
    for (size_t f = 0; f < failures.size() && f < 10; ++f)
      fmt::print(stderr, "shoal forecast: {}\n", failures[f]);
    throw Error(
        fmt::format("every series failed ({}; the first are listed above): nothing "
                    "written, and an earlier {} is left as it was",
                    set.n_series(), a.out));
  }
  data::write_forecasts(a.out, set, done, h, a.model, out_values);
  fmt::print("shoal forecast: {} series ({} rows, read in {:.3f} s), model {}, h {}, {} model(s)\n",
             set.n_series(), set.rows(), read_s, a.model, h, models);
  fmt::print("fit: median {:.6f} s per model, {:.1f} models/s; forecasts written to {}\n",
             median(fit_s), double(models) / std::max(wall_s, 1e-9), a.out);
  for (size_t f = 0; f < failures.size() && f < 10; ++f)
    fmt::print(stderr, "shoal forecast: {}\n", failures[f]);
  if (failures.size() > 10)
    fmt::print(stderr, "shoal forecast: ... and {} more failed series\n", failures.size() - 10);

  nlohmann::json j = {{"model", a.model},
                      {"data", a.data},
                      {"h", h},
                      {"input_size", input_size},
                      {"max_steps", job.train.max_steps},
                      {"n_series", set.n_series()},
                      {"series_per_model", n_series},
                      {"models", models},
                      {"fit_s_median", median(fit_s)},
                      {"fit_s_total", wall_s},
                      {"models_per_s", double(models) / std::max(wall_s, 1e-9)},
                      {"seasonality", m},
                      {"seed", job.train.seed},
                      {"settings", train::forecast_settings(job)}};
  for (const auto& [k, v] : fleet_j.items())
    if (k != "fit_s_median") j[k] = v;
  if (!a.test.empty()) {
    const Scores s = score(set, test, a.test, h, m, forecasts, done);
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
  // Some series failed: outputs hold the rest, and the status says so (docs/errors.md).
  if (!failures.empty() && !a.allow_failures)
    throw ExitStatus(kExitPartial,
                     fmt::format("{} of {} series failed (listed above; forecasts written for the "
                                 "other {}); pass --allow-failures to exit 0",
                                 failures.size(), set.n_series(), done.size()));
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
  cmd->add_option("--model", a.model, train::forecast_model_names())->required();
  cmd->add_option("--n-series", a.n_series,
                  "Series per model: 1 (one model each) or all (default: all for a univariate "
                  "model such as nlinear, trained globally over every series; 1 otherwise)");
  // Every option of every registered model, under its key's name.
  std::vector<std::pair<std::string, std::vector<OptionInfo>>> owners;
  for (const train::ForecastModel& m : train::forecast_models())
    owners.emplace_back(std::string(m.name), train::forecast_options(m.name));
  a.options.add(*cmd, owners,
                {{"seed", "random_seed"},
                 {"batch-size", "windows_batch_size"},
                 {"series-batch-size", "batch_size"},
                 {"hist-exog", "hist_exog_list"},
                 {"futr-exog", "futr_exog_list"},
                 {"stat-exog", "stat_exog_list"}});
  cmd->add_option("--init-weights", a.init_weights,
                  "Initial weights (safetensors, neuralforecast names) instead of the seed's");
  cmd->add_option("--memory-limit-mb", a.memory_limit_mb,
                  "Fleet memory budget for concurrent fits' arenas (0: none)")
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "Fleet workers for --n-series 1 (0: all cores)")
      ->capture_default_str();
  cmd->add_flag("--no-resume", a.no_resume,
                "Start afresh: drop the journal an interrupted run left next to --out");
  cmd->add_flag("--allow-failures", a.allow_failures,
                "Exit 0 when some series fail (default: exit 4, forecasts written for the rest)");
  cmd->add_option("--out", a.out, "Forecasts CSV to write")->required();
  cmd->add_option("--test", a.test, "Held-out table to score the forecasts against");
  cmd->add_option("--metrics-out", a.metrics_out, "Write fit time and scores as JSON");
  add_profile_options(*cmd, a.profile);
  cmd->callback([] { run_forecast(a); });
}

}  // namespace shoal::cli
