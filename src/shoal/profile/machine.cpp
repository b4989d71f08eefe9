#include "shoal/profile/machine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "shoal/kernels/bench.h"

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

// Keeps the triad's result observable so the compiler cannot drop it.
volatile float g_sink = 0;

}  // namespace

double measure_bandwidth_gbs() {
  constexpr size_t kN = size_t{8} << 20;  // 32 MiB per array
  std::unique_ptr<float[]> a(new float[kN]), b(new float[kN]), c(new float[kN]);
  for (size_t i = 0; i < kN; ++i) {
    a[i] = 0.0f;
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
  float* __restrict pa = a.get();
  const float* __restrict pb = b.get();
  const float* __restrict pc = c.get();
  double best = 0;
  for (int rep = 0; rep < 6; ++rep) {
    const float s = 0.5f + static_cast<float>(rep);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < kN; ++i) pa[i] = pb[i] + s * pc[i];
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    g_sink = g_sink + pa[rep];
    if (rep > 0) best = std::max(best, 3.0 * 4.0 * static_cast<double>(kN) / sec / 1e9);
  }
  return best;
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
  const nlohmann::json j = {
      {"cpu", m.cpu}, {"peak_gflops", m.peak_gflops}, {"bandwidth_gbs", m.bandwidth_gbs}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f.good()) return m;  // a read-only home only loses the cache
    f << j.dump(2) << '\n';
  }
  std::filesystem::rename(tmp, path, ec);
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
