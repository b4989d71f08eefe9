#include <cstdio>
#include <memory>
#include <string>

#include "bench/drivers/kernel_bench.h"
#include "bench/drivers/profile_bench.h"
#include "cli/commands.h"
#include "shoal/kernels/blas.h"
#include "shoal/kernels/isa.h"
#include "shoal/kernels/peak.h"
#include "shoal/profile/machine.h"

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
      ->check(kPositive);
  kernels->callback([opts] {
    const auto report = kernels::bench_kernels(opts->reps);
    std::fputs(kernels::format_report(report).c_str(), stdout);
    if (!opts->json.empty()) kernels::write_report_json(report, opts->json);
  });

  auto* peak = bench->add_subcommand(
      "peak", "Measure this core's FP32 FMA peak (GFLOP/s) and triad bandwidth (GB/s); cached");
  peak->callback([] {
    const profile::Machine m = profile::measure_machine();
    const kernels::Isa widest = kernels::widest_isa();
    std::printf("%.1f\n", m.peak_gflops);
    std::printf(
        "FP32 FMA peak per core at the widest vectors (%s, %d lanes); the roof of every "
        "%% of peak\n",
        kernels::isa_name(widest), kernels::isa_float_lanes(widest));
    std::printf("%s\n", kernels::describe_isa().c_str());
    // Each path's own peak: what the kernels can reach when SHOAL_ISA narrows them.
    for (const kernels::Isa isa : {kernels::Isa::kAvx512, kernels::Isa::kAvx2, kernels::Isa::kSse4})
      if (kernels::isa_supported(isa))
        std::printf("  %-6s path: %.1f GFLOP/s (%d lanes)\n", kernels::isa_name(isa),
                    kernels::measure_peak_gflops(isa), kernels::isa_float_lanes(isa));
    std::printf("bandwidth %.1f GB/s (single-core triad), ridge %.2f FLOP/B; cached in %s\n",
                m.bandwidth_gbs, m.ridge(), profile::machine_cache_path().c_str());
    // The large GEMMs' speed depends on it as much as on the peak above.
    std::printf("%s\n", kernels::describe_blas(kernels::blas_info()).c_str());
  });

  auto prof = std::make_shared<KernelsOptions>();
  prof->reps = 0;
  auto prof_seconds = std::make_shared<double>(10.0);
  auto* profiler = bench->add_subcommand(
      "profiler", "Profiler cost: per zone, and end-to-end overhead of stats and trace modes");
  profiler->add_option("--json", prof->json, "Also write the results as JSON to this file");
  profiler
      ->add_option("--rounds", prof->reps,
                   "Interleaved rounds per workload (default: as many as fit in --seconds)")
      ->check(kNonNegative);
  profiler
      ->add_option("--seconds", *prof_seconds,
                   "CPU seconds per workload when --rounds is not given")
      ->check(kPositive);
  profiler->callback([prof, prof_seconds] {
    const auto b = profile::bench_profiler(prof->reps, *prof_seconds);
    std::fputs(profile::format_profiler_bench(b).c_str(), stdout);
    if (!prof->json.empty()) profile::write_profiler_bench_json(b, prof->json);
  });

  register_bench_tsmixerx(*bench);
  register_bench_fusion(*bench);
  register_bench_fleet(*bench);
  register_bench_ncf(*bench);
  register_bench_ncf_recommend(*bench);
  register_bench_models(*bench);
}

}  // namespace shoal::cli
