#include "shoal/profile/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "shoal/core/error.h"

namespace shoal::profile {

double Breakdown::sum_ns() const {
  double s = 0;
  for (double v : ns) s += v;
  return s;
}

namespace {

double percentile_ns(const uint32_t* hist, uint64_t calls, double q, const Clock& clock) {
  if (calls == 0) return 0;
  // Nearest rank: the smallest value with at least q of the calls at or below it.
  const auto rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(calls))));
  uint64_t seen = 0;
  for (int b = 0; b < kHistBuckets; ++b) {
    seen += hist[b];
    if (seen >= rank) return clock.to_ns(hist_bucket_mid(b));
  }
  return 0;
}

}  // namespace

Report summarize(const Recorder& rec, const Machine& machine) {
  Report r;
  r.mode = rec.mode();
  r.machine = machine;
  const Clock& clock = rec.clock();
  const auto& zones = rec.zones();
  const int nt = rec.threads_seen();
  r.steps = rec.steps_recorded();
  r.wall_ns = nt > 0 ? clock.to_ns(rec.wall_ticks()) : 0;
  r.breakdown.wall_ns = r.wall_ns;

  std::vector<uint32_t> hist(kHistBuckets);
  for (size_t z = 0; z < zones.size(); ++z) {
    ZoneRow row;
    row.name = zones[z].name;
    row.category = zones[z].category;
    row.model = zones[z].model;
    uint64_t total = 0, self = 0, rows = 0, mn = ~uint64_t{0}, mx = 0;
    std::fill(hist.begin(), hist.end(), 0u);
    for (int t = 0; t < nt; ++t) {
      const ZoneStats& s = rec.stats(t, static_cast<ZoneId>(z));
      if (s.calls == 0) continue;
      row.calls += s.calls;
      total += s.total;
      self += s.self;
      rows += s.rows;
      mn = std::min(mn, s.min);
      mx = std::max(mx, s.max);
      for (int b = 0; b < kHistBuckets; ++b) hist[static_cast<size_t>(b)] += s.hist[b];
    }
    if (row.calls == 0) continue;
    row.total_ns = clock.to_ns(total);
    row.self_ns = clock.to_ns(self);
    row.avg_ns = row.total_ns / static_cast<double>(row.calls);
    row.min_ns = clock.to_ns(mn);
    row.max_ns = clock.to_ns(mx);
    row.rows = rows;
    row.p99_ns = std::min(row.max_ns, percentile_ns(hist.data(), row.calls, 0.99, clock));
    if (z == kStepZone) {
      r.step_mean_ns = row.avg_ns;
      r.step_p50_ns = std::min(row.max_ns, percentile_ns(hist.data(), row.calls, 0.5, clock));
      r.step_p99_ns = row.p99_ns;
    } else {
      const AffineCost& c = zones[z].cost;
      row.cost = {c.per_row.flops * static_cast<double>(rows) +
                      c.fixed.flops * static_cast<double>(row.calls),
                  c.per_row.bytes * static_cast<double>(rows) +
                      c.fixed.bytes * static_cast<double>(row.calls)};
    }
    if (row.total_ns > 0) {
      row.gflops = row.cost.flops / row.total_ns;
      row.gbs = row.cost.bytes / row.total_ns;
    }
    if (row.cost.bytes > 0) row.intensity = row.cost.flops / row.cost.bytes;
    if (machine.known() && row.cost.flops > 0) {
      row.peak_fraction = row.gflops / machine.peak_gflops;
      row.bound = row.intensity >= machine.ridge() ? "compute" : "memory";
    }
    r.calls += row.calls;
    r.zones.push_back(std::move(row));
  }
  std::sort(r.zones.begin(), r.zones.end(),
            [](const ZoneRow& a, const ZoneRow& b) { return a.self_ns > b.self_ns; });

  // Breakdown: the main thread's self time by effective category (see Recorder).
  if (nt > 0)
    for (int c = 0; c < kCategoryCount; ++c)
      r.breakdown.ns[c] =
          clock.to_ns(rec.category_ticks(rec.main_thread(), static_cast<Category>(c)));

  double busy_sum = 0;
  for (int t = 0; t < nt; ++t) {
    ThreadRow tr;
    tr.thread = t;
    for (int c = 0; c < kCategoryCount; ++c)
      if (c != static_cast<int>(Category::kIdle))
        tr.busy_ns += clock.to_ns(rec.category_ticks(t, static_cast<Category>(c)));
    tr.busy_fraction = r.wall_ns > 0 ? tr.busy_ns / r.wall_ns : 0;
    tr.events = rec.event_count(t);
    busy_sum += tr.busy_ns;
    r.events += tr.events;
    r.threads.push_back(tr);
  }
  r.dropped = rec.dropped_events();
  r.memory = rec.memory();
  r.fleet = rec.fleet_memory();
  r.peak_rss = peak_rss_bytes();
  if (nt > 0 && r.wall_ns > 0) r.parallel_efficiency = busy_sum / (nt * r.wall_ns);
  if (r.mode != Mode::kOff && nt > 0) {
    r.zone_cost_ns = measure_zone_cost_ns(r.mode, 20000);
    r.overhead_fraction =
        r.wall_ns > 0 ? static_cast<double>(r.calls) * r.zone_cost_ns / (nt * r.wall_ns) : 0;
  }
  return r;
}

namespace {

std::string si(double v) {
  if (v <= 0) return "-";
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (v >= 1000 && u < 5) {
    v /= 1000;
    ++u;
  }
  return fmt::format("{:.3g}{}", v, units[u]);
}

std::string fixed_or_dash(double v, int decimals) {
  if (v <= 0) return "-";
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace

std::string format_table(const Report& r, int max_rows) {
  std::string out;
  double self_sum = 0;
  for (const auto& z : r.zones) self_sum += z.self_ns;
  // Wide enough for the model's layer names (e.g. "mixing_block.0.feature_mixer.backward"),
  // within reason; a longer name keeps its end (".forward" / ".backward").
  size_t w = 28;
  for (size_t i = 0; i < r.zones.size() && i < static_cast<size_t>(max_rows); ++i)
    w = std::max(w, std::min<size_t>(r.zones[i].name.size(), 44));
  out += fmt::format(
      "{:<{}} {:>7} {:>9} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8} {:>6} {:>8} {:>7} "
      "{:>6} {:>7}\n",
      "Name", w, "Calls", "Self ms", "Self%", "Total ms", "Avg us", "p99 us", "FLOPs", "GFLOP/s",
      "%peak", "Bytes", "GB/s", "FLOP/B", "Bound");
  int shown = 0;
  for (const auto& z : r.zones) {
    if (shown++ >= max_rows) break;
    std::string name = z.name == "ProfilerStep" ? "ProfilerStep#*" : z.name;
    if (name.size() > w) name = name.substr(0, w - 10) + "~" + name.substr(name.size() - 9);
    out += fmt::format(
        "{:<{}} {:>7} {:>9.3f} {:>5.1f}% {:>9.3f} {:>9.2f} {:>9.2f} {:>8} {:>8} {:>6} {:>8} {:>7} "
        "{:>6} {:>7}\n",
        name, w, z.calls, z.self_ns / 1e6, self_sum > 0 ? 100 * z.self_ns / self_sum : 0,
        z.total_ns / 1e6, z.avg_ns / 1e3, z.p99_ns / 1e3, si(z.cost.flops),
        fixed_or_dash(z.gflops, 1), fixed_or_dash(100 * z.peak_fraction, 1), si(z.cost.bytes),
        fixed_or_dash(z.gbs, 1), fixed_or_dash(z.intensity, 2), z.bound);
  }
  if (static_cast<int>(r.zones.size()) > max_rows)
    out += fmt::format("... {} more zones\n", r.zones.size() - static_cast<size_t>(max_rows));
  out += fmt::format(
      "Self time total: {:.3f} ms over {} steps ({:.1f} us mean, p50 {:.1f}, p99 "
      "{:.1f})\n",
      self_sum / 1e6, r.steps, r.step_mean_ns / 1e3, r.step_p50_ns / 1e3, r.step_p99_ns / 1e3);
  out += "Step breakdown (main thread):";
  for (int c = 0; c < kCategoryCount - 1; ++c)
    out += fmt::format(" {} {:.1f}%", category_name(static_cast<Category>(c)),
                       r.wall_ns > 0 ? 100 * r.breakdown.ns[c] / r.wall_ns : 0.0);
  out += fmt::format("  (sum {:.3f} of {:.3f} ms wall)\n", r.breakdown.sum_ns() / 1e6,
                     r.wall_ns / 1e6);
  out += "Threads busy:";
  for (const auto& t : r.threads)
    out += fmt::format(" t{} {:.1f}%", t.thread, 100 * t.busy_fraction);
  out += fmt::format("  parallel efficiency {:.1f}%\n", 100 * r.parallel_efficiency);
  out += fmt::format(
      "Profiler: mode {}, {} zone calls, {} trace events, {} dropped, ~{:.1f} ns/zone "
      "≈ {:.2f}% overhead\n",
      mode_name(r.mode), r.calls, r.events, r.dropped, r.zone_cost_ns, 100 * r.overhead_fraction);
  if (r.machine.known())
    out += fmt::format(
        "Machine ({}): peak {:.1f} GFLOP/s/core FP32, bandwidth {:.1f} GB/s/core, "
        "ridge {:.2f} FLOP/B\n",
        r.machine.source, r.machine.peak_gflops, r.machine.bandwidth_gbs, r.machine.ridge());
  else
    out += "Machine: peak unknown (run `shoal bench peak` once to measure and cache it)\n";
  out += format_memory(r);
  out += format_advice(r);
  return out;
}

double measure_zone_cost_ns(Mode mode, int iterations) {
  RecorderConfig cfg;
  cfg.mode = mode;
  cfg.max_threads = 1;
  cfg.max_zones = 4;
  cfg.events_per_thread = mode == Mode::kTrace ? iterations : 0;
  // A fresh thread owns slot 0 of the private recorder, whatever the caller has attached to.
  double result = 0;
  std::thread([&] {
    Recorder rec(cfg);
    const ZoneId z = rec.zone("probe", Category::kOther);
    rec.start();
    Recorder* p = mode == Mode::kOff ? nullptr : &rec;
    using C = std::chrono::steady_clock;
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = C::now();
      for (int i = 0; i < iterations / 5; ++i) {
        Zone zz(p, z);
        asm volatile("" ::: "memory");
      }
      const double ns = std::chrono::duration<double, std::nano>(C::now() - t0).count();
      best = std::min(best, ns / (iterations / 5));
    }
    rec.stop();
    result = best;
  }).join();
  return result;
}

}  // namespace shoal::profile
