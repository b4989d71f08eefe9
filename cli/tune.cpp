// `shoal tune`: a hyper-parameter search of one forecasting model on a long-format table. The
// model's default search space (train/search_space.h, neuralforecast's), less the options fixed
// with --set, is drawn --samples times, globally or per series; every trial is a fleet job (one
// per worker, pinned, journalled: an interrupted search resumes), validated on the last
// --val-size rows of each series. The best configuration of each search is then refitted on
// all of its rows and forecasts the h steps after them.
//   OUT/trials.csv     one row per trial: unique_id (or "all"), trial, val_loss, steps, fit_s,
//                      status (ok, pruned by --prune-factor, failed), error, config (JSON)
//   OUT/best.json      the best configuration and validation loss of each search
//   OUT/forecasts.csv  unique_id, ds, <model>: the refitted best configurations' forecasts
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/core/thread_pool.h"
#include "shoal/data/text.h"
#include "shoal/data/timeseries.h"
#include "shoal/fleet/fleet.h"
#include "shoal/fleet/forecast_jobs.h"
#include "shoal/fleet/jobs.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/pruner.h"
#include "shoal/train/search.h"
#include "shoal/train/search_space.h"

namespace shoal::cli {
namespace {

namespace fs = std::filesystem;

struct TuneArgs {
  std::string data, model, out, n_series;
  int64_t h = 0, samples = 10, val_size = 0, prune_factor = 0;
  int threads = 0;
  uint64_t seed = 1;
  double memory_limit_mb = 0;
  std::vector<std::string> sets;
  bool refit_with_val = false, no_resume = false;
};

// --set KEY=VALUE: VALUE as JSON when it parses (numbers, lists, true), else as text.
nlohmann::json fixed_options(const std::vector<std::string>& sets) {
  nlohmann::json fixed = nlohmann::json::object();
  for (const std::string& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--set takes KEY=VALUE",
                  ErrorContext{.field = "--set", .expected = "KEY=VALUE", .actual = s});
    const std::string value = s.substr(eq + 1);
    nlohmann::json v = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    fixed[s.substr(0, eq)] = v.is_discarded() ? nlohmann::json(value) : v;
  }
  return fixed;
}

struct Trial {
  size_t search = 0;
  int64_t index = 0;
  nlohmann::json config;
  std::string error;
  double val_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t steps = 0;
  double fit_s = 0;
  bool pruned = false;
};

std::string trials_csv(const std::vector<Trial>& trials, const std::vector<std::string>& labels) {
  std::string out = "unique_id,trial,val_loss,steps,fit_s,status,error,config\n";
  for (const Trial& t : trials) {
    const std::string loss = std::isfinite(t.val_loss) ? fmt::format("{:.9g}", t.val_loss) : "";
    const std::string index = std::to_string(t.index), steps = std::to_string(t.steps),
                      fit_s = fmt::format("{:.6f}", t.fit_s), config = t.config.dump();
    data::append_csv_row(out, {labels[t.search], index, loss, steps, fit_s,
                               !t.error.empty() ? "failed"
                               : t.pruned       ? "pruned"
                                                : "ok",
                               t.error, config});
  }
  return out;
}

void run_tune(const TuneArgs& a) {
  const int threads = cap_threads(a.threads, "tune");
  SHOAL_CHECK(a.samples >= 1 && a.samples <= 1000000, "--samples must be in 1..1000000, got {}",
              a.samples);
  SHOAL_CHECK(a.prune_factor == 0 || a.prune_factor >= 2,
              "--prune-factor must be 0 (off) or ≥ 2, got {}", a.prune_factor);
  SHOAL_CHECK(a.memory_limit_mb >= 0 && std::isfinite(a.memory_limit_mb),
              "--memory-limit-mb must be a finite number ≥ 0 (0: none), got {}", a.memory_limit_mb);
  const Index val_size = a.val_size > 0 ? a.val_size : a.h;
  train::SearchSpace space = train::default_search_space(a.model, a.h);
  if (space.empty())
    throw Error(fmt::format("model '{}' has no hyper-parameters to search", a.model),
                ErrorContext{.field = "--model", .expected = "a neural model"});
  const nlohmann::json fixed = fixed_options(a.sets);
  std::erase_if(space, [&](const train::SearchDimension& d) { return fixed.contains(d.key); });
  nlohmann::json fixed_h = fixed;
  fixed_h["h"] = a.h;
  auto options_of = [&](const nlohmann::json& draw, Index val) {
    return train::trial_options(draw, fixed_h, val);
  };
  // A bad --set (an unknown key, a value out of range) fails now, before anything is read.
  {
    std::mt19937_64 probe(a.seed);
    (void)train::forecast_job(a.model, options_of(train::draw(space, probe), val_size));
  }
  OutputPlan outputs({a.data});
  outputs.folder(a.out, "--out");
  fs::create_directories(a.out);
  const fs::path dir(a.out);
  const std::string trials_path = (dir / "trials.csv").string(),
                    best_path = (dir / "best.json").string(),
                    forecasts_path = (dir / "forecasts.csv").string(),
                    journal = (dir / "journal.jsonl").string();
  outputs.file(trials_path, "--out").file(best_path, "--out").file(forecasts_path, "--out");
  const OutputLock lock((dir / ".lock").string(), a.out);
  if (a.no_resume) fs::remove(journal);

  const data::SeriesSet set = data::read_series(a.data);
  const bool multivariate = train::is_multivariate(train::default_job(a.model));
  const std::string n_series = !a.n_series.empty() ? a.n_series : multivariate ? "1" : "all";
  SHOAL_CHECK(n_series == "1" || n_series == "all", "--n-series must be 1 or all, got '{}'",
              n_series);
  const bool per_series = n_series == "1";
  std::vector<std::vector<Index>> groups;
  std::vector<std::string> labels;
  if (per_series) {
    for (Index s = 0; s < set.n_series(); ++s) {
      groups.push_back({s});
      labels.push_back(set.ids[size_t(s)]);
    }
  } else {
    groups.emplace_back();
    for (Index s = 0; s < set.n_series(); ++s) groups.back().push_back(s);
    labels.push_back("all");
  }

  // The trials: every draw of every search, a fleet job each.
  std::vector<Trial> trials;
  std::vector<train::ForecastJob> jobs;
  // --prune-factor: one successive-halving pruner per search, shared by its trials.
  std::vector<std::unique_ptr<train::SuccessiveHalving>> pruners;
  std::vector<std::function<bool(Index, double)>> keep;
  if (a.prune_factor > 0)
    for (size_t g = 0; g < groups.size(); ++g) {
      pruners.push_back(std::make_unique<train::SuccessiveHalving>(1, a.prune_factor));
      keep.push_back([p = pruners.back().get()](Index c, double v) { return p->keep(c, v); });
    }
  std::vector<fleet::Job> fleet_jobs;
  std::vector<size_t> trial_of_job;
  const std::string data_key = fleet::content_digest(set);
  for (size_t g = 0; g < groups.size(); ++g) {
    std::mt19937_64 rng = train::search_rng(a.seed, labels[g]);
    for (int64_t k = 0; k < a.samples; ++k) {
      Trial t{.search = g, .index = k, .config = train::draw(space, rng)};
      t.config.update(fixed);
      trials.push_back(t);
    }
  }
  jobs.resize(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) {
    Trial& t = trials[i];
    try {
      jobs[i] = train::forecast_job(a.model, options_of(t.config, val_size));
      jobs[i].train.threads = 1;
      if (!keep.empty()) jobs[i].train.keep_training = &keep[t.search];
      const data::Panel panel(set, groups[t.search], jobs[i].exog, nullptr, nullptr, 0);
      const size_t bytes = train::planned_arena_bytes(panel, jobs[i]);
      fleet_jobs.push_back(
          {.id = fmt::format("{} trial {}", labels[t.search], t.index),
           .arena_bytes = bytes,
           .run =
               [&set, &groups, &jobs, &trials, i] {
                 const data::Panel p(set, groups[trials[i].search], jobs[i].exog, nullptr, nullptr,
                                     0);
                 const train::FitResult r = train::fit_forecast(p, jobs[i]);
                 const double loss = r.val_losses.empty() ? std::numeric_limits<double>::quiet_NaN()
                                                          : r.val_losses.back();
                 return fleet::JobOutput{"",
                                         {{"val_loss", loss},
                                          {"steps", r.steps},
                                          {"fit_s", r.fit_seconds},
                                          {"pruned", r.pruned}}};
               },
           .key = fleet::digest(options_of(t.config, val_size).dump() + data_key)});
      trial_of_job.push_back(i);
    } catch (const std::exception& e) {
      t.error = e.what();
    }
  }
  fmt::print(stderr, "shoal tune: {} trials of {} ({} search{} of {} draws), {} workers\n",
             trials.size(), a.model, groups.size(), groups.size() == 1 ? "" : "es", a.samples,
             threads == 0 ? int(allowed_cpus().size()) : threads);
  fleet::FleetSummary sum;
  std::vector<fleet::JobRecord> records;
  {
    StopOnSignals stop;
    records = fleet::run_fleet(fleet_jobs,
                               {.workers = threads,
                                .memory_limit = size_t(a.memory_limit_mb * 1048576.0),
                                .journal = journal,
                                .progress = isatty(2) != 0,
                                .stop = stop.flag()},
                               &sum);
  }
  if (sum.not_run > 0)
    exit_interrupted(
        fmt::format("interrupted with {} of {} trials not run; nothing written, the "
                    "finished ones are kept in {}: rerun the same command to finish",
                    sum.not_run, sum.jobs, journal));
  for (size_t j = 0; j < records.size(); ++j) {
    Trial& t = trials[trial_of_job[j]];
    const fleet::JobRecord& r = records[j];
    if (!r.ok) {
      t.error = r.error;
      continue;
    }
    const nlohmann::json& m = r.output.metrics;
    t.steps = m.value("steps", int64_t(0));
    t.fit_s = m.value("fit_s", 0.0);
    t.pruned = m.value("pruned", false);
    t.val_loss = m["val_loss"].is_number() ? m["val_loss"].get<double>()
                                           : std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(t.val_loss))
      t.error = r.output.metrics.contains("val_loss") && m["val_loss"].is_number()
                    ? fmt::format("validation loss {}", t.val_loss)
                    : "no validation check ran (val_check_steps > max_steps)";
  }

  // Each search's best trial, refitted on all of its series' rows.
  std::vector<const Trial*> best(groups.size(), nullptr);
  for (const Trial& t : trials)
    if (t.error.empty() && !t.pruned &&
        (best[t.search] == nullptr || t.val_loss < best[t.search]->val_loss))
      best[t.search] = &t;
  nlohmann::json best_json = {{"model", a.model},
                              {"h", a.h},
                              {"val_size", val_size},
                              {"n_series", n_series},
                              {"best", nlohmann::json::object()}};
  std::vector<double> forecasts(size_t(set.n_series() * a.h));
  std::vector<Index> done;
  std::vector<std::string> failures;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (best[g] == nullptr) {
      failures.push_back(fmt::format("{}: every trial failed", labels[g]));
      continue;
    }
    best_json["best"][labels[g]] = {{"config", best[g]->config}, {"val_loss", best[g]->val_loss}};
    train::ForecastJob refit =
        train::forecast_job(a.model, options_of(best[g]->config, a.refit_with_val ? val_size : 0));
    refit.train.threads = threads;
    try {
      const data::Panel panel(set, groups[g], refit.exog, nullptr, nullptr, a.h);
      const train::FitResult r = train::fit_forecast(panel, refit);
      for (size_t k = 0; k < groups[g].size(); ++k) {
        const Index s = groups[g][k];
        std::copy_n(r.forecasts.begin() + Index(k) * a.h, a.h, forecasts.begin() + s * a.h);
        done.push_back(s);
      }
    } catch (const std::exception& e) {
      failures.push_back(fmt::format("{}: the refit failed: {}", labels[g], e.what()));
    }
  }
  write_file_atomic(trials_path, trials_csv(trials, labels));
  write_file_atomic(best_path, best_json.dump(2) + "\n");
  for (size_t f = 0; f < failures.size() && f < 10; ++f)
    fmt::print(stderr, "shoal tune: {}\n", failures[f]);
  if (done.empty())
    throw Error(
        fmt::format("every search failed ({}; the first are listed above): no "
                    "forecasts written; the trials are in {}",
                    groups.size(), trials_path));
  std::sort(done.begin(), done.end());
  std::vector<double> values;
  for (const Index s : done)
    values.insert(values.end(), forecasts.begin() + s * a.h, forecasts.begin() + (s + 1) * a.h);
  data::write_forecasts(forecasts_path, set, done, a.h, a.model, values);
  const auto failed =
      std::count_if(trials.begin(), trials.end(), [](const Trial& t) { return !t.error.empty(); });
  fmt::print(
      "shoal tune: {} trials ({} failed, {} from an earlier run) in {:.1f} s, {:.2f} "
      "trials/s; best in {}, forecasts of {} series in {}\n",
      trials.size(), failed, sum.skipped, sum.wall_s, sum.fits_per_s, best_path, done.size(),
      forecasts_path);
  if (!failures.empty())
    throw ExitStatus(kExitPartial, fmt::format("{} of {} searches failed (listed above); "
                                               "forecasts written for the other {} series",
                                               failures.size(), groups.size(), done.size()));
}

}  // namespace

void register_tune(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tune",
      "Search a forecasting model's hyper-parameters (neuralforecast's default space), trials "
      "side by side; refit the best and forecast");
  static TuneArgs a;
  cmd->add_option("--data", a.data, "Training table: CSV or CSV.gz with unique_id, ds, y")
      ->required();
  cmd->add_option("--model", a.model, train::forecast_model_names())->required();
  cmd->add_option("--h", a.h, "Forecast horizon")->required()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--samples", a.samples, "Trials per search")->capture_default_str();
  cmd->add_option("--val-size", a.val_size, "Validation rows at the end of each series (0: h)")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--n-series", a.n_series,
                  "1: a search per series; all: one global search (default: all for a "
                  "univariate model, 1 otherwise)");
  cmd->add_option("--set", a.sets,
                  "KEY=VALUE: an option fixed for every trial (taken out of the space), e.g. "
                  "--set max_steps=200");
  cmd->add_option("--prune-factor", a.prune_factor,
                  "Successive halving: at each rung (validation check 1, F, F², ...) only the "
                  "best 1/F of a search's trials go on (0: every trial runs all its steps)")
      ->capture_default_str();
  cmd->add_flag("--refit-with-val", a.refit_with_val,
                "Refit the best configurations with the validation rows held out");
  cmd->add_option("--seed", a.seed, "Seed of the draws")->check(kUint64)->capture_default_str();
  cmd->add_option("--threads", a.threads, "Trials at once (0: all cores)")->capture_default_str();
  cmd->add_option("--memory-limit-mb", a.memory_limit_mb,
                  "Memory budget for concurrent trials' arenas (0: none)")
      ->capture_default_str();
  cmd->add_flag("--no-resume", a.no_resume,
                "Start afresh: drop the journal an interrupted search left in --out");
  cmd->add_option("--out", a.out, "Folder for trials.csv, best.json and forecasts.csv")->required();
  cmd->callback([] { run_tune(a); });
}

}  // namespace shoal::cli
