// Forecasting fits as fleet jobs: the one place that turns a forecasting job and a table of
// series into "one fit per panel" (one series each, or all of them jointly), for `shoal
// forecast`, jobs files and Python alike.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shoal/data/timeseries.h"
#include "shoal/fleet/fleet.h"
#include "shoal/train/forecast_job.h"

namespace shoal::fleet {

// The data every fit of a run reads (read-only while the fleet runs).
struct ForecastData {
  const data::SeriesSet* set = nullptr;
  const data::StaticTable* statics = nullptr;  // needed when the job has stat_exog_list
  const data::SeriesSet* futr = nullptr;       // future exogenous values after each series
  Index h_future = 0;                          // rows per series in futr
  // Keeps the above alive when the jobs outlive the caller's scope (jobs files).
  std::shared_ptr<const void> owner;
};

// The panels of a run: every series alone (per_series), or all of them in one; the first
// `max_series` series only when > 0.
std::vector<std::vector<Index>> forecast_panels(Index n_series, bool per_series,
                                                Index max_series = 0);

// What the caller makes of one fit: the panel's series and its result in, the job's output (the
// journal's rows and metrics) out. Runs on a fleet worker: fits of different panels call it
// concurrently.
using FitSink = std::function<JobOutput(std::span<const Index> series, train::FitResult& fit)>;

struct ForecastJobsConfig {
  // Job ids: the series' id for a one-series panel (after `id_prefix`), else `joint_id`.
  std::string id_prefix;
  std::string joint_id = "all";
  // The run's settings and data (forecast_settings, content digests); each job's key derives
  // from it, so a journal is only reused by a run with the same settings and data.
  std::string key;
  // Profiled runs: the trace process a fit records into (null: the job's profile_model).
  std::function<int(const std::string& job_id)> profile_process;
  // The weights each one-series panel's fit starts from, by series index in the set (empty:
  // the model's own init): neuralforecast's fit of a fitted model continues from its weights.
  std::shared_ptr<const std::vector<std::string>> series_init_weights;
  // What a job runs on its panel (its series, the panel, the job): empty, train::fit_forecast;
  // a jobs file's tune line, a search that refits its best configuration (train/search.h).
  std::function<train::FitResult(std::span<const Index> series, const data::Panel& panel,
                                 const train::ForecastJob& job)>
      fit;
};

// One fleet job per panel, each fitting `job` on it and handing the result to `sink`. The arena
// bytes of the first panel's plan are every job's (panels of one run have the same shape).
std::vector<Job> forecast_jobs(const ForecastData& data, const train::ForecastJob& job,
                               const std::vector<std::vector<Index>>& panels,
                               const ForecastJobsConfig& cfg, FitSink sink);

// A digest of a series table's contents (ids, timestamps, values, exogenous columns), for keys.
std::string content_digest(const data::SeriesSet& set);

}  // namespace shoal::fleet
