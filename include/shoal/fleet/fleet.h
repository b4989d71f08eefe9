// The fleet: many independent fits across every core.
//
// One worker thread per core (pinned), each taking the next job from a shared queue and
// training it start to finish in its own arena, so nothing is shared between fits except the
// queue index. A job that throws is recorded with its error and the others go on.
//
// Crash safety: every finished job is appended to a journal (one JSON line, fsynced) before it
// counts as done. Rerunning the same fleet with the same journal skips the finished jobs, and
// the final output is assembled from the journal in job order, written to a temporary name and
// renamed, so a crash or Ctrl-C at any point loses at most the jobs in flight.
//
// Settings: a job may carry a `key` (e.g. a digest of its data, model and config). The journal
// stores it, and a rerun whose job of the same id has a different key stops with an error
// instead of mixing results of two settings in one output.
//
// Memory budget: a job declares the bytes its plan needs; jobs wait while running jobs' bytes
// plus theirs would exceed the limit, and a job that alone exceeds it fails with a clear error.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shoal::profile {
class Recorder;
}

namespace shoal::fleet {

// What a job produces: text rows for the combined output (e.g. forecast CSV lines without a
// header) and metrics for the summary.
struct JobOutput {
  std::string rows;
  nlohmann::json metrics = nlohmann::json::object();
};

struct Job {
  std::string id;          // unique within the fleet; the journal key
  size_t arena_bytes = 0;  // planned memory of this job's fit (0 = unknown, not budgeted)
  std::function<JobOutput()> run;
  std::string key;  // the job's settings; a journal record with another key is not reused
};

struct JobRecord {
  std::string id;
  bool ok = false;
  std::string error;  // when !ok
  std::string key;
  double seconds = 0;      // wall time of the job
  double cpu_seconds = 0;  // CPU time of the worker thread during the job
  size_t arena_bytes = 0;
  JobOutput output;
  bool from_journal = false;  // finished by an earlier run
};

struct FleetConfig {
  int workers = 0;          // 0 = one per allowed CPU
  size_t memory_limit = 0;  // bytes; 0 = no limit
  std::string journal;      // path; empty = no journal (no resume)
  // What the error for a journal of other settings tells the user to do (the CLI's flags by
  // default; a library caller names its own argument).
  std::string start_afresh = "rerun with --no-resume to start afresh (or delete the journal)";
  bool progress = true;  // progress line on stderr
  bool pin = true;       // pin workers one per core
  // Set to true (e.g. from a SIGINT handler) to stop taking new jobs; running jobs finish.
  std::atomic<bool>* stop = nullptr;
  // Profiler (null: off): scheduling zones "fleet.job", "fleet.memory_wait" (idle) and
  // "fleet.journal" on each worker, in trace process 0; a job's own zones go to its model's.
  profile::Recorder* profiler = nullptr;
};

struct FleetSummary {
  int64_t jobs = 0;
  int64_t failed = 0;
  int64_t skipped = 0;  // finished in an earlier run (journal)
  int64_t not_run = 0;  // left when stopped early
  double wall_s = 0;
  double fits_per_s = 0;        // successful jobs run by this invocation / wall
  double fit_s_median = 0;      // over jobs run by this invocation
  double fit_cpu_s_median = 0;  // thread CPU time, same jobs (robust to a loaded machine)
  size_t arena_bytes_median = 0;
  int workers = 0;
};

// Runs the jobs; returns one record per job in job order (records of jobs not run when stopped
// early have ok = false and error "not run"). Throws shoal::Error before running anything when
// the journal holds a record for a job id with a different key.
std::vector<JobRecord> run_fleet(const std::vector<Job>& jobs, const FleetConfig& cfg,
                                 FleetSummary* summary = nullptr);

// Reads a journal; a truncated or corrupt last line (a crash mid-write) is ignored, corruption
// elsewhere throws shoal::Error naming the line.
std::vector<JobRecord> read_journal(const std::string& path);

nlohmann::json summary_json(const FleetSummary& s);

}  // namespace shoal::fleet
