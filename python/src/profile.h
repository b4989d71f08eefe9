// Python's `shoal.profile()`: a fit called inside the context receives a spec dict {"mode",
// "out", "name", "rows", "models"} (None when not profiling). The fit builds a Recorder from it,
// starts it on the thread that trains (so that training steps are profiler steps, as with the
// CLI's --profile), and writes the trace, report and summary there when training ends.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "shoal/profile/output.h"
#include "shoal/profile/recorder.h"

namespace shoal::py {

struct FitProfile {
  std::unique_ptr<profile::Recorder> rec;
  std::string out, name;
  int rows = 25;
  int models = 8;  // per-series fits with a trace process of their own
  bool gzip = false;
  profile::ProfileOutput result;

  // Parsed while holding the GIL; nullopt for None.
  static std::optional<FitProfile> from(const nanobind::object& spec) {
    if (spec.is_none()) return std::nullopt;
    const nanobind::dict d = nanobind::cast<nanobind::dict>(spec);
    FitProfile p;
    p.out = nanobind::cast<std::string>(d["out"]);
    p.name = nanobind::cast<std::string>(d["name"]);
    p.rows = nanobind::cast<int>(d["rows"]);
    p.models = nanobind::cast<int>(d["models"]);
    if (d.contains("gzip")) p.gzip = nanobind::cast<bool>(d["gzip"]);
    profile::RecorderConfig cfg;
    cfg.mode = profile::parse_mode(nanobind::cast<std::string>(d["mode"]));
    cfg.max_zones = 64 * (p.models + 2);  // as the CLI: ~50 zones per TSMixerx
    p.rec = std::make_unique<profile::Recorder>(cfg);
    return p;
  }
  // On the training thread, after training.
  void finish() { result = profile::write_profile(*rec, out, name, rows, gzip); }
};

inline nanobind::object profile_result(const std::optional<FitProfile>& p) {
  if (!p) return nanobind::none();
  nanobind::dict d;
  d["name"] = p->name;
  d["table"] = p->result.table;
  d["trace"] = p->result.trace_path;
  d["report"] = p->result.report_path;
  d["summary"] = p->result.summary_path;
  return d;
}

}  // namespace shoal::py
