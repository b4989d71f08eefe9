// What a profiling session found: per-zone rows (self/total time, calls, avg, p99, analytic FLOPs
// and bytes, GFLOP/s, % of the machine's peak, GB/s, compute/memory bound), the main thread's
// step breakdown by category (sums to the recorded wall time exactly: every instant of a step
// lies in exactly one zone's self time), per-thread busy time and parallel efficiency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/profile/machine.h"
#include "shoal/profile/memory.h"
#include "shoal/profile/recorder.h"

namespace shoal::profile {

struct ZoneRow {
  std::string name;
  Category category = Category::kOther;
  int model = 0;
  uint64_t calls = 0;
  uint64_t rows = 0;  // Σ rows of the calls
  double total_ns = 0, self_ns = 0, avg_ns = 0, p99_ns = 0, min_ns = 0, max_ns = 0;
  Cost cost;          // Σ over calls
  double gflops = 0;  // cost.flops / total time (time on one thread: a per-core rate)
  double peak_fraction = 0;
  double gbs = 0;
  double intensity = 0;    // FLOP per byte
  const char* bound = "";  // "compute", "memory" or "" (no FLOPs, or no known machine)
};

struct ThreadRow {
  int thread = 0;
  double busy_ns = 0;  // self time of every zone on the thread except idle ones
  double busy_fraction = 0;
  int64_t events = 0;
  uint64_t dropped = 0;
};

// Main-thread time per category over the recorded steps; step-zone self time is "other".
struct Breakdown {
  double ns[kCategoryCount] = {};
  double wall_ns = 0;
  double sum_ns() const;
};

struct Report {
  Mode mode = Mode::kOff;
  int64_t steps = 0;
  double wall_ns = 0;
  double step_mean_ns = 0, step_p50_ns = 0, step_p99_ns = 0;
  Breakdown breakdown;
  std::vector<ZoneRow> zones;  // sorted by self time, descending
  std::vector<ThreadRow> threads;
  double parallel_efficiency = 0;  // Σ busy / (threads · wall)
  uint64_t calls = 0;              // zone calls recorded, all threads
  uint64_t dropped = 0;
  int64_t events = 0;
  double zone_cost_ns = 0;       // measured cost of one zone in this mode
  double overhead_fraction = 0;  // calls · zone cost / (threads · wall)
  Machine machine;
  std::vector<MemoryPlan> memory;  // per model (memory.h)
  FleetMemory fleet;
  uint64_t peak_rss = 0;  // bytes, the process's peak resident set at the end of the run
};

Report summarize(const Recorder& rec, const Machine& machine);
// The end-of-run table with the breakdown, threads, drops, overhead and machine in a footer.
std::string format_table(const Report& r, int max_rows = 25);
// The memory view (totals per model, replicas, fleet, peak RSS) and the advice, as the table's
// footer lines.
std::string format_memory(const Report& r);
std::string format_advice(const Report& r);
// The report as JSON (for tools, the benchmark and `shoal profile diff`), written to a temp
// name and renamed; read back (zones, breakdown, threads, machine, memory) by read_report_json.
std::string report_json(const Report& r);
void write_report_json(const Report& r, const std::string& path);
Report read_report_json(const std::string& path);
// Median cost in ns of one begin+end zone pair in `mode` (a private Recorder, a tight loop).
double measure_zone_cost_ns(Mode mode, int iterations = 200000);

}  // namespace shoal::profile
