#include "cli/profile_options.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.h"
#include "shoal/core/error.h"
#include "shoal/profile/machine.h"
#include "shoal/profile/output.h"

namespace shoal::cli {

namespace {

profile::Schedule parse_schedule(const std::string& s) {
  profile::Schedule sch;
  if (s.empty()) return sch;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    const size_t eq = item.find('=');
    SHOAL_CHECK(eq != std::string::npos, "--profile-schedule: expected key=value, got '{}'", item);
    const std::string key = item.substr(0, eq);
    int value = 0;
    try {
      value = std::stoi(item.substr(eq + 1));
    } catch (const std::exception&) {
      SHOAL_CHECK(false, "--profile-schedule: '{}' is not an integer", item.substr(eq + 1));
    }
    SHOAL_CHECK(value >= 0, "--profile-schedule: {} must be ≥ 0", key);
    if (key == "skip_first")
      sch.skip_first = value;
    else if (key == "wait")
      sch.wait = value;
    else if (key == "warmup")
      sch.warmup = value;
    else if (key == "active")
      sch.active = value;
    else if (key == "repeat")
      sch.repeat = value;
    else
      SHOAL_CHECK(false,
                  "--profile-schedule: unknown key '{}' (skip_first, wait, warmup, "
                  "active, repeat)",
                  key);
    pos = comma + 1;
  }
  SHOAL_CHECK(sch.active > 0, "--profile-schedule needs active > 0");
  return sch;
}

}  // namespace

void add_profile_options(CLI::App& cmd, ProfileOptions& opts) {
  CLI::Option* profile = cmd.add_option("--profile", opts.mode,
                                        "Profiler: off, stats (table + report) or trace (+ trace)")
                             ->check(CLI::IsMember({"off", "stats", "trace"}))
                             ->capture_default_str();
  // The profiler's settings need --profile: without it they would be read by nothing.
  cmd.add_option("--profile-out", opts.out, "Directory for the trace, report and summary")
      ->capture_default_str()
      ->needs(profile);
  cmd.add_option("--profile-schedule", opts.schedule,
                 "Steps to record, as torch.profiler.schedule: "
                 "skip_first=N,wait=N,warmup=N,active=N,repeat=N (default: every step)")
      ->needs(profile);
  cmd.add_option("--profile-events", opts.events_per_thread,
                 "Trace events kept per thread, 24 bytes each (more are dropped and counted): "
                 "bounds the trace of a fleet of any size")
      ->check(kNonNegative)
      ->capture_default_str()
      ->needs(profile);
  cmd.add_flag("--profile-gzip", opts.gzip,
               "Write the trace gzipped (<name>.pt.trace.json.gz; Perfetto opens it as is)")
      ->needs(profile);
  cmd.add_option("--profile-rows", opts.rows, "Rows of the end-of-run table")
      ->check(kPositive)
      ->capture_default_str()
      ->needs(profile);
  cmd.add_option("--profile-models", opts.models,
                 "Fleet fits with a trace process (and table rows) of their own; later fits "
                 "share one")
      ->check(kPositive)
      ->capture_default_str()
      ->needs(profile);
}

std::unique_ptr<profile::Recorder> make_recorder(const ProfileOptions& opts) {
  const profile::Mode mode = profile::parse_mode(opts.mode);
  if (mode == profile::Mode::kOff) return nullptr;
  profile::RecorderConfig cfg;
  cfg.mode = mode;
  cfg.schedule = parse_schedule(opts.schedule);
  cfg.events_per_thread = opts.events_per_thread;
  // Zone names are registered per model (a TSMixerx has ~50): room for every profiled model,
  // the shared one and the fleet's own.
  cfg.max_zones = 64 * (opts.models + 2);
  return std::make_unique<profile::Recorder>(cfg);
}

void finish_profile(profile::Recorder& rec, const ProfileOptions& opts, std::string_view name) {
  const char* env = std::getenv("SHOAL_PROFILE_MEASURE");
  if (!profile::load_cached_machine() && (env == nullptr || std::string_view(env) != "0"))
    std::fputs("profile: measuring this machine's peak and bandwidth (once, then cached)\n",
               stdout);
  const profile::ProfileOutput out =
      profile::write_profile(rec, opts.out, name, opts.rows, opts.gzip);
  std::fputs(out.table.c_str(), stdout);
  if (!out.trace_path.empty())
    fmt::print("profile: trace {} (open in https://ui.perfetto.dev or chrome://tracing)\n",
               out.trace_path);
  fmt::print("profile: report {}, summary {}\n", out.report_path, out.summary_path);
}

void plan_profile_outputs(OutputPlan& plan, const ProfileOptions& opts, std::string_view name) {
  if (profile::parse_mode(opts.mode) == profile::Mode::kOff) return;
  plan.folder(opts.out, "--profile-out");
  // The files themselves are checked only when the folder exists; a new one holds nothing.
  if (!std::filesystem::is_directory(opts.out)) return;
  const std::string base = (std::filesystem::path(opts.out) / std::string(name)).string();
  for (const char* ext : {".report.html", ".summary.json", ".pt.trace.json", ".pt.trace.json.gz"})
    plan.file(base + ext, "--profile-out");
}

}  // namespace shoal::cli
