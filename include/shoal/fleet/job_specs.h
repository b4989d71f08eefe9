// A fleet jobs file read into job specs: one per line after sweep expansion, each with the key
// that tells a resumed fleet whether a journal's result is the same job (fleet/jobs.h turns the
// specs into runnable jobs; the file's format is described there).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shoal::fleet {

// One line of a jobs file after sweep expansion.
struct JobSpec {
  std::string id;
  std::string group;   // the line's id (sweep members and per-series jobs share it)
  int line = 0;        // 1-based line in the jobs file
  std::string source;  // the jobs file (for messages)
  std::string model;
  std::string data;       // resolved path
  std::string test;       // resolved path, may be empty
  std::string static_df;  // forecasters: resolved path of the static table, may be empty
  std::string futr_df;    // forecasters: resolved path of the future exogenous frame, may be empty
  std::string base_dir;   // the jobs file's folder (resolves paths inside config)
  uint64_t seed = 1;
  std::string series = "each";
  int64_t max_series = 0;
  nlohmann::json config = nlohmann::json::object();
  // Forecasters: a hyper-parameter search per job instead of one fit (train/search.h's
  // settings); null: none.
  nlohmann::json tune;
  std::string error;  // non-empty: the line is bad, its job fails with this
};

// Parses a jobs file (JSON lines or CSV, told apart by the first non-blank character).
std::vector<JobSpec> read_jobs_file(const std::string& path);
std::vector<JobSpec> parse_jobs(const std::string& text, const std::string& source,
                                const std::string& base_dir);

// A path of a jobs file, resolved against the file's folder unless it is absolute.
std::string resolve_job_path(const std::string& path, const std::string& base_dir);

// 64-bit FNV-1a, fed in pieces (a large table need not be copied into one string first), as
// 16 hex digits.
class Digest {
 public:
  void add(const void* bytes, size_t n);
  std::string hex() const;

 private:
  uint64_t h_ = 1469598103934665603ULL;
};

// The Digest of `text`.
std::string digest(const std::string& text);

// A spec's journal key: a digest of its model, seed, series, config and the bytes of every file
// it reads (`digests` caches the files' digests by path).
std::string job_key(const JobSpec& spec, std::map<std::string, std::string>& digests);

}  // namespace shoal::fleet
