// The machine's roofs for the profiler's "% of peak" and roofline: single-core FP32 FMA peak
// (kernels::measure_peak_gflops) and single-core triad bandwidth, measured by `shoal bench peak`
// and cached as JSON in $XDG_CACHE_HOME/shoal/machine.json (else ~/.cache/shoal/machine.json),
// keyed by the CPU model so a cache copied to another machine is not trusted.
#pragma once

#include <optional>
#include <string>

namespace shoal::profile {

struct Machine {
  double peak_gflops = 0;    // one core, FP32 FMA
  double bandwidth_gbs = 0;  // one core, triad a = b + s·c over arrays far larger than L3
  std::string cpu;           // /proc/cpuinfo "model name"
  std::string source;        // "measured", "cache", "none"
  bool known() const { return peak_gflops > 0 && bandwidth_gbs > 0; }
  double ridge() const { return known() ? peak_gflops / bandwidth_gbs : 0; }  // FLOP/byte
};

std::string cpu_model_name();
std::string machine_cache_path();
// Single-core triad bandwidth in GB/s (bytes counted as 3 arrays × 4 B per element, as STREAM)
// over 3 × 64 MiB, timed in 1 MiB chunks over 7 passes; the 90th percentile chunk rate, so
// chunks that lost their time slice on a shared machine do not drag it down. One core, because
// the roofline places zones, and a zone runs on one core against the one-core FMA peak.
double measure_bandwidth_gbs();
// Measures peak and bandwidth (about 1.5 s) and writes the cache.
Machine measure_machine();
// The cached machine for this CPU, if any.
std::optional<Machine> load_cached_machine();
// Cached if present; otherwise measured and cached when `measure` is true; otherwise unknown.
Machine machine_roofs(bool measure);

}  // namespace shoal::profile
