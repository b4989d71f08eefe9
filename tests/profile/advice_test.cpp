// Each advice rule (docs/profiler.md, "Advice") fires on a synthetic profile built to trigger it
// and stays silent on a healthy one that differs only in the rule's quantity.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "shoal/profile/advice.h"

namespace shoal::profile {
namespace advice_test {

ZoneRow zone(std::string name, Category c, double self_ms, double flops, double bytes,
             uint64_t rows) {
  ZoneRow z;
  z.name = std::move(name);
  z.category = c;
  z.calls = 100;
  z.rows = rows;
  z.self_ns = z.total_ns = self_ms * 1e6;
  z.cost = {flops, bytes};
  z.gflops = flops / z.total_ns;
  z.intensity = bytes > 0 ? flops / bytes : 0;
  return z;
}

// 50 steps, 1 s wall: forward 50%, backward 40%, data 5%, optimizer 5%; two busy threads; one
// wide dense layer at 60% of its roof (peak 100 GFLOP/s, 20 GB/s: ridge 5 FLOP/B).
Report healthy() {
  Report r;
  r.mode = Mode::kStats;
  r.steps = 50;
  r.wall_ns = 1e9;
  r.step_mean_ns = 2e7;
  r.step_p99_ns = 2.2e7;
  r.breakdown.wall_ns = r.wall_ns;
  r.breakdown.ns[int(Category::kForward)] = 0.5e9;
  r.breakdown.ns[int(Category::kBackward)] = 0.4e9;
  r.breakdown.ns[int(Category::kData)] = 0.05e9;
  r.breakdown.ns[int(Category::kOptimizer)] = 0.05e9;
  r.threads = {{0, 0.95e9, 0.95, 0, 0}, {1, 0.9e9, 0.9, 0, 0}};
  r.parallel_efficiency = 0.925;
  r.machine = {100, 20, "test cpu", "cache"};
  // 30 GFLOP in 500 ms: 60 GFLOP/s at 10 FLOP/B (roof 100); 1e6 FLOP per row.
  r.zones.push_back(zone("dense.forward", Category::kForward, 500, 3e10, 3e9, 30000));
  r.zones.push_back(zone("dense.backward", Category::kBackward, 400, 2.4e10, 2.4e9, 30000));
  r.events = 1000;
  return r;
}

bool fired(const Report& r, const std::string& rule) {
  const auto items = advise(r);
  return std::any_of(items.begin(), items.end(), [&](const AdviceItem& a) {
    return a.rule == rule && !a.evidence.empty() && !a.advice.empty();
  });
}

TEST(Advice, HealthyProfileGetsNone) {
  EXPECT_TRUE(advise(healthy()).empty());
}

TEST(Advice, FewSteps) {
  Report r = healthy();
  r.steps = 10;
  EXPECT_FALSE(fired(r, "few_steps"));
  r.steps = 3;
  EXPECT_TRUE(fired(r, "few_steps"));
}

TEST(Advice, EventsDropped) {
  Report r = healthy();
  EXPECT_FALSE(fired(r, "events_dropped"));
  r.dropped = 250;
  EXPECT_TRUE(fired(r, "events_dropped"));
  EXPECT_NE(advise(r)[0].evidence.find("20.0%"), std::string::npos) << advise(r)[0].evidence;
}

TEST(Advice, DataBound) {
  Report r = healthy();
  r.breakdown.ns[int(Category::kData)] = 0.14e9;
  EXPECT_FALSE(fired(r, "data_bound"));
  r.breakdown.ns[int(Category::kData)] = 0.30e9;
  EXPECT_TRUE(fired(r, "data_bound"));
}

TEST(Advice, BarrierIdle) {
  Report r = healthy();
  r.threads[1].busy_fraction = 0.81;
  EXPECT_FALSE(fired(r, "barrier_idle"));
  r.threads[1].busy_fraction = 0.6;
  EXPECT_TRUE(fired(r, "barrier_idle"));
  // One thread: nobody waits at a barrier.
  r.threads.resize(1);
  r.threads[0].busy_fraction = 0.5;
  EXPECT_FALSE(fired(r, "barrier_idle"));
}

TEST(Advice, BelowRoofline) {
  Report r = healthy();
  EXPECT_FALSE(fired(r, "below_roofline"));
  // 3 GFLOP/s at 10 FLOP/B: 3% of its 100 GFLOP/s roof.
  r.zones[0] = zone("dense.forward", Category::kForward, 500, 1.5e9, 1.5e8, 30000);
  EXPECT_TRUE(fired(r, "below_roofline"));
  // Same attainment on a zone with 1% of the time: not worth advising.
  r.zones[0] = zone("dense.forward", Category::kForward, 5, 1.5e7, 1.5e6, 30000);
  EXPECT_FALSE(fired(r, "below_roofline"));
  // Without a known machine there is no roof.
  r = healthy();
  r.zones[0] = zone("dense.forward", Category::kForward, 500, 1.5e9, 1.5e8, 30000);
  r.machine = {};
  EXPECT_FALSE(fired(r, "below_roofline"));
}

TEST(Advice, NarrowLayer) {
  Report r = healthy();
  EXPECT_FALSE(fired(r, "narrow_layer"));
  // 2·8·8 = 128 FLOP per row: an 8-wide layer fills one AVX2 vector per row at best.
  r.zones[0] = zone("mlp.0.forward", Category::kForward, 500, 128 * 30000.0, 1e6, 30000);
  EXPECT_TRUE(fired(r, "narrow_layer"));
  // The loss is not a layer to widen.
  r.zones[0].name = "loss.forward";
  EXPECT_FALSE(fired(r, "narrow_layer"));
}

TEST(Advice, RankedByShareOfTheStepTrustFirst) {
  Report r = healthy();
  r.steps = 3;
  r.breakdown.ns[int(Category::kData)] = 0.30e9;
  r.threads[1].busy_fraction = 0.5;
  const auto items = advise(r);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].rule, "few_steps");
  EXPECT_EQ(items[1].rule, "barrier_idle");  // 50% idle
  EXPECT_EQ(items[2].rule, "data_bound");    // 30% of the step
  EXPECT_EQ(advise(r, {}, 1).size(), 1u);
}

TEST(Advice, InTheTableFooter) {
  Report r = healthy();
  EXPECT_NE(format_table(r).find("Advice: none"), std::string::npos);
  r.breakdown.ns[int(Category::kData)] = 0.30e9;
  const std::string t = format_table(r);
  EXPECT_NE(t.find("[data_bound]"), std::string::npos) << t;
  EXPECT_NE(t.find("evidence: data 30.0% of the step"), std::string::npos) << t;
}

}  // namespace advice_test
}  // namespace shoal::profile
