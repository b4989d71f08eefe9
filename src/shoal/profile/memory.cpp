#include "shoal/profile/memory.h"

#include <sys/resource.h>

namespace shoal::profile {

uint64_t MemoryLayer::sum() const {
  uint64_t s = 0;
  for (uint64_t b : bytes) s += b;
  return s;
}

namespace {

std::string layer_of(const std::string& entry) {
  const size_t dot = entry.rfind('.');
  return dot == std::string::npos ? entry : entry.substr(0, dot);
}

}  // namespace

MemoryPlan memory_plan(const Arena& arena, std::string model, int model_index) {
  MemoryPlan p;
  p.model = std::move(model);
  p.model_index = model_index;
  p.arena_bytes = arena.bytes();
  for (int r = 0; r < kRegionCount; ++r) p.total[r] = arena.region_bytes(static_cast<Region>(r));
  const auto slots = static_cast<uint64_t>(arena.optim_slots());
  for (const ArenaEntry& e : arena.entries()) {
    const std::string name = layer_of(e.name);
    // A layer's entries recur in every region: find it (a few dozen layers, plan time only).
    MemoryLayer* l = nullptr;
    for (auto& x : p.layers)
      if (x.name == name) l = &x;
    if (l == nullptr) {
      p.layers.push_back({});
      l = &p.layers.back();
      l->name = name;
    }
    const uint64_t b = static_cast<uint64_t>(e.shape.numel()) * e.elem_size;
    l->bytes[static_cast<int>(e.region)] += b;
    if (e.region == Region::kParams) {
      if (e.kind == ParamKind::kDense) l->bytes[static_cast<int>(Region::kGrads)] += b;
      l->bytes[static_cast<int>(Region::kOptimState)] += slots * b;
    }
  }
  return p;
}

void add_replica(MemoryPlan& plan, const Arena& replica) {
  ++plan.replicas;
  // A replica's params region is the source's (size 0 in the replica): the rest is its own.
  plan.replica_bytes += replica.bytes();
}

uint64_t peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace shoal::profile
