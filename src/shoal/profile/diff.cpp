#include "shoal/profile/diff.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/profile/html.h"

namespace shoal::profile {

namespace {

double per_step(double ns, int64_t steps) {
  return steps > 0 ? ns / 1e3 / static_cast<double>(steps) : 0;
}

void finish(DiffRow& row) {
  row.delta_us = row.b_us - row.a_us;
  row.ratio = row.a_us > 0 ? row.b_us / row.a_us : 0;
}

std::string zone_key(const ZoneRow& z) {
  return z.model == 0 ? z.name : fmt::format("{}@{}", z.name, z.model);
}

}  // namespace

Diff diff_reports(const Report& a, const Report& b) {
  Diff d;
  d.a_steps = a.steps;
  d.b_steps = b.steps;
  const bool both_known = a.machine.known() && b.machine.known();
  const auto differ = [](double x, double y) { return std::abs(x - y) > 0.05 * std::max(x, y); };
  d.same_machine = a.machine.cpu == b.machine.cpu &&
                   (!both_known || (!differ(a.machine.peak_gflops, b.machine.peak_gflops) &&
                                    !differ(a.machine.bandwidth_gbs, b.machine.bandwidth_gbs)));
  if (!d.same_machine)
    d.machine_note = fmt::format(
        "runs from different machines (A: {}, {:.1f} GFLOP/s, {:.1f} GB/s; B: {}, {:.1f} "
        "GFLOP/s, {:.1f} GB/s): compared in time and in % of each one's own peak",
        a.machine.cpu.empty() ? "?" : a.machine.cpu, a.machine.peak_gflops, a.machine.bandwidth_gbs,
        b.machine.cpu.empty() ? "?" : b.machine.cpu, b.machine.peak_gflops,
        b.machine.bandwidth_gbs);

  DiffRow step{"step", "step (mean)"};
  step.a_us = a.step_mean_ns / 1e3;
  step.b_us = b.step_mean_ns / 1e3;
  finish(step);
  d.rows.push_back(step);

  std::vector<DiffRow> phases;
  for (int c = 0; c < kCategoryCount - 1; ++c) {
    DiffRow p{"phase", category_name(static_cast<Category>(c))};
    p.a_us = per_step(a.breakdown.ns[c], a.steps);
    p.b_us = per_step(b.breakdown.ns[c], b.steps);
    if (p.a_us == 0 && p.b_us == 0) continue;
    finish(p);
    phases.push_back(p);
  }
  std::map<std::string, DiffRow> zones;
  for (const auto& z : a.zones) {
    DiffRow& r = zones[zone_key(z)];
    r = {"zone", zone_key(z)};
    r.in_b = false;
    r.a_us = per_step(z.self_ns, a.steps);
    r.a_gflops = z.gflops;
    r.a_peak = z.peak_fraction;
  }
  for (const auto& z : b.zones) {
    auto it = zones.find(zone_key(z));
    DiffRow& r = it != zones.end() ? it->second : zones[zone_key(z)];
    if (it == zones.end()) {
      r = {"zone", zone_key(z)};
      r.in_a = false;
    }
    r.in_b = true;
    r.b_us = per_step(z.self_ns, b.steps);
    r.b_gflops = z.gflops;
    r.b_peak = z.peak_fraction;
  }
  const auto by_delta = [](const DiffRow& x, const DiffRow& y) {
    return std::abs(x.delta_us) > std::abs(y.delta_us);
  };
  std::stable_sort(phases.begin(), phases.end(), by_delta);
  std::vector<DiffRow> zrows;
  for (auto& kv : zones) {
    DiffRow& r = kv.second;
    if (r.name == "ProfilerStep") continue;  // the step row says it
    finish(r);
    zrows.push_back(r);
  }
  std::stable_sort(zrows.begin(), zrows.end(), by_delta);
  d.rows.insert(d.rows.end(), phases.begin(), phases.end());
  d.rows.insert(d.rows.end(), zrows.begin(), zrows.end());
  return d;
}

namespace {

std::string num(double v, int decimals, bool present = true) {
  if (!present) return "-";
  return fmt::format("{:.{}f}", v, decimals);
}

std::string pct(double f, bool present) {
  return present && f > 0 ? fmt::format("{:.1f}", 100 * f) : "-";
}

std::string note(const DiffRow& r) {
  if (!r.in_a) return "only in B";
  if (!r.in_b) return "only in A";
  return "";
}

}  // namespace

std::string format_diff(const Diff& d, int max_rows) {
  std::string out;
  size_t w = 24;
  for (const auto& r : d.rows) w = std::max(w, std::min<size_t>(r.name.size(), 44));
  out += fmt::format("{:<{}} {:>5} {:>10} {:>10} {:>10} {:>6} {:>8} {:>8} {:>6} {:>6}\n",
                     "Name (us per step)", w, "Kind", "A", "B", "Delta", "B/A", "GF/s A", "GF/s B",
                     "%pk A", "%pk B");
  int shown = 0;
  for (const auto& r : d.rows) {
    if (shown++ >= max_rows) {
      out += fmt::format("... {} more rows\n", d.rows.size() - static_cast<size_t>(max_rows));
      break;
    }
    std::string name = r.name;
    if (name.size() > w) name = name.substr(0, w - 10) + "~" + name.substr(name.size() - 9);
    out += fmt::format("{:<{}} {:>5} {:>10} {:>10} {:>+10.2f} {:>6} {:>8} {:>8} {:>6} {:>6}{}\n",
                       name, w, r.kind, num(r.a_us, 2, r.in_a), num(r.b_us, 2, r.in_b), r.delta_us,
                       r.ratio > 0 ? fmt::format("{:.2f}x", r.ratio) : "-",
                       r.a_gflops > 0 ? num(r.a_gflops, 1) : "-",
                       r.b_gflops > 0 ? num(r.b_gflops, 1) : "-", pct(r.a_peak, r.in_a),
                       pct(r.b_peak, r.in_b), r.in_a && r.in_b ? "" : "  " + note(r));
  }
  out += fmt::format("Steps recorded: A {}, B {} (times are per recorded step)\n", d.a_steps,
                     d.b_steps);
  if (!d.same_machine) out += "Machines: " + d.machine_note + "\n";
  return out;
}

std::string html_diff(const Report& a, const Report& b, const Diff& d, std::string_view a_name,
                      std::string_view b_name) {
  std::string o = html_head(fmt::format("shoal profile diff: {} → {}", a_name, b_name));
  if (!d.same_machine) o += "<p><b>" + html_escape(d.machine_note) + "</b></p>\n";
  o += "<div style=\"display:flex;gap:24px;flex-wrap:wrap\">\n";
  for (int i = 0; i < 2; ++i) {
    const Report& r = i == 0 ? a : b;
    fmt::format_to(std::back_inserter(o),
                   "<div><h2>{}: {}</h2><p class=\"k\">{} steps · step mean {:.1f} µs · "
                   "wall {:.3f} ms</p>\n",
                   i == 0 ? "A" : "B", html_escape(i == 0 ? a_name : b_name), r.steps,
                   r.step_mean_ns / 1e3, r.wall_ns / 1e6);
    o += html_breakdown_svg(r) + "</div>\n";
  }
  o += "</div>\n<h2>Per step phase and zone (µs per recorded step, sorted by |delta|)</h2>\n"
       "<table><tr><th>Name</th><th>Kind</th><th>A</th><th>B</th><th>Delta</th><th>B/A</th>"
       "<th>GFLOP/s A</th><th>GFLOP/s B</th><th>% peak A</th><th>% peak B</th><th></th></tr>\n";
  for (const auto& r : d.rows)
    fmt::format_to(std::back_inserter(o),
                   "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:+.2f}</td><td>{}</td>"
                   "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                   html_escape(r.name), r.kind, num(r.a_us, 2, r.in_a), num(r.b_us, 2, r.in_b),
                   r.delta_us, r.ratio > 0 ? fmt::format("{:.2f}×", r.ratio) : "-",
                   r.a_gflops > 0 ? num(r.a_gflops, 1) : "-",
                   r.b_gflops > 0 ? num(r.b_gflops, 1) : "-", pct(r.a_peak, r.in_a),
                   pct(r.b_peak, r.in_b), note(r));
  o += "</table>\n<p class=\"k\">Generated by shoal profile diff.</p>\n</body></html>\n";
  return o;
}

std::string find_summary(const std::string& dir_or_file) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir_or_file)) return dir_or_file;
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir_or_file)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 13 && n.ends_with(".summary.json")) found.push_back(e.path().string());
  }
  std::sort(found.begin(), found.end());
  SHOAL_CHECK(!found.empty(), "{}: no *.summary.json in this profile directory", dir_or_file);
  SHOAL_CHECK(found.size() == 1,
              "{}: {} summaries in this profile directory ({}...): name one *.summary.json",
              dir_or_file, found.size(), found[0]);
  return found[0];
}

}  // namespace shoal::profile
