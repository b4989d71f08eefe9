// The memory view of a profiled run: each model's arena plan by region (params, grads, optimizer
// state, state, activations, activation grads, scratch) per layer and in total, its per-thread
// replicas, a fleet's per-fit bytes against its memory budget, and the process's peak RSS.
// Recorded once per model when a trainer attaches the profiler: never on the hot path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/core/arena.h"

namespace shoal::profile {

struct MemoryLayer {
  std::string name;  // the arena entries' name up to the last '.' ("block0.ff1")
  uint64_t bytes[kRegionCount] = {};
  uint64_t sum() const;
};

struct MemoryPlan {
  std::string model;
  int model_index = 0;
  std::vector<MemoryLayer> layers;    // in the arena's order
  uint64_t total[kRegionCount] = {};  // the regions' sizes, alignment padding included
  uint64_t arena_bytes = 0;           // the source arena
  int replicas = 0;                   // per-thread replicas besides the source
  uint64_t replica_bytes = 0;         // Σ over the replicas' arenas (they share the params)
  uint64_t bytes() const { return arena_bytes + replica_bytes; }
};

// Per layer: an entry's own bytes (shape × element size); a dense param also counts its grad,
// and every param its optimizer slots. The totals are the arena's region sizes.
MemoryPlan memory_plan(const Arena& arena, std::string model, int model_index = 0);
void add_replica(MemoryPlan& plan, const Arena& replica);

// A fleet's planned bytes per fit against its budget (0: none), with the workers that share it.
struct FleetMemory {
  int64_t fits = 0;
  uint64_t per_fit_median = 0, per_fit_max = 0;
  uint64_t budget = 0;
  int workers = 0;
  bool known() const { return fits > 0; }
};

// The process's peak resident set (getrusage), in bytes.
uint64_t peak_rss_bytes();

}  // namespace shoal::profile
