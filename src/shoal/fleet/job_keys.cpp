// Digests, and the journal key of a job spec (fleet/job_specs.h).
#include <fmt/format.h>

#include "shoal/core/file_io.h"
#include "shoal/fleet/job_specs.h"

namespace shoal::fleet {

void Digest::add(const void* bytes, size_t n) {
  const auto* b = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) {
    h_ ^= b[i];
    h_ *= 1099511628211ULL;
  }
}

std::string Digest::hex() const {
  return fmt::format("{:016x}", h_);
}

std::string digest(const std::string& text) {
  Digest d;
  d.add(text.data(), text.size());
  return d.hex();
}

namespace {

// A digest of a file's bytes: a journal is reused only for the same contents, whatever the
// file's name or time stamp (a file rewritten with other data within the clock's resolution, or
// copied back with its old time, must not pass for the old one).
std::string file_digest(const std::string& path, std::map<std::string, std::string>& cache) {
  if (path.empty()) return "";
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  std::string d;
  try {
    d = digest(read_input_file(path));
  } catch (const std::exception&) {
    d = "missing";  // the line's job reports why it cannot be read
  }
  return cache.emplace(path, d).first->second;
}

}  // namespace

std::string job_key(const JobSpec& s, std::map<std::string, std::string>& digests) {
  nlohmann::json j = {{"model", s.model},
                      {"data", file_digest(s.data, digests)},
                      {"test", file_digest(s.test, digests)},
                      {"seed", s.seed},
                      {"series", s.series},
                      {"max_series", s.max_series},
                      {"config", s.config}};
  if (!s.tune.is_null()) j["tune"] = s.tune;
  if (!s.static_df.empty()) j["static"] = file_digest(s.static_df, digests);
  if (!s.futr_df.empty()) j["futr_df"] = file_digest(s.futr_df, digests);
  // Files a config names (NCF test negatives) are inputs too.
  if (s.config.is_object() && s.config.contains("test_negatives") &&
      s.config["test_negatives"].is_string())
    j["test_negatives"] = file_digest(
        resolve_job_path(s.config["test_negatives"].get<std::string>(), s.base_dir), digests);
  return digest(j.dump());
}

}  // namespace shoal::fleet
