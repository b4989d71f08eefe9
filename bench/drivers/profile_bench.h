// `shoal bench profiler`: what the profiler costs. (1) One begin+end zone in a tight loop, per
// mode, minus the empty loop. (2) End-to-end slowdown of real training workloads, measured as
// interleaved rounds in one process (off, stats, trace in rotating order, the median of the
// per-round ratios of process CPU time), so machine noise hits every mode alike and time slices
// lost to other processes do not count; beside it, what the measured zone cost alone predicts.
// Reports, never judges.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "shoal/profile/recorder.h"

namespace shoal::profile {

// A workload the benchmark times: attach(rec) points it at a recorder (null: off) and
// registers zones; run() does one timed unit (e.g. one epoch) and returns its step count.
struct Workload {
  std::string name;
  std::function<void(Recorder*)> attach;
  std::function<int64_t()> run;
  bool headline = false;  // a training case of the targets (counts in the worst case)
};

struct OverheadCase {
  std::string name;
  double step_us_off = 0, step_us_stats = 0, step_us_trace = 0;  // medians, CPU µs/step
  double overhead_stats = 0, overhead_trace = 0;  // fractions: median of per-round ratios − 1
  std::array<double, 2> ci_stats{}, ci_trace{};   // ~95% confidence interval of those medians
  double modelled_trace = 0;  // zones/step × zone_ns_trace ÷ step time (what zones alone cost)
  double zones_per_step = 0;
  int rounds = 0;
  bool headline = false;
};

struct ProfilerBench {
  double zone_ns_off = 0, zone_ns_stats = 0, zone_ns_trace = 0;
  double chain_ns_trace = 0;  // per zone of a ZoneChain (consecutive zones)
  std::vector<OverheadCase> cases;
  double overhead_stats = 0, overhead_trace = 0;  // the worst headline case
};

// Median over `reps` of the best 10 000-zone chunk of `iterations` empty zones, minus the same
// for the empty loop. `chain`: the zones follow each other in one ZoneChain.
double zone_cost_ns(Mode mode, int64_t iterations, int reps, bool chain = false);
// `rounds` ≤ 0: as many as fit in about `seconds` of CPU time (11 to 401), sized by the
// warm-up units.
OverheadCase measure_overhead(const Workload& w, int rounds, double seconds = 10);
// The built-in workloads (the MLP demo shapes). NCF and TSMixerx cases are added here as those
// models land.
std::vector<Workload> default_workloads();
ProfilerBench bench_profiler(int rounds, double seconds = 10);
std::string format_profiler_bench(const ProfilerBench& b);
void write_profiler_bench_json(const ProfilerBench& b, const std::string& path);

}  // namespace shoal::profile
