// `shoal bench fusion`: does horizontal fusion (8 same-shaped models in lockstep, one per SIMD
// lane, models/lanes_mlp.h) beat training the 8 models one after another with the per-model
// kernels? Times one full training step (batch gather, forward, MSE, backward, Adam, grad
// zeroing) of 8 models both ways on the calling thread, pinned, as thread CPU time, and reports
// per model-step time, the ratio and GFLOP/s per shape, and the crossover width.
// Reports, never judges; docs/fleet.md ("Horizontal fusion") holds the figures.
#pragma once

#include <string>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::fleet {

struct FusionCase {
  std::string name;           // "mlp", "tsmixerx ff", ...
  Index rows = 0;             // batch rows per step
  std::vector<Index> widths;  // in, hidden..., out (ReLU between layers)
  bool sweep = false;         // part of the width sweep (counts for the crossover)
};

struct FusionRow {
  FusionCase shape;
  double flops = 0;  // per model-step (forward + backward GEMMs)
  // Per model-step µs: median and best over the samples.
  double separate_median_us = 0, separate_best_us = 0;
  double fused_median_us = 0, fused_best_us = 0;
  double ratio_median = 0, ratio_best = 0;       // separate / fused: > 1 means fusion wins
  double separate_gflops = 0, fused_gflops = 0;  // from the medians
};

struct FusionReport {
  int reps = 0;
  std::vector<FusionRow> rows;
  // Largest sweep width where fusion wins by ≥ 10% (median and best ratios ≥ 1.1); 0 when it
  // never does.
  Index crossover_width = 0;
};

// The default cases: an MLP in → h → h → 1 with in = h for each width, `rows` rows per step,
// and (tsmixerx) two stacks of TSMixerx's default mixing shapes (ff_dim 64, input_size 36).
std::vector<FusionCase> default_fusion_cases(Index rows, const std::vector<Index>& widths,
                                             bool tsmixerx);
// Pins the calling thread to its CPU and times every case (reps samples per path, alternating).
FusionReport bench_fusion(const std::vector<FusionCase>& cases, int reps);

std::string format_fusion_report(const FusionReport& report);
// JSON {reps, crossover_width, cases: [...]}, written atomically.
void write_fusion_report_json(const FusionReport& report, const std::string& path);

}  // namespace shoal::fleet
