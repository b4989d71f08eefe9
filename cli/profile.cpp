// `shoal profile diff A B`: compares two profiled runs (profile directories or *.summary.json
// files written by --profile) per step phase and per zone; --html writes the side-by-side report.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "shoal/core/file_io.h"
#include "shoal/profile/diff.h"

namespace shoal::cli {

void register_profile(CLI::App& app) {
  auto* cmd = app.add_subcommand("profile", "Work with profiles written by --profile");
  cmd->require_subcommand(1);
  auto* diff = cmd->add_subcommand(
      "diff",
      "Compare two runs: per step phase and zone, time A, B, delta, ratio, GFLOP/s and % "
      "of peak, sorted by |delta|");
  struct Opts {
    std::string a, b, html;
    int rows = 40;
  };
  auto opts = std::make_shared<Opts>();
  diff->add_option("A", opts->a, "The baseline: a profile directory or a *.summary.json")
      ->required();
  diff->add_option("B", opts->b, "The run compared with it")->required();
  diff->add_option("--html", opts->html,
                   "Also write an HTML report (both breakdowns side by side)");
  diff->add_option("--rows", opts->rows, "Rows of the table")
      ->check(kPositive)
      ->capture_default_str();
  diff->callback([opts] {
    const std::string pa = profile::find_summary(opts->a), pb = profile::find_summary(opts->b);
    const profile::Report a = profile::read_report_json(pa);
    const profile::Report b = profile::read_report_json(pb);
    OutputPlan({pa, pb}).file(opts->html, "--html");
    const profile::Diff d = profile::diff_reports(a, b);
    fmt::print("A: {}\nB: {}\n", pa, pb);
    std::fputs(profile::format_diff(d, opts->rows).c_str(), stdout);
    if (!opts->html.empty()) {
      write_file_atomic(opts->html, profile::html_diff(a, b, d, pa, pb));
      fmt::print("profile diff: report {}\n", opts->html);
    }
  });
}

}  // namespace shoal::cli
