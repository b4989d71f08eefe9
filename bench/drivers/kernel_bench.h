// The kernel benchmark behind `shoal bench kernels`: measures the core's FP32 FMA peak, then
// times the fused Linear kernels and the GEMM forms on the shapes the models use, and reports
// GFLOP/s and the fraction of that peak. Reports, never judges.
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

// Pins the calling thread to the CPU it runs on, measures the peak, then times every case:
// median over `reps` samples (after warm-up) of the per-call time, measured as the thread's CPU
// time (CLOCK_THREAD_CPUTIME_ID), so time slices lost to other processes do not count.
BenchReport bench_kernels(int reps);

// A fixed-width table, one row per case.
std::string format_report(const BenchReport& report);

// JSON {peak_gflops, cases: [{name, n, i, o, median_us, gflops, peak_fraction, best_us,
// best_fraction}]}, written to a temporary name and renamed into place.
void write_report_json(const BenchReport& report, const std::string& path);

}  // namespace shoal::kernels
