#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "shoal/kernels/bench.h"

namespace shoal::cli {

namespace {

struct KernelsOptions {
  std::string json;
  int reps = 31;
};

}  // namespace

void register_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks: print a table, optionally write JSON");
  bench->require_subcommand(1);

  auto opts = std::make_shared<KernelsOptions>();
  auto* kernels = bench->add_subcommand("kernels", "Fused Linear and GEMM kernels vs peak");
  kernels->add_option("--json", opts->json, "Also write the results as JSON to this file");
  kernels->add_option("--reps", opts->reps, "Timed samples per case (median is reported)")
      ->check(CLI::PositiveNumber);
  kernels->callback([opts] {
    const auto report = kernels::bench_kernels(opts->reps);
    std::fputs(kernels::format_report(report).c_str(), stdout);
    if (!opts->json.empty()) kernels::write_report_json(report, opts->json);
  });

  auto* peak = bench->add_subcommand("peak", "Measure this core's FP32 FMA peak (GFLOP/s)");
  peak->callback([] { std::printf("%.1f\n", kernels::measure_peak_gflops()); });
}

}  // namespace shoal::cli
