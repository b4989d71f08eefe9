// Chrome Trace Event JSON (object form) of a trace-mode session, as read by Perfetto UI and
// chrome://tracing: "X" complete events with ts/dur in µs (3 decimals, integer ns underneath,
// relative to the session start so nesting survives the conversion), pid = model, tid = the
// thread's small slot index, cat = the zone's category, args = rows and analytic FLOPs;
// "M" process_name/thread_name metadata; run facts (machine roofs, dropped events) as top-level
// keys. The step zones are "ProfilerStep#N", as torch.profiler names them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "shoal/profile/machine.h"
#include "shoal/profile/recorder.h"

namespace shoal::profile {

std::string chrome_trace_json(const Recorder& rec, const Machine& machine);
// Written atomically (core/file_io.h). Conventionally named "<name>.pt.trace.json"; a path
// ending in ".gz" ("<name>.pt.trace.json.gz", which Perfetto opens as is) is written gzipped.
// The trace is bounded by RecorderConfig::events_per_thread (24 bytes each in memory, ~100 in
// the JSON) times the threads: a fleet of thousands of fits drops, and counts, the rest.
void write_chrome_trace(const Recorder& rec, const Machine& machine, const std::string& path);
// gzip (RFC 1952) of `bytes` in memory, for the trace (4 GiB inputs at most).
std::string gzip_bytes(std::string_view bytes, int level = 6);

// The in-repo validator: strict JSON; a top-level object with a "traceEvents" array; every event
// has ph, name, pid, tid (and ts unless it is metadata); pid and tid are integers in [0, 2^31);
// X events have dur ≥ 0; per (pid, tid), X events nest properly (each one lies inside the
// enclosing open one or starts after it ends). Returns the problems found (empty: valid).
struct TraceCheck {
  std::vector<std::string> errors;
  int64_t x_events = 0;
  int64_t tracks = 0;
  bool ok() const { return errors.empty(); }
};
TraceCheck validate_chrome_trace(std::string_view json_text, size_t max_errors = 20);

}  // namespace shoal::profile
