// The kernel benchmark behind `shoal bench kernels` and `shoal bench peak`: measures the
// core's FP32 FMA peak, then times the fused Linear kernels and the GEMM forms on the shapes
// the models use, and reports GFLOP/s and the fraction of that peak. Reports, never judges.
#pragma once

#include <string>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

struct BenchRow {
  std::string name;           // "linear fwd+bwd", "gemm NT xsmm", ...
  Index n = 0, i = 0, o = 0;  // batch rows, in features, out features
  double flops = 0;           // per call
  double median_us = 0;
  double gflops = 0;
  double peak_fraction = 0;
  double best_us = 0;  // the fastest sample: what the kernel does when nothing interferes
  double best_fraction = 0;
};

struct BenchReport {
  double peak_gflops = 0;
  std::vector<BenchRow> cases;
};

// Single-core FP32 peak in GFLOP/s: 12 independent FMA chains of the widest vector the build
// targets (ymm on x86-64-v3, zmm with AVX-512), five runs of ~0.2 s, the best ~60 µs chunk of
// them (robust to time slices lost on a shared machine).
double measure_peak_gflops();

// Median cache-line round trip between two CPUs, in ns: two threads pinned to cpu_a and cpu_b
// hand a counter back and forth `round_trips` times, in 9 rounds. What a barrier or a cache
// line written on one core and read on the other costs. On the 2-vCPU VM shoal is developed
// on it moves between ~60 and ~700 ns from second to second (the host moves the vCPUs), one
// of the things that decide how well two threads of one model scale there (docs/ncf-speed-log.md,
// Session 8). Throws if a CPU cannot be pinned.
double measure_core_round_trip_ns(int cpu_a, int cpu_b, int round_trips = 20000);

// Pins the calling thread to the CPU it runs on, measures the peak, then times every case:
// median over `reps` samples (after warm-up) of the per-call time, measured as the thread's CPU
// time (CLOCK_THREAD_CPUTIME_ID), so time slices lost to other processes do not count.
BenchReport bench_kernels(int reps);

// A fixed-width table, one row per case.
std::string format_report(const BenchReport& report);

// JSON {peak_gflops, cases: [{name, n, i, o, median_us, gflops, peak_fraction, best_us,
// best_fraction}]}, written to
// a temporary name and renamed into place.
void write_report_json(const BenchReport& report, const std::string& path);

}  // namespace shoal::kernels
