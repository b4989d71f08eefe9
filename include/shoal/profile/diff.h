// `shoal profile diff A B`: two runs' summaries compared per step phase and per zone, in time per
// recorded step (so runs of different step counts compare), with GFLOP/s and % of peak of both.
// The step-time change comes first, then phases and zones by |delta|; a zone recorded in one run
// only is listed as such. Runs from machines with other roofs are compared in time and in % of
// each one's own peak, and the diff says so.
#pragma once

#include <string>
#include <vector>

#include "shoal/profile/report.h"

namespace shoal::profile {

struct DiffRow {
  std::string kind;  // "step", "phase" or "zone"
  std::string name;  // zones of a fleet model other than 0: "name@model"
  bool in_a = true, in_b = true;
  double a_us = 0, b_us = 0;  // per recorded step (zones: self time)
  double delta_us = 0;        // b - a
  double ratio = 0;           // b / a (0 when a is 0)
  double a_gflops = 0, b_gflops = 0;
  double a_peak = 0, b_peak = 0;  // fraction of each run's own machine peak
};

struct Diff {
  std::vector<DiffRow> rows;
  bool same_machine = true;
  std::string machine_note;  // set when the machines differ
  int64_t a_steps = 0, b_steps = 0;
};

Diff diff_reports(const Report& a, const Report& b);
std::string format_diff(const Diff& d, int max_rows = 40);
// A self-contained page: both step breakdowns side by side, then the diff table.
std::string html_diff(const Report& a, const Report& b, const Diff& d, std::string_view a_name,
                      std::string_view b_name);
// A profile directory (its one *.summary.json; several: an error naming them) or a summary path.
std::string find_summary(const std::string& dir_or_file);

}  // namespace shoal::profile
