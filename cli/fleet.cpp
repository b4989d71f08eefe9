// `shoal fleet --jobs F --out DIR`: many independent fits (one per jobs-file line, or one per
// series of a forecasting line) on pinned workers, with a journal in DIR so that a rerun after a
// crash or Ctrl-C finishes the work and writes the same output. Writes DIR/results.jsonl (one
// line per job, job order) and DIR/forecasts.csv (forecasting jobs), prints a summary per
// jobs-file line (accuracy against `test` next to seasonal naive for forecasters).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/fleet/fleet.h"
#include "shoal/fleet/jobs.h"

namespace shoal::cli {
namespace {

namespace fs = std::filesystem;

struct FleetArgs {
  std::string jobs, out, metrics_out, memory_limit = "0";
  int threads = 0;
  bool quiet = false, resume = false, no_resume = false, allow_failures = false;
};

// "0", "1048576", "512M", "2G", "1.5GiB" → bytes (binary units).
size_t parse_bytes(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::map<std::string, double> kUnits = {
      {"", 1},           {"B", 1},           {"K", 1024.0},      {"KB", 1024.0},
      {"KIB", 1024.0},   {"M", 1048576.0},   {"MB", 1048576.0},  {"MIB", 1048576.0},
      {"G", 1073741824}, {"GB", 1073741824}, {"GIB", 1073741824}};
  const auto it = kUnits.find(unit);
  if (used == 0 || it == kUnits.end() || !(v >= 0) || !std::isfinite(v * it->second) ||
      v * it->second >= 1.8e19)
    throw Error("cannot read the memory limit",
                ErrorContext{.field = "--memory-limit",
                             .expected = "bytes, or a number with K, M or G (e.g. 512M, 2G)",
                             .actual = text});
  return static_cast<size_t>(v * it->second);
}

struct GroupStats {
  std::string model;
  int64_t jobs = 0, failed = 0;
  std::vector<double> fit_s;
  fleet::ScoreSums scores;
  std::map<std::string, std::pair<double, int64_t>> means;  // metric → (sum, count)
};

void run_fleet_cli(const FleetArgs& a) {
  const int threads = cap_threads(a.threads, "fleet");
  const size_t memory_limit = parse_bytes(a.memory_limit);
  const std::vector<fleet::JobSpec> specs = fleet::read_jobs_file(a.jobs);
  SHOAL_CHECK(!specs.empty(), "{}: no jobs (every line is blank or a comment)", a.jobs);
  // Outputs: DIR (a folder, or made) and the files in it, none of them an input of the run.
  std::vector<std::string> inputs = {a.jobs};
  for (const fleet::JobSpec& sp : specs)
    for (const std::string* p : {&sp.data, &sp.test, &sp.static_df, &sp.futr_df})
      if (!p->empty()) inputs.push_back(*p);
  OutputPlan outputs(inputs);
  outputs.folder(a.out, "--out");
  const std::string parent = fs::path(a.out).parent_path().string();
  if (!parent.empty() && !fs::is_directory(parent))
    throw Error("the output's folder does not exist",
                ErrorContext{.file = a.out,
                             .field = "--out",
                             .expected = "a path in an existing folder",
                             .actual = fmt::format("no folder '{}'", parent)});
  // --metrics-out may sit in the --out folder, which the plan makes.
  outputs.file(a.metrics_out, "--metrics-out");
  fs::create_directories(a.out);
  const std::string results_path = (fs::path(a.out) / "results.jsonl").string();
  const std::string forecasts_path = (fs::path(a.out) / "forecasts.csv").string();
  outputs.file(results_path, "--out").file(forecasts_path, "--out");
  // One run per output folder: a second one fails here, before any job runs.
  const OutputLock lock((fs::path(a.out) / ".lock").string(), a.out);
  fleet::BuiltJobs built = fleet::build_jobs(specs);
  const std::string journal = (fs::path(a.out) / "journal.jsonl").string();
  const bool have_journal = fs::exists(journal);
  const bool resume = !a.no_resume && (a.resume || have_journal);
  if (!resume && have_journal) fs::remove(journal);
  fmt::print(stderr, "shoal fleet: {} jobs from {}{}\n", built.jobs.size(), a.jobs,
             resume && have_journal ? "; resuming from " + journal : "");

  fleet::FleetSummary sum;
  std::vector<fleet::JobRecord> records;
  {
    StopOnSignals stop;
    records = fleet::run_fleet(built.jobs,
                               {.workers = threads,
                                .memory_limit = memory_limit,
                                .journal = journal,
                                .progress = !a.quiet,
                                .stop = stop.flag()},
                               &sum);
  }
  if (sum.not_run > 0)
    exit_interrupted(fmt::format(
        "interrupted with {} of {} jobs not run; nothing written, the {} finished are kept in "
        "{}: rerun the same command to finish them",
        sum.not_run, sum.jobs, sum.jobs - sum.not_run, journal));

  // Outputs, assembled in job order from the records (this run's and the journal's).
  std::string results, forecasts = "job,unique_id,ds,y_hat\n";
  bool any_forecast = false;
  std::vector<std::string> group_order;
  std::map<std::string, GroupStats> groups;
  int shown = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const fleet::JobRecord& r = records[i];
    const fleet::JobInfo& info = built.info[i];
    nlohmann::json line = {{"id", r.id},
                           {"group", info.group},
                           {"model", info.model},
                           {"ok", r.ok},
                           {"error", r.error},
                           {"seconds", r.seconds},
                           {"arena_bytes", r.arena_bytes},
                           {"metrics", r.output.metrics}};
    results += line.dump() + "\n";
    if (info.forecast) {
      any_forecast = true;
      if (r.ok) forecasts += r.output.rows;
    }
    if (!groups.count(info.group)) group_order.push_back(info.group);
    GroupStats& g = groups[info.group];
    g.model = info.model;
    ++g.jobs;
    if (!r.ok) {
      ++g.failed;
      if (shown++ < 10) fmt::print(stderr, "shoal fleet: job '{}' failed: {}\n", r.id, r.error);
      continue;
    }
    g.fit_s.push_back(r.seconds);
    g.scores.add(r.output.metrics);
    for (const char* k : {"val_mse", "val_r2", "hr", "ndcg"})
      if (r.output.metrics.contains(k)) {
        g.means[k].first += r.output.metrics.at(k).get<double>();
        ++g.means[k].second;
      }
  }
  if (shown > 10) fmt::print(stderr, "shoal fleet: ... and {} more failed jobs\n", shown - 10);
  // A run with nothing to show replaces nothing: an earlier run's outputs stay as they were.
  if (sum.failed == sum.jobs)
    throw Error(
        fmt::format("every job failed ({}; the first are listed above): nothing written, "
                    "and the outputs of an earlier run in {} are left as they were",
                    sum.jobs, a.out));
  // This run's outputs replace an earlier run's whole, so none of its files sits beside them.
  shoal::write_file_atomic(results_path, results);
  if (any_forecast)
    shoal::write_file_atomic(forecasts_path, forecasts);
  else
    fs::remove(forecasts_path);

  fmt::print("{:<24} {:<14} {:>6} {:>6} {:>9}  {}\n", "line", "model", "jobs", "failed",
             "fit s p50", "accuracy");
  nlohmann::json groups_j = nlohmann::json::array();
  for (const std::string& name : group_order) {
    const GroupStats& g = groups[name];
    std::string acc;
    nlohmann::json gj = {{"line", name},
                         {"model", g.model},
                         {"jobs", g.jobs},
                         {"failed", g.failed},
                         {"fit_s_median", median(g.fit_s)}};
    const fleet::ScoreSums& s = g.scores;
    if (s.n > 0) {
      const double n = double(s.n), nm = double(std::max<int64_t>(s.n_mase, 1));
      acc = fmt::format(
          "{} series: sMAPE {:.2f} MASE {:.3f} | seasonal naive sMAPE {:.2f} "
          "MASE {:.3f}",
          s.n, s.smape / n, s.mase / nm, s.snaive_smape / n, s.snaive_mase / nm);
      gj["scored_series"] = s.n;
      gj["smape"] = s.smape / n;
      gj["mase"] = s.mase / nm;
      gj["mae"] = s.mae / n;
      gj["seasonal_naive"] = {
          {"smape", s.snaive_smape / n}, {"mase", s.snaive_mase / nm}, {"mae", s.snaive_mae / n}};
    }
    for (const auto& [k, v] : g.means) {
      const double mean = v.first / double(v.second);
      acc += fmt::format("{}{} {:.4f}", acc.empty() ? "" : "  ", k, mean);
      gj[k] = mean;
    }
    fmt::print("{:<24} {:<14} {:>6} {:>6} {:>9.3f}  {}\n", name, g.model, g.jobs, g.failed,
               median(g.fit_s), acc);
    groups_j.push_back(gj);
  }
  fmt::print(
      "fleet: {} jobs ({} from an earlier run), {} failed, {} workers, {:.1f} s, {:.2f} fits/s, "
      "median fit {:.3f} s, median arena {:.1f} KiB; results in {}\n",
      sum.jobs, sum.skipped, sum.failed, sum.workers, sum.wall_s, sum.fits_per_s, sum.fit_s_median,
      double(sum.arena_bytes_median) / 1024.0, a.out);
  if (!a.metrics_out.empty()) {
    nlohmann::json j = fleet::summary_json(sum);
    j["jobs_file"] = a.jobs;
    j["out"] = a.out;
    j["memory_limit"] = memory_limit;
    j["lines"] = groups_j;
    shoal::write_file_atomic(a.metrics_out, j.dump(2) + "\n");
  }
  if (sum.failed > 0 && !a.allow_failures)
    throw ExitStatus(kExitPartial,
                     fmt::format("{} of {} jobs failed (listed above and in {}); pass "
                                 "--allow-failures to exit 0",
                                 sum.failed, sum.jobs, results_path));
}

}  // namespace

void register_fleet(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "fleet", "Run many independent fits from a jobs file on pinned workers (crash-safe)");
  static FleetArgs a;
  cmd->add_option("--jobs", a.jobs,
                  "Jobs file: JSON lines or CSV (data, model, seed, config, test, series; see "
                  "docs/fleet.md)")
      ->required();
  cmd->add_option("--out", a.out, "Output folder: results.jsonl, forecasts.csv and the journal")
      ->required();
  cmd->add_option("--threads", a.threads, "Workers, one job each, pinned (0: all cores)")
      ->capture_default_str();
  cmd->add_option("--memory-limit", a.memory_limit,
                  "Budget for running jobs' arenas, e.g. 512M or 2G (0: none)")
      ->capture_default_str();
  cmd->add_flag("--resume", a.resume,
                "Skip jobs finished by an earlier run (the default when --out has a journal)");
  cmd->add_flag("--no-resume", a.no_resume,
                "Start afresh: drop the journal and the outputs of an earlier run in --out");
  cmd->add_flag("--allow-failures", a.allow_failures,
                "Exit 0 when some jobs fail (default: exit 4; they are listed in results.jsonl)");
  cmd->add_option("--metrics-out", a.metrics_out,
                  "Write jobs, failed, wall_s, fits_per_s, fit_s_median, threads, "
                  "arena_bytes_median and per-line scores as JSON");
  cmd->add_flag("--quiet", a.quiet, "No progress line");
  cmd->callback([] { run_fleet_cli(a); });
}

}  // namespace shoal::cli
