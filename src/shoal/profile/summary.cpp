// The summary JSON (written and read back for `shoal profile diff`) and the memory and advice
// footers of the table.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/profile/advice.h"
#include "shoal/profile/report.h"

namespace shoal::profile {

namespace {

std::string mib(uint64_t b) {
  return fmt::format("{:.2f} MiB", static_cast<double>(b) / 1048576);
}

Category category_from(const std::string& s) {
  for (int c = 0; c < kCategoryCount; ++c)
    if (s == category_name(static_cast<Category>(c))) return static_cast<Category>(c);
  return Category::kOther;
}

const char* bound_from(const std::string& s) {
  if (s == "compute") return "compute";
  if (s == "memory") return "memory";
  return "";
}

}  // namespace

std::string format_memory(const Report& r) {
  std::string out;
  // A fleet records one plan per trace process: the footer shows a few, the JSON and report all.
  constexpr size_t kShown = 3;
  for (size_t i = 0; i < r.memory.size(); ++i) {
    const MemoryPlan& m = r.memory[i];
    if (i == kShown) {
      out += fmt::format("Memory: {} more models in the summary and report\n",
                         r.memory.size() - kShown);
      break;
    }
    out += fmt::format("Memory {}: {} arena", m.model, mib(m.arena_bytes));
    for (int g = 0; g < kRegionCount; ++g)
      if (m.total[g] > 0)
        out += fmt::format(", {} {}", region_name(static_cast<Region>(g)), mib(m.total[g]));
    if (m.replicas > 0)
      out += fmt::format("; {} thread replicas {}", m.replicas, mib(m.replica_bytes));
    out += "\n";
  }
  if (r.fleet.known())
    out += fmt::format("Fleet memory: {} fits, per fit median {} max {}, budget {}, {} workers\n",
                       r.fleet.fits, mib(r.fleet.per_fit_median), mib(r.fleet.per_fit_max),
                       r.fleet.budget > 0 ? mib(r.fleet.budget) : std::string("none"),
                       r.fleet.workers);
  if (r.peak_rss > 0) out += fmt::format("Peak RSS: {}\n", mib(r.peak_rss));
  return out;
}

std::string format_advice(const Report& r) {
  const auto items = advise(r);
  if (items.empty()) return "Advice: none (no rule of docs/profiler.md fired)\n";
  std::string out = "Advice:\n";
  int i = 0;
  for (const auto& a : items)
    out += fmt::format("  {}. [{}] {}\n     evidence: {}\n", ++i, a.rule, a.advice, a.evidence);
  return out;
}

std::string report_json(const Report& r) {
  nlohmann::json j;
  j["mode"] = mode_name(r.mode);
  j["steps"] = r.steps;
  j["wall_ms"] = r.wall_ns / 1e6;
  j["step_mean_us"] = r.step_mean_ns / 1e3;
  j["step_p50_us"] = r.step_p50_ns / 1e3;
  j["step_p99_us"] = r.step_p99_ns / 1e3;
  for (int c = 0; c < kCategoryCount - 1; ++c)
    j["breakdown_ms"][category_name(static_cast<Category>(c))] = r.breakdown.ns[c] / 1e6;
  j["parallel_efficiency"] = r.parallel_efficiency;
  j["calls"] = r.calls;
  j["events"] = r.events;
  j["dropped_events"] = r.dropped;
  j["zone_cost_ns"] = r.zone_cost_ns;
  j["overhead_fraction"] = r.overhead_fraction;
  j["machine"] = {{"cpu", r.machine.cpu},
                  {"peak_gflops", r.machine.peak_gflops},
                  {"bandwidth_gbs", r.machine.bandwidth_gbs},
                  {"source", r.machine.source}};
  j["threads"] = nlohmann::json::array();
  for (const auto& t : r.threads)
    j["threads"].push_back({{"thread", t.thread},
                            {"busy_fraction", t.busy_fraction},
                            {"busy_ms", t.busy_ns / 1e6},
                            {"events", t.events}});
  j["zones"] = nlohmann::json::array();
  for (const auto& z : r.zones)
    j["zones"].push_back({{"name", z.name},
                          {"category", category_name(z.category)},
                          {"model", z.model},
                          {"calls", z.calls},
                          {"rows", z.rows},
                          {"self_ms", z.self_ns / 1e6},
                          {"total_ms", z.total_ns / 1e6},
                          {"avg_us", z.avg_ns / 1e3},
                          {"p99_us", z.p99_ns / 1e3},
                          {"flops", z.cost.flops},
                          {"bytes", z.cost.bytes},
                          {"gflops", z.gflops},
                          {"peak_fraction", z.peak_fraction},
                          {"gbs", z.gbs},
                          {"intensity", z.intensity},
                          {"bound", z.bound}});
  j["memory"] = nlohmann::json::array();
  for (const auto& m : r.memory) {
    nlohmann::json mj = {{"model", m.model},
                         {"model_index", m.model_index},
                         {"arena_bytes", m.arena_bytes},
                         {"replicas", m.replicas},
                         {"replica_bytes", m.replica_bytes}};
    for (int g = 0; g < kRegionCount; ++g)
      mj["total"][region_name(static_cast<Region>(g))] = m.total[g];
    mj["layers"] = nlohmann::json::array();
    for (const auto& l : m.layers) {
      nlohmann::json lj = {{"name", l.name}};
      for (int g = 0; g < kRegionCount; ++g)
        lj["bytes"][region_name(static_cast<Region>(g))] = l.bytes[g];
      mj["layers"].push_back(lj);
    }
    j["memory"].push_back(mj);
  }
  if (r.fleet.known())
    j["fleet_memory"] = {{"fits", r.fleet.fits},
                         {"per_fit_median_bytes", r.fleet.per_fit_median},
                         {"per_fit_max_bytes", r.fleet.per_fit_max},
                         {"budget_bytes", r.fleet.budget},
                         {"workers", r.fleet.workers}};
  j["peak_rss_bytes"] = r.peak_rss;
  j["advice"] = nlohmann::json::array();
  for (const auto& a : advise(r))
    j["advice"].push_back(
        {{"rule", a.rule}, {"score", a.score}, {"advice", a.advice}, {"evidence", a.evidence}});
  return j.dump(1) + "\n";
}

void write_report_json(const Report& r, const std::string& path) {
  write_file_atomic(path, report_json(r));
}

Report read_report_json(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_input_file(path, "profile summary"));
  } catch (const nlohmann::json::exception& e) {
    SHOAL_CHECK(false, "{}: not a profile summary ({})", path, e.what());
  }
  SHOAL_CHECK(j.is_object() && j.contains("zones") && j.contains("breakdown_ms"),
              "{}: not a profile summary (no zones or breakdown_ms)", path);
  Report r;
  try {
    r.mode = parse_mode(j.value("mode", "stats"));
    r.steps = j.value("steps", int64_t{0});
    r.wall_ns = j.value("wall_ms", 0.0) * 1e6;
    r.step_mean_ns = j.value("step_mean_us", 0.0) * 1e3;
    r.step_p50_ns = j.value("step_p50_us", 0.0) * 1e3;
    r.step_p99_ns = j.value("step_p99_us", 0.0) * 1e3;
    r.breakdown.wall_ns = r.wall_ns;
    for (auto& [k, v] : j["breakdown_ms"].items())
      r.breakdown.ns[static_cast<int>(category_from(k))] = v.get<double>() * 1e6;
    r.parallel_efficiency = j.value("parallel_efficiency", 0.0);
    r.calls = j.value("calls", uint64_t{0});
    r.events = j.value("events", int64_t{0});
    r.dropped = j.value("dropped_events", uint64_t{0});
    r.zone_cost_ns = j.value("zone_cost_ns", 0.0);
    r.overhead_fraction = j.value("overhead_fraction", 0.0);
    if (j.contains("machine")) {
      const auto& m = j["machine"];
      r.machine.cpu = m.value("cpu", "");
      r.machine.peak_gflops = m.value("peak_gflops", 0.0);
      r.machine.bandwidth_gbs = m.value("bandwidth_gbs", 0.0);
      r.machine.source = m.value("source", "");
    }
    for (const auto& t : j.value("threads", nlohmann::json::array())) {
      ThreadRow tr;
      tr.thread = t.value("thread", 0);
      tr.busy_fraction = t.value("busy_fraction", 0.0);
      tr.busy_ns = t.value("busy_ms", tr.busy_fraction * r.wall_ns / 1e6) * 1e6;
      tr.events = t.value("events", int64_t{0});
      r.threads.push_back(tr);
    }
    for (const auto& z : j["zones"]) {
      ZoneRow row;
      row.name = z.at("name").get<std::string>();
      row.category = category_from(z.value("category", "other"));
      row.model = z.value("model", 0);
      row.calls = z.value("calls", uint64_t{0});
      row.rows = z.value("rows", uint64_t{0});
      row.self_ns = z.value("self_ms", 0.0) * 1e6;
      row.total_ns = z.value("total_ms", 0.0) * 1e6;
      row.avg_ns = z.value("avg_us", 0.0) * 1e3;
      row.p99_ns = z.value("p99_us", 0.0) * 1e3;
      row.cost = {z.value("flops", 0.0), z.value("bytes", 0.0)};
      row.gflops = z.value("gflops", 0.0);
      row.peak_fraction = z.value("peak_fraction", 0.0);
      row.gbs = z.value("gbs", 0.0);
      row.intensity =
          z.value("intensity", row.cost.bytes > 0 ? row.cost.flops / row.cost.bytes : 0.0);
      row.bound = bound_from(z.value("bound", ""));
      r.zones.push_back(std::move(row));
    }
    for (const auto& mj : j.value("memory", nlohmann::json::array())) {
      MemoryPlan m;
      m.model = mj.value("model", "");
      m.model_index = mj.value("model_index", 0);
      m.arena_bytes = mj.value("arena_bytes", uint64_t{0});
      m.replicas = mj.value("replicas", 0);
      m.replica_bytes = mj.value("replica_bytes", uint64_t{0});
      const nlohmann::json total = mj.value("total", nlohmann::json::object());
      for (int g = 0; g < kRegionCount; ++g)
        m.total[g] = total.value(region_name(static_cast<Region>(g)), uint64_t{0});
      for (const auto& lj : mj.value("layers", nlohmann::json::array())) {
        MemoryLayer l;
        l.name = lj.value("name", "");
        const nlohmann::json bytes = lj.value("bytes", nlohmann::json::object());
        for (int g = 0; g < kRegionCount; ++g)
          l.bytes[g] = bytes.value(region_name(static_cast<Region>(g)), uint64_t{0});
        m.layers.push_back(std::move(l));
      }
      r.memory.push_back(std::move(m));
    }
    if (j.contains("fleet_memory")) {
      const auto& f = j["fleet_memory"];
      r.fleet.fits = f.value("fits", int64_t{0});
      r.fleet.per_fit_median = f.value("per_fit_median_bytes", uint64_t{0});
      r.fleet.per_fit_max = f.value("per_fit_max_bytes", uint64_t{0});
      r.fleet.budget = f.value("budget_bytes", uint64_t{0});
      r.fleet.workers = f.value("workers", 0);
    }
    r.peak_rss = j.value("peak_rss_bytes", uint64_t{0});
  } catch (const nlohmann::json::exception& e) {
    SHOAL_CHECK(false, "{}: malformed profile summary ({})", path, e.what());
  }
  return r;
}

}  // namespace shoal::profile
