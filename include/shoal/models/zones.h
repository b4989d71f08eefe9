// Profiler zones of a forecasting model from its blocks' own costs. A zone's rows are the
// batch's windows (what ZoneChain records per call); a block's costs are functions of its own
// input rows, rows_per_window of them per window (L or H), so the zone's cost per window is
// the block's cost at rows_per_window rows and its fixed part the block's cost at 0 rows.
#pragma once

#include <string>

#include "shoal/profile/recorder.h"

namespace shoal::models {

// "<name>.forward" / "<name>.backward" with costs fwd(rows) and bwd(rows).
template <class Fwd, class Bwd>
profile::LayerZones cost_zones(profile::Recorder& rec, int model, const std::string& name,
                               double rows_per_window, Fwd&& fwd, Bwd&& bwd) {
  auto per_window = [rows_per_window](auto&& cost) {
    return profile::AffineCost::of([&](double windows) { return cost(windows * rows_per_window); });
  };
  return {rec.zone(name + ".forward", profile::Category::kForward, per_window(fwd), model),
          rec.zone(name + ".backward", profile::Category::kBackward, per_window(bwd), model)};
}

// The same for a block with forward_cost(rows) and backward_cost(rows, dx): dx says whether
// the model asks it for its input gradient.
template <class Block>
profile::LayerZones block_zones(profile::Recorder& rec, int model, const std::string& name,
                                double rows_per_window, const Block& block, bool dx = true) {
  return cost_zones(
      rec, model, name, rows_per_window, [&](double rows) { return block.forward_cost(rows); },
      [&](double rows) {
        if constexpr (requires { block.backward_cost(rows, dx); })
          return block.backward_cost(rows, dx);
        else
          return block.backward_cost(rows);
      });
}

}  // namespace shoal::models
