#include "shoal/profile/advice.h"

#include <algorithm>

#include <fmt/format.h>

namespace shoal::profile {

namespace {

double share(double part, double whole) {
  return whole > 0 ? part / whole : 0;
}

}  // namespace

std::vector<AdviceItem> advise(const Report& r, const AdviceRules& rules, size_t max_items) {
  std::vector<AdviceItem> out;
  // Trust first: a figure from too few steps or a trace with holes is not worth acting on.
  if (r.steps < rules.min_steps)
    out.push_back({"few_steps", 1.5,
                   "record more steps before trusting a figure (more epochs, or "
                   "--profile-schedule with active ≥ " +
                       std::to_string(rules.min_steps) + ")",
                   fmt::format("{} steps recorded (< {}); step p99/mean {:.2f}", r.steps,
                               rules.min_steps, share(r.step_p99_ns, r.step_mean_ns))});
  if (r.dropped > 0) {
    const double lost = share(static_cast<double>(r.dropped),
                              static_cast<double>(r.dropped) + static_cast<double>(r.events));
    out.push_back({"events_dropped", 1 + lost,
                   "the trace is incomplete: raise --profile-events or record fewer steps "
                   "(--profile-schedule); the table and summary stay exact",
                   fmt::format("{} events dropped, {:.1f}% of the trace", r.dropped, 100 * lost)});
  }
  const double data = share(r.breakdown.ns[static_cast<int>(Category::kData)], r.wall_ns);
  if (data > rules.data_fraction)
    out.push_back({"data_bound", data,
                   "data sampling is a large share of the step: larger batches, fewer "
                   "negatives per positive, or prepared (cached) windows",
                   fmt::format("data {:.1f}% of the step (> {:.0f}%)", 100 * data,
                               100 * rules.data_fraction)});
  if (r.threads.size() > 1) {
    const ThreadRow* worst = nullptr;
    for (const auto& t : r.threads)
      if (worst == nullptr || t.busy_fraction < worst->busy_fraction) worst = &t;
    const double idle = 1 - worst->busy_fraction;
    if (idle > rules.idle_fraction)
      out.push_back(
          {"barrier_idle", idle,
           "threads wait at the barrier: fewer --threads, a larger batch per step, or a fleet "
           "(one fit per core) for many small models",
           fmt::format("thread {} idle {:.1f}% of the wall (> {:.0f}%); parallel efficiency "
                       "{:.1f}% over {} threads",
                       worst->thread, 100 * idle, 100 * rules.idle_fraction,
                       100 * r.parallel_efficiency, r.threads.size())});
  }
  double self_sum = 0;
  for (const auto& z : r.zones) self_sum += z.self_ns;
  for (const auto& z : r.zones) {
    const double frac = share(z.self_ns, self_sum);
    if (frac < rules.zone_fraction || z.cost.flops <= 0) continue;
    if (r.machine.known() && z.intensity > 0) {
      const double roof = std::min(r.machine.peak_gflops, z.intensity * r.machine.bandwidth_gbs);
      const double attained = share(z.gflops, roof);
      if (attained < rules.roofline_fraction)
        out.push_back({"below_roofline", frac * (1 - attained),
                       fmt::format("{} runs far below its roofline: look at its kernel "
                                   "(layout, blocking, chunk size) in the trace",
                                   z.name),
                       fmt::format("{:.1f} GFLOP/s = {:.1f}% of the {:.1f} GFLOP/s roof at "
                                   "{:.2f} FLOP/B; {:.1f}% of self time",
                                   z.gflops, 100 * attained, roof, z.intensity, 100 * frac)});
    }
    const bool layer = (z.category == Category::kForward || z.category == Category::kBackward) &&
                       z.name.rfind("loss.", 0) != 0;
    if (layer && z.rows > 0) {
      const double per_row = z.cost.flops / static_cast<double>(z.rows);
      if (per_row < rules.narrow_flops_per_row)
        out.push_back({"narrow_layer", frac,
                       fmt::format("{} is too narrow for the vector width: fuse models "
                                   "horizontally (shoal bench fusion) or train them as a fleet",
                                   z.name),
                       fmt::format("{:.0f} FLOP per row per call (< {:.0f}, a layer narrower "
                                   "than 16×16); {:.1f}% of self time",
                                   per_row, rules.narrow_flops_per_row, 100 * frac)});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const AdviceItem& a, const AdviceItem& b) { return a.score > b.score; });
  if (out.size() > max_items) out.resize(max_items);
  return out;
}

}  // namespace shoal::profile
