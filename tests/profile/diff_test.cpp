// `shoal profile diff` on synthetic summaries (step first, phases and zones by |delta|, zones of
// one run only, other machines), the summary JSON round trip it reads, the memory view and the
// gzipped trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <zlib.h>

#include "shoal/core/arena.h"
#include "shoal/core/file_io.h"
#include "shoal/profile/diff.h"
#include "shoal/profile/html.h"
#include "shoal/profile/trace.h"

namespace shoal::profile {
namespace diff_test {

ZoneRow zone(std::string name, Category c, double self_ms, double gflops, double peak) {
  ZoneRow z;
  z.name = std::move(name);
  z.category = c;
  z.calls = 10;
  z.self_ns = z.total_ns = self_ms * 1e6;
  z.gflops = gflops;
  z.peak_fraction = peak;
  z.cost = {gflops * z.total_ns, 1000};
  return z;
}

Report run(double fwd_ms, double bwd_ms, int64_t steps) {
  Report r;
  r.mode = Mode::kStats;
  r.steps = steps;
  r.breakdown.ns[int(Category::kForward)] = fwd_ms * 1e6;
  r.breakdown.ns[int(Category::kBackward)] = bwd_ms * 1e6;
  r.wall_ns = r.breakdown.wall_ns = (fwd_ms + bwd_ms) * 1e6;
  r.step_mean_ns = r.wall_ns / double(steps);
  r.machine = {100, 20, "cpu A", "cache"};
  r.zones.push_back(zone("a.forward", Category::kForward, fwd_ms, 50, 0.5));
  r.zones.push_back(zone("a.backward", Category::kBackward, bwd_ms, 40, 0.4));
  return r;
}

const DiffRow* find(const Diff& d, const std::string& name) {
  for (const auto& r : d.rows)
    if (r.name == name) return &r;
  return nullptr;
}

TEST(ProfileDiff, StepFirstThenByAbsoluteDelta) {
  const Report a = run(100, 200, 10);
  Report b = run(90, 100, 10);  // backward halves, forward -10%
  b.zones.push_back(zone("b.only", Category::kOther, 5, 0, 0));
  const Diff d = diff_reports(a, b);
  ASSERT_GE(d.rows.size(), 6u);
  EXPECT_EQ(d.rows[0].kind, "step");
  EXPECT_DOUBLE_EQ(d.rows[0].a_us, 30000);
  EXPECT_DOUBLE_EQ(d.rows[0].b_us, 19000);
  EXPECT_EQ(d.rows[1].kind, "phase");
  EXPECT_EQ(d.rows[1].name, "backward");
  EXPECT_DOUBLE_EQ(d.rows[1].delta_us, -10000);
  EXPECT_DOUBLE_EQ(d.rows[1].ratio, 0.5);
  EXPECT_EQ(d.rows[2].name, "forward");
  EXPECT_EQ(d.rows[3].name, "a.backward");
  EXPECT_DOUBLE_EQ(d.rows[3].a_gflops, 40);
  const DiffRow* only = find(d, "b.only");
  ASSERT_NE(only, nullptr);
  EXPECT_FALSE(only->in_a);
  EXPECT_TRUE(only->in_b);
  EXPECT_TRUE(d.same_machine);
  const std::string t = format_diff(d);
  EXPECT_NE(t.find("only in B"), std::string::npos) << t;
  EXPECT_EQ(t.find("Machines:"), std::string::npos) << t;
  // Rows follow the order: step, phases, zones.
  EXPECT_LT(t.find("step (mean)"), t.find("a.backward")) << t;
}

TEST(ProfileDiff, TimesArePerStepSoRunsOfOtherLengthsCompare) {
  const Diff d = diff_reports(run(100, 200, 10), run(200, 400, 20));
  for (const auto& r : d.rows) EXPECT_NEAR(r.delta_us, 0, 1e-9) << r.name;
}

TEST(ProfileDiff, OtherMachineIsSaid) {
  const Report a = run(100, 200, 10);
  Report b = run(100, 200, 10);
  b.machine = {50, 10, "cpu B", "cache"};
  b.zones[0].peak_fraction = 0.9;  // its own peak
  const Diff d = diff_reports(a, b);
  EXPECT_FALSE(d.same_machine);
  EXPECT_NE(d.machine_note.find("each one's own peak"), std::string::npos);
  EXPECT_NE(format_diff(d).find("Machines: runs from different machines"), std::string::npos);
  EXPECT_DOUBLE_EQ(find(d, "a.forward")->b_peak, 0.9);
  const std::string html = html_diff(a, b, d, "a", "b");
  EXPECT_NE(html.find("different machines"), std::string::npos);
  EXPECT_NE(html.find("<h2>A: a</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>B: b</h2>"), std::string::npos);
}

TEST(ProfileDiff, SummaryJsonRoundTrip) {
  const auto dir = std::filesystem::temp_directory_path() / "shoal_diff_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Report a = run(100, 200, 10);
  a.dropped = 7;
  a.peak_rss = 1 << 20;
  a.threads = {{0, 2.9e8, 0.97, 5, 0}};
  const std::string path = (dir / "a.summary.json").string();
  write_report_json(a, path);
  EXPECT_EQ(find_summary(dir.string()), path);
  const Report back = read_report_json(path);
  EXPECT_EQ(back.steps, 10);
  EXPECT_EQ(back.dropped, 7u);
  EXPECT_EQ(back.peak_rss, uint64_t{1} << 20);
  EXPECT_DOUBLE_EQ(back.step_mean_ns, a.step_mean_ns);
  ASSERT_EQ(back.zones.size(), 2u);
  EXPECT_EQ(back.zones[1].category, Category::kBackward);
  EXPECT_DOUBLE_EQ(back.breakdown.ns[int(Category::kBackward)], 200e6);
  EXPECT_EQ(back.machine.cpu, "cpu A");
  const Diff d = diff_reports(a, back);
  for (const auto& r : d.rows) EXPECT_NEAR(r.delta_us, 0, 1e-6) << r.name;
  // Two summaries in one directory: name one.
  write_report_json(a, (dir / "b.summary.json").string());
  EXPECT_THROW(find_summary(dir.string()), Error);
  write_file_atomic((dir / "bad.json").string(), "{\"x\": 1}");
  EXPECT_THROW(read_report_json((dir / "bad.json").string()), Error);
  std::filesystem::remove_all(dir);
}

struct Net {
  Param<float> w, b;
  Buffer<float> act, scratch;
};

TEST(MemoryView, PlanPerLayerAndRegion) {
  Net n0, n1;
  Planner p;
  p.set_optim_slots(2);
  p.push_scope("dense.");
  p.param(n0.w, "weight", {16, 8});
  p.param(n0.b, "bias", {8});
  p.buffer(n0.act, Region::kActivations, "out", {32, 8});
  p.pop_scope();
  p.buffer(n0.scratch, Region::kScratch, "tmp", {100});
  Arena arena(std::move(p));
  MemoryPlan m = memory_plan(arena, "net", 3);
  EXPECT_EQ(m.model_index, 3);
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[0].name, "dense");
  const uint64_t params = (16 * 8 + 8) * 4;
  EXPECT_EQ(m.layers[0].bytes[int(Region::kParams)], params);
  EXPECT_EQ(m.layers[0].bytes[int(Region::kGrads)], params);
  EXPECT_EQ(m.layers[0].bytes[int(Region::kOptimState)], 2 * params);
  EXPECT_EQ(m.layers[0].bytes[int(Region::kActivations)], 32u * 8 * 4);
  EXPECT_EQ(m.layers[1].name, "tmp");
  EXPECT_EQ(m.layers[1].bytes[int(Region::kScratch)], 400u);
  EXPECT_EQ(m.total[int(Region::kOptimState)], arena.region_bytes(Region::kOptimState));
  EXPECT_EQ(m.arena_bytes, arena.bytes());
  Planner q;
  q.push_scope("dense.");
  q.param(n1.w, "weight", {16, 8});
  q.param(n1.b, "bias", {8});
  q.buffer(n1.act, Region::kActivations, "out", {32, 8});
  q.pop_scope();
  q.buffer(n1.scratch, Region::kScratch, "tmp", {100});
  Arena replica(std::move(q), arena);
  add_replica(m, replica);
  EXPECT_EQ(m.replicas, 1);
  EXPECT_EQ(m.replica_bytes, replica.bytes());
  EXPECT_LT(replica.bytes(), arena.bytes());  // no params, no optimizer state
  EXPECT_EQ(m.bytes(), arena.bytes() + replica.bytes());

  // Recorded once per model index; in the footer, the JSON and the HTML.
  Recorder rec;
  rec.add_memory(m);
  rec.add_memory(memory_plan(arena, "again", 3));
  ASSERT_EQ(rec.memory().size(), 1u);
  EXPECT_EQ(rec.memory()[0].model, "net");
  Report r;
  r.memory = rec.memory();
  r.fleet = {1000, 4096, 8192, 1 << 20, 4};
  r.peak_rss = 64 << 20;
  const std::string t = format_memory(r);
  EXPECT_NE(t.find("Memory net:"), std::string::npos) << t;
  EXPECT_NE(t.find("1 thread replicas"), std::string::npos) << t;
  EXPECT_NE(t.find("Fleet memory: 1000 fits"), std::string::npos) << t;
  EXPECT_NE(t.find("Peak RSS: 64.00 MiB"), std::string::npos) << t;
  // The report: a bar per layer, stacked by region.
  const std::string html = html_report(r, "t");
  EXPECT_NE(html.find("aria-label=\"memory\""), std::string::npos);
  EXPECT_NE(html.find("<title>dense optimizer state: 1088 bytes</title>"), std::string::npos);
  const auto dir = std::filesystem::temp_directory_path() / "shoal_memory_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "m.summary.json").string();
  write_report_json(r, path);
  const Report back = read_report_json(path);
  ASSERT_EQ(back.memory.size(), 1u);
  EXPECT_EQ(back.memory[0].layers[0].bytes[int(Region::kOptimState)], 2 * params);
  EXPECT_EQ(back.fleet.fits, 1000);
  EXPECT_EQ(back.fleet.budget, uint64_t{1} << 20);
  std::filesystem::remove_all(dir);
  EXPECT_GT(peak_rss_bytes(), 0u);
}

TEST(TraceGzip, InflatesToTheSameBytes) {
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += "{\"ph\":\"X\",\"name\":\"zone" + std::to_string(i % 7) + "\"},";
  const std::string gz = gzip_bytes(text);
  ASSERT_GT(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_LT(gz.size(), text.size() / 5);
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(text.size() + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  EXPECT_EQ(out, text);
}

}  // namespace diff_test
}  // namespace shoal::profile
