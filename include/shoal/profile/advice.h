// Advice: a short ranked list of what to change next, each item with the numbers that triggered
// it. The rules and their thresholds are documented in docs/profiler.md ("Advice"); each one is
// a pure function of the Report, so a synthetic report can trigger it or not (tests/profile).
#pragma once

#include <string>
#include <vector>

#include "shoal/profile/report.h"

namespace shoal::profile {

struct AdviceRules {
  int min_steps = 10;                 // few_steps: fewer recorded steps than this
  double data_fraction = 0.15;        // data_bound: data sampling above this share of the step
  double idle_fraction = 0.20;        // barrier_idle: a thread idle above this share of the wall
  double zone_fraction = 0.05;        // zones below this share of self time are not advised on
  double roofline_fraction = 0.10;    // below_roofline: attained under this share of its roof
  double narrow_flops_per_row = 512;  // narrow_layer: under 2·16·16 FLOPs per row and call
};

struct AdviceItem {
  std::string rule;      // few_steps, events_dropped, data_bound, barrier_idle, ...
  double score = 0;      // the share of the step at stake (trust problems rank first: 1 + …)
  std::string advice;    // what to do
  std::string evidence;  // the numbers behind it
};

// Ranked, highest score first, at most `max_items`.
std::vector<AdviceItem> advise(const Report& r, const AdviceRules& rules = {},
                               size_t max_items = 6);

}  // namespace shoal::profile
