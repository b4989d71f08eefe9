// Fleet jobs files: what `shoal fleet --jobs F` reads, and how each line becomes runnable jobs.
//
// A jobs file is JSON lines (one object per line; blank lines and lines starting with # are
// skipped) or CSV with a header. Each line names:
//   data    path of the data set (relative paths are relative to the jobs file's folder)
//   model   a forecaster of the registry (tsmixerx, nhits, mlp, naive, ...), mlp_regressor (the
//           tabular regressor of `shoal mlp`) or ncf
//   seed    random seed (default 1)
//   config  overrides of the model's settings (JSON: an object; CSV: every other column, an
//           empty cell meaning "default")
//   id      optional name of the line (default "line<N>")
//   test    forecasting: held-out table to score against; ncf: the *.test.rating file
//   series  forecasting: "each" (default: one model per series, the common case) or "all"
//           (one model over every series)
//   max_series  forecasting: only the first N series of the data (0: all)
//   tune    forecasting: a hyper-parameter search per job, its best configuration refitted
//           (train/search.h: samples, val_size, prune_factor, refit_with_val)
// A hyper-parameter sweep is one JSON line with "sweep": {"seed": [1, 2, 3], "learning_rate":
// [0.001, 0.01]} — one job per combination (the config keys or "seed"), named
// "<id>[learning_rate=0.001,seed=1]" (axes in key order).
//
// A line that cannot be parsed, or whose data cannot be read, becomes failed jobs with the
// error (the others still run). Every job carries a key: a digest of its model, data (path,
// size, modification time), seed and full config, so a resumed fleet never mixes settings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/fleet/fleet.h"
#include "shoal/fleet/job_specs.h"

namespace shoal::fleet {

// What the runnable jobs of a jobs file need besides the fleet::Job list: the per-job facts
// that the CLI prints and writes (group, model) in the same order.
struct JobInfo {
  std::string group;
  std::string model;
  bool forecast = false;  // rows are `job,unique_id,ds,y_hat` lines
};

struct BuiltJobs {
  std::vector<Job> jobs;
  std::vector<JobInfo> info;
  // Loaded data sets, shared by the jobs' closures (kept alive with them).
  std::shared_ptr<void> data;
};

// Turns specs into jobs: reads each data set once, expands forecasting lines with series
// "each" into one job per series, plans each group's arena bytes, and makes every job train on
// one thread (the fleet gives each job a core). Errors of a line become failing jobs.
BuiltJobs build_jobs(const std::vector<JobSpec>& specs);

// Per-job metrics that summaries add up (forecasting with a test set): sums over scored series.
struct ScoreSums {
  double smape = 0, mase = 0, mae = 0, snaive_smape = 0, snaive_mase = 0, snaive_mae = 0;
  int64_t n = 0, n_mase = 0;
  void add(const nlohmann::json& metrics);
};

}  // namespace shoal::fleet
