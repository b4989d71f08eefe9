#include "shoal/profile/machine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/kernels/peak.h"

namespace shoal::profile {

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

std::string machine_cache_path() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/shoal/machine.json";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/shoal/machine.json";
  return {};
}

namespace {

// Bumped whenever the measurement changes, so older caches are not trusted. The peak is the
// widest vectors' (kernels::widest_isa()), named here so that a cache from a build that
// measured narrower vectors is measured again.
std::string machine_method() {
  return std::string("fma-loop-") + kernels::isa_name(kernels::widest_isa()) +
         "+triad-1core-p90-chunks";
}

// Keeps the triad's result observable so the compiler cannot drop it.
volatile float g_sink = 0;

}  // namespace

double measure_bandwidth_gbs() {
  // 3 × 64 MiB: far beyond any L3 this runs on, so every chunk streams from DRAM.
  constexpr size_t kN = size_t{16} << 20;
  constexpr size_t kChunk = size_t{256} << 10;  // 1 MiB per array: ~0.2 ms, well inside a slice
  constexpr int kPasses = 8;
  std::unique_ptr<float[]> a(new float[kN]), b(new float[kN]), c(new float[kN]);
  for (size_t i = 0; i < kN; ++i) {
    a[i] = 0.0f;
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
  float* __restrict pa = a.get();
  const float* __restrict pb = b.get();
  const float* __restrict pc = c.get();
  std::vector<double> rates;
  rates.reserve(kPasses * (kN / kChunk));
  for (int rep = 0; rep < kPasses; ++rep) {
    const float s = 0.5f + static_cast<float>(rep);
    for (size_t c0 = 0; c0 < kN; c0 += kChunk) {
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t i = c0; i < c0 + kChunk; ++i) pa[i] = pb[i] + s * pc[i];
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (rep > 0) rates.push_back(3.0 * 4.0 * static_cast<double>(kChunk) / sec / 1e9);
    }
    g_sink = g_sink + pa[static_cast<size_t>(rep)];
  }
  // A chunk that lost its time slice, or shared the memory bus with a neighbour's burst, is
  // slow; the fastest chunks can ride a prefetch ramp. The 90th percentile is neither.
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() * 9 / 10];
}

Machine measure_machine() {
  Machine m;
  m.cpu = cpu_model_name();
  m.peak_gflops = kernels::measure_peak_gflops();
  m.bandwidth_gbs = measure_bandwidth_gbs();
  m.source = "measured";
  const std::string path = machine_cache_path();
  if (path.empty()) return m;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const nlohmann::json j = {{"cpu", m.cpu},
                            {"peak_gflops", m.peak_gflops},
                            {"bandwidth_gbs", m.bandwidth_gbs},
                            {"method", machine_method()}};
  try {
    write_file_atomic(path, j.dump(2) + "\n");
  } catch (const Error&) {
    // a read-only home only loses the cache
  }
  return m;
}

std::optional<Machine> load_cached_machine() {
  const std::string path = machine_cache_path();
  if (path.empty()) return std::nullopt;
  std::ifstream f(path);
  if (!f.good()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("cpu") || !j.contains("peak_gflops") ||
      !j.contains("bandwidth_gbs"))
    return std::nullopt;
  // A cache written by an older measurement (e.g. a whole-pass triad that a loaded machine
  // dragged down to a few GB/s) is measured again.
  if (!j.contains("method") || j["method"] != machine_method()) return std::nullopt;
  Machine m;
  m.cpu = j["cpu"].is_string() ? j["cpu"].get<std::string>() : "";
  if (m.cpu != cpu_model_name()) return std::nullopt;
  if (!j["peak_gflops"].is_number() || !j["bandwidth_gbs"].is_number()) return std::nullopt;
  m.peak_gflops = j["peak_gflops"].get<double>();
  m.bandwidth_gbs = j["bandwidth_gbs"].get<double>();
  m.source = "cache";
  if (!m.known()) return std::nullopt;
  return m;
}

Machine machine_roofs(bool measure) {
  if (auto m = load_cached_machine()) return *m;
  if (measure) return measure_machine();
  Machine m;
  m.cpu = cpu_model_name();
  m.source = "none";
  return m;
}

}  // namespace shoal::profile
