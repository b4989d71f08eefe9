// `shoal bench fusion`: horizontal fusion (8 models across SIMD lanes) against 8 models run one
// after another, per width (shoal/fleet/fusion_bench.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/drivers/fusion_bench.h"
#include "cli/commands.h"

namespace shoal::cli {

void register_bench_fusion(CLI::App& bench) {
  struct Options {
    std::string json;
    int reps = 31;
    Index rows = 32;
    std::vector<Index> widths = {1, 2, 4, 8, 16, 32, 64};
    bool no_tsmixerx = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = bench.add_subcommand(
      "fusion", "8 same-shaped MLPs fused across SIMD lanes vs one after another, per width");
  cmd->add_option("--json", opts->json, "Also write the results as JSON to this file");
  cmd->add_option("--reps", opts->reps, "Timed samples per path and case")->check(kPositive);
  cmd->add_option("--rows", opts->rows, "Batch rows per training step")->check(kPositive);
  cmd->add_option("--widths", opts->widths, "Hidden widths h of the in=h -> h -> h -> 1 sweep")
      ->delimiter(',')
      ->check(kPositive);
  cmd->add_flag("--no-tsmixerx", opts->no_tsmixerx, "Skip TSMixerx's mixing shapes");
  cmd->callback([opts] {
    const auto report = fleet::bench_fusion(
        fleet::default_fusion_cases(opts->rows, opts->widths, !opts->no_tsmixerx), opts->reps);
    std::fputs(fleet::format_fusion_report(report).c_str(), stdout);
    if (!opts->json.empty()) fleet::write_fusion_report_json(report, opts->json);
  });
}

}  // namespace shoal::cli
