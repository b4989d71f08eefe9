// `--profile off|stats|trace`, `--profile-out DIR` and `--profile-schedule` for every training
// command: build the Recorder before training, and after it print the table and write the
// trace, the HTML report and a JSON summary into DIR.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "shoal/core/file_io.h"
#include "shoal/profile/recorder.h"

namespace shoal::cli {

struct ProfileOptions {
  std::string mode = "off";
  std::string out = "shoal-profile";
  std::string schedule;  // "skip_first=1,wait=0,warmup=2,active=20,repeat=1"
  int64_t events_per_thread = 1 << 16;
  int rows = 25;
  int models = 8;     // fleet models with a trace process of their own; the rest share one
  bool gzip = false;  // the trace as <name>.pt.trace.json.gz
};

void add_profile_options(CLI::App& cmd, ProfileOptions& opts);
// Null when the mode is off.
std::unique_ptr<profile::Recorder> make_recorder(const ProfileOptions& opts);
// Stops the recorder, prints the table and writes DIR/<name>.{pt.trace.json[.gz],report.html,
// summary.json}. The machine's roofs come from the `shoal bench peak` cache (measured now and
// cached if missing).
void finish_profile(profile::Recorder& rec, const ProfileOptions& opts, std::string_view name);
// Adds --profile-out and the files finish_profile writes there to `plan` (when profiling is on).
void plan_profile_outputs(OutputPlan& plan, const ProfileOptions& opts, std::string_view name);

}  // namespace shoal::cli
