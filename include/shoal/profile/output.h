// The end of a profiling run, shared by the CLI's `--profile` and Python's `shoal.profile()`:
// summarise the recorder against the machine's roofs, write the trace, the HTML report and the
// JSON summary, and hand back the table. Also the choice of trace process per fit of a fleet.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "shoal/profile/recorder.h"

namespace shoal::profile {

struct ProfileOutput {
  std::string table;         // the end-of-run table (format_table)
  std::string trace_path;    // DIR/<name>.pt.trace.json[.gz], empty unless trace mode
  std::string report_path;   // DIR/<name>.report.html
  std::string summary_path;  // DIR/<name>.summary.json
  bool measured = false;     // the machine's roofs were measured now (then cached)
};

// Stops `rec` and writes DIR/<name>.*. The roofs come from the `shoal bench peak` cache; when it
// is missing they are measured and cached, unless SHOAL_PROFILE_MEASURE=0 (tests), in which case
// the % of peak columns stay empty.
// `gzip`: the trace as DIR/<name>.pt.trace.json.gz.
ProfileOutput write_profile(Recorder& rec, const std::string& dir, std::string_view name,
                            int table_rows = 25, bool gzip = false);

// Trace processes for the fits of a fleet: the first `own` fits get one each, named by `pick`'s
// argument; later fits share one named `shared_name`, so a trace of thousands of fits stays
// readable. Thread-safe (fleet workers pick as they start a fit).
class FitProcesses {
 public:
  FitProcesses(Recorder& rec, int own, std::string shared_name)
      : rec_(rec), own_(own), shared_name_(std::move(shared_name)) {}
  int pick(const std::string& fit_name);

 private:
  Recorder& rec_;
  int own_;
  std::string shared_name_;
  int shared_ = -1;
  std::mutex mu_;
};

}  // namespace shoal::profile
