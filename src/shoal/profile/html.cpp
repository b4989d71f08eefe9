#include "shoal/profile/html.h"

#include "shoal/core/file_io.h"
#include "shoal/profile/advice.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace shoal::profile {

namespace {

const char* kRegionColors[kRegionCount] = {"#2b8cbe", "#e34a33", "#31a354", "#756bb1",
                                           "#fdae6b", "#fc9272", "#bdbdbd"};
const char* kColors[kCategoryCount] = {"#8c6bb1", "#2b8cbe", "#e34a33", "#31a354",
                                       "#fdae6b", "#bdbdbd", "#636363", "#636363"};

std::string esc(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

void breakdown_svg(std::string& o, const Report& r) {
  const double w = 900, h = 34;
  fmt::format_to(std::back_inserter(o),
                 "<svg width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"step breakdown\">\n", w,
                 h + 30);
  double x = 0;
  const double wall = r.wall_ns > 0 ? r.wall_ns : 1;
  for (int c = 0; c < kCategoryCount - 1; ++c) {
    const double frac = r.breakdown.ns[c] / wall;
    const double bw = frac * w;
    if (bw > 0)
      fmt::format_to(std::back_inserter(o),
                     "<rect x=\"{:.1f}\" y=\"0\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\">"
                     "<title>{} {:.1f}%</title></rect>\n",
                     x, bw, h, kColors[c], category_name(static_cast<Category>(c)), 100 * frac);
    x += bw;
  }
  double lx = 0;
  for (int c = 0; c < kCategoryCount - 1; ++c) {
    fmt::format_to(std::back_inserter(o),
                   "<rect x=\"{:.0f}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                   "<text x=\"{:.0f}\" y=\"{}\" class=\"s\">{} {:.1f}%</text>\n",
                   lx, h + 10, kColors[c], lx + 14, h + 19, category_name(static_cast<Category>(c)),
                   100 * r.breakdown.ns[c] / wall);
    lx += 128;
  }
  o += "</svg>\n";
}

void layers_svg(std::string& o, const Report& r) {
  std::vector<const ZoneRow*> rows;
  for (const auto& z : r.zones)
    if (z.category != Category::kStep) rows.push_back(&z);
  if (rows.size() > 20) rows.resize(20);
  double mx = 0;
  for (const auto* z : rows) mx = std::max(mx, z->self_ns);
  if (mx <= 0) mx = 1;
  // Room for the longest label (~6.5 px per character of the small font).
  size_t longest = 0;
  for (const auto* z : rows) longest = std::max(longest, z->name.size());
  const double bar_w = 420, row_h = 20,
               left = std::max(230.0, 6.5 * static_cast<double>(longest) + 12);
  fmt::format_to(
      std::back_inserter(o),
      "<svg width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\" aria-label=\"per-zone time\">\n",
      left + 670, rows.size() * row_h + 10);
  double y = 0;
  for (const auto* z : rows) {
    const double bw = std::max(1.0, z->self_ns / mx * bar_w);
    fmt::format_to(std::back_inserter(o),
                   "<text x=\"{}\" y=\"{:.0f}\" class=\"s\" text-anchor=\"end\">{}</text>"
                   "<rect x=\"{}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>"
                   "<text x=\"{:.1f}\" y=\"{:.0f}\" class=\"s\">{:.3f} ms",
                   left - 6, y + 14, esc(z->name), left, y + 3, bw, row_h - 6,
                   kColors[static_cast<int>(z->category)], left + bw + 6, y + 14, z->self_ns / 1e6);
    if (z->gflops > 0) fmt::format_to(std::back_inserter(o), " · {:.1f} GFLOP/s", z->gflops);
    if (z->peak_fraction > 0)
      fmt::format_to(std::back_inserter(o), " · {:.1f}% peak", 100 * z->peak_fraction);
    o += "</text>\n";
    y += row_h;
  }
  o += "</svg>\n";
}

void roofline_svg(std::string& o, const Report& r) {
  const double W = 640, H = 400, L = 60, B = 40, T = 10, R = 20;
  const double peak = r.machine.known() ? r.machine.peak_gflops : 100;
  const double bw = r.machine.known() ? r.machine.bandwidth_gbs : 20;
  double xmin = 0.01, xmax = 100, ymin = 0.01, ymax = peak * 3;
  for (const auto& z : r.zones)
    if (z.gflops > 0 && z.intensity > 0) {
      xmin = std::min(xmin, z.intensity / 2);
      xmax = std::max(xmax, z.intensity * 2);
      ymin = std::min(ymin, z.gflops / 2);
    }
  const double lx0 = std::floor(std::log10(xmin)), lx1 = std::ceil(std::log10(xmax));
  const double ly0 = std::floor(std::log10(ymin)), ly1 = std::ceil(std::log10(ymax));
  auto px = [&](double v) { return L + (std::log10(v) - lx0) / (lx1 - lx0) * (W - L - R); };
  auto py = [&](double v) { return H - B - (std::log10(v) - ly0) / (ly1 - ly0) * (H - B - T); };
  fmt::format_to(std::back_inserter(o),
                 "<svg width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"roofline\">\n"
                 "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                 "stroke=\"#999\"/>\n",
                 W, H, L, T, W - L - R, H - B - T);
  for (double e = lx0; e <= lx1; ++e)
    fmt::format_to(
        std::back_inserter(o),
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" class=\"s\" text-anchor=\"middle\">{4:g}</text>\n",
        px(std::pow(10, e)), T, H - B, H - B + 15, std::pow(10, e));
  for (double e = ly0; e <= ly1; ++e)
    fmt::format_to(std::back_inserter(o),
                   "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>"
                   "<text x=\"{3}\" y=\"{4:.1f}\" class=\"s\" text-anchor=\"end\">{5:g}</text>\n",
                   L, W - R, py(std::pow(10, e)), L - 5, py(std::pow(10, e)) + 4, std::pow(10, e));
  fmt::format_to(std::back_inserter(o),
                 "<text x=\"{}\" y=\"{}\" class=\"s\" text-anchor=\"middle\">arithmetic intensity "
                 "(FLOP/byte)</text><text x=\"14\" y=\"{}\" class=\"s\" "
                 "transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">GFLOP/s</text>\n",
                 (L + W - R) / 2, H - 5, (T + H - B) / 2, (T + H - B) / 2);
  // Roof: bandwidth slope up to the ridge, then flat at the peak.
  const double x0 = std::pow(10, lx0), x1 = std::pow(10, lx1), ridge = peak / bw;
  const double ys = std::max(x0 * bw, std::pow(10, ly0));
  const double xs = ys / bw;
  fmt::format_to(std::back_inserter(o),
                 "<polyline points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"none\" "
                 "stroke=\"#333\" stroke-width=\"2\"{}/>\n"
                 "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"s\">peak {:.1f} GFLOP/s · {:.1f} GB/s · "
                 "ridge {:.2f} FLOP/B{}</text>\n",
                 px(xs), py(ys), px(ridge), py(peak), px(x1), py(peak),
                 r.machine.known() ? "" : " stroke-dasharray=\"4 4\"", px(ridge) + 4, py(peak) - 6,
                 peak, bw, ridge, r.machine.known() ? "" : " (assumed: run shoal bench peak)");
  for (const auto& z : r.zones) {
    if (z.gflops <= 0 || z.intensity <= 0) continue;
    fmt::format_to(std::back_inserter(o),
                   "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\" fill-opacity=\"0.8\">"
                   "<title>{}: {:.2f} FLOP/B, {:.1f} GFLOP/s</title></circle>"
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"t\">{}</text>\n",
                   px(z.intensity), py(z.gflops), kColors[static_cast<int>(z.category)],
                   esc(z.name), z.intensity, z.gflops, px(z.intensity) + 7, py(z.gflops) + 3,
                   esc(z.name));
  }
  o += "</svg>\n";
}

// One bar per layer, stacked by region (bytes), largest layers first; then the totals.
void memory_svg(std::string& o, const MemoryPlan& m) {
  std::vector<const MemoryLayer*> rows;
  for (const auto& l : m.layers) rows.push_back(&l);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const MemoryLayer* a, const MemoryLayer* b) { return a->sum() > b->sum(); });
  if (rows.size() > 30) rows.resize(30);
  uint64_t mx = 1;
  for (const auto* l : rows) mx = std::max(mx, l->sum());
  size_t longest = 0;
  for (const auto* l : rows) longest = std::max(longest, l->name.size());
  const double bar_w = 420, row_h = 18, left = std::max(160.0, 6.5 * double(longest) + 12);
  fmt::format_to(std::back_inserter(o),
                 "<svg width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\" aria-label=\"memory\">\n",
                 left + 560, (double(rows.size()) + 3) * row_h + 16);
  double y = 0;
  for (const auto* l : rows) {
    double x = left;
    fmt::format_to(std::back_inserter(o),
                   "<text x=\"{}\" y=\"{:.0f}\" class=\"s\" text-anchor=\"end\">{}</text>",
                   left - 6, y + 13, esc(l->name));
    for (int g = 0; g < kRegionCount; ++g) {
      const double bw = double(l->bytes[g]) / double(mx) * bar_w;
      if (bw <= 0) continue;
      fmt::format_to(std::back_inserter(o),
                     "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\" "
                     "fill=\"{}\"><title>{} {}: {} bytes</title></rect>",
                     x, y + 3, bw, row_h - 5, kRegionColors[g], esc(l->name),
                     region_name(static_cast<Region>(g)), l->bytes[g]);
      x += bw;
    }
    fmt::format_to(std::back_inserter(o),
                   "<text x=\"{:.1f}\" y=\"{:.0f}\" class=\"s\">{:.1f} KiB</text>\n", x + 6, y + 13,
                   double(l->sum()) / 1024);
    y += row_h;
  }
  // The legend with each region's total, four to a line.
  y += 6;
  for (int g = 0; g < kRegionCount; ++g) {
    const double lx = 170.0 * (g % 4), ly = y + 18.0 * (g / 4);
    fmt::format_to(std::back_inserter(o),
                   "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                   "<text x=\"{:.0f}\" y=\"{:.0f}\" class=\"s\">{} {:.1f} KiB</text>\n",
                   lx, ly, kRegionColors[g], lx + 14, ly + 9, region_name(static_cast<Region>(g)),
                   double(m.total[g]) / 1024);
  }
  o += "</svg>\n";
}

}  // namespace

std::string html_escape(std::string_view s) {
  return esc(s);
}

std::string html_breakdown_svg(const Report& r) {
  std::string o;
  breakdown_svg(o, r);
  return o;
}

std::string html_head(std::string_view title) {
  std::string o;
  fmt::format_to(std::back_inserter(o),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<title>{}</title>\n<style>body{{font:14px system-ui,sans-serif;margin:24px;"
                 "color:#222}} h1{{font-size:20px}} h2{{font-size:16px;margin-top:28px}} "
                 ".s{{font:12px system-ui,sans-serif}} .t{{font:10px system-ui,sans-serif;"
                 "fill:#444}} table{{border-collapse:collapse;font:12px monospace}} td,th{{padding:"
                 "2px 8px;border-bottom:1px solid #eee;text-align:right}} td:first-child,"
                 "th:first-child{{text-align:left}} .k{{color:#666}}</style></head><body>\n"
                 "<h1>{}</h1>\n",
                 esc(title), esc(title));
  return o;
}

std::string html_report(const Report& r, std::string_view title) {
  std::string o = html_head(title);
  fmt::format_to(std::back_inserter(o),
                 "<p class=\"k\">mode {} · {} steps · wall {:.3f} ms · step mean {:.1f} µs (p50 "
                 "{:.1f}, p99 {:.1f}) · parallel efficiency {:.1f}% · {} zone calls · {} dropped "
                 "events · profiler overhead ≈ {:.2f}%</p>\n",
                 mode_name(r.mode), r.steps, r.wall_ns / 1e6, r.step_mean_ns / 1e3,
                 r.step_p50_ns / 1e3, r.step_p99_ns / 1e3, 100 * r.parallel_efficiency, r.calls,
                 r.dropped, 100 * r.overhead_fraction);
  if (r.machine.known())
    fmt::format_to(std::back_inserter(o),
                   "<p class=\"k\">machine: {} · peak {:.1f} GFLOP/s per core (FP32 FMA) · "
                   "bandwidth {:.1f} GB/s per core (triad) · {}</p>\n",
                   esc(r.machine.cpu), r.machine.peak_gflops, r.machine.bandwidth_gbs,
                   r.machine.source);
  o += "<h2>Step breakdown (main thread, sums to wall time)</h2>\n";
  breakdown_svg(o, r);
  o += "<h2>Per-zone self time</h2>\n";
  layers_svg(o, r);
  o += "<h2>Roofline</h2>\n";
  roofline_svg(o, r);
  o += "<h2>Threads</h2>\n<svg width=\"900\" height=\"" +
       std::to_string(r.threads.size() * 20 + 10) + "\">\n";
  for (size_t i = 0; i < r.threads.size(); ++i) {
    const auto& t = r.threads[i];
    fmt::format_to(std::back_inserter(o),
                   "<text x=\"0\" y=\"{}\" class=\"s\">thread {}</text><rect x=\"80\" y=\"{}\" "
                   "width=\"400\" height=\"14\" fill=\"#eee\"/><rect x=\"80\" y=\"{}\" "
                   "width=\"{:.1f}\" height=\"14\" fill=\"#2b8cbe\"/><text x=\"490\" y=\"{}\" "
                   "class=\"s\">busy {:.1f}%</text>\n",
                   i * 20 + 14, t.thread, i * 20 + 3, i * 20 + 3,
                   400 * std::min(1.0, t.busy_fraction), i * 20 + 14, 100 * t.busy_fraction);
  }
  o += "</svg>\n";
  const auto advice = advise(r);
  if (!advice.empty()) {
    o += "<h2>Advice (rules: docs/profiler.md)</h2>\n<ol>\n";
    for (const auto& a : advice)
      fmt::format_to(std::back_inserter(o),
                     "<li><b>{}</b>: {}<br><span class=\"k\">{}</span></li>\n", esc(a.rule),
                     esc(a.advice), esc(a.evidence));
    o += "</ol>\n";
  }
  if (!r.memory.empty() || r.peak_rss > 0) {
    o += "<h2>Memory</h2>\n<pre>" + esc(format_memory(r)) + "</pre>\n";
    for (const auto& m : r.memory) {
      fmt::format_to(std::back_inserter(o), "<p class=\"k\">{}: per layer and region</p>\n",
                     esc(m.model));
      memory_svg(o, m);
    }
  }
  o += "<h2>Zones</h2>\n<table><tr><th>Name</th><th>Category</th><th>Calls</th>"
       "<th>Self ms</th><th>Total ms</th><th>Avg µs</th><th>p99 µs</th><th>FLOPs</th>"
       "<th>GFLOP/s</th><th>% peak</th><th>Bytes</th><th>GB/s</th><th>FLOP/B</th><th>Bound</th>"
       "</tr>\n";
  for (const auto& z : r.zones)
    fmt::format_to(std::back_inserter(o),
                   "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{:.3f}</td>"
                   "<td>{:.2f}</td><td>{:.2f}</td><td>{:.4g}</td><td>{:.1f}</td><td>{:.1f}</td>"
                   "<td>{:.4g}</td><td>{:.1f}</td><td>{:.2f}</td><td>{}</td></tr>\n",
                   esc(z.name), category_name(z.category), z.calls, z.self_ns / 1e6,
                   z.total_ns / 1e6, z.avg_ns / 1e3, z.p99_ns / 1e3, z.cost.flops, z.gflops,
                   100 * z.peak_fraction, z.cost.bytes, z.gbs, z.intensity, z.bound);
  o += "</table>\n<p class=\"k\">FLOPs and bytes are analytic (computed from shapes); GFLOP/s is "
       "per thread, compared with one core's peak. Generated by shoal.</p>\n</body></html>\n";
  return o;
}

void write_html_report(const Report& r, std::string_view title, const std::string& path) {
  write_file_atomic(path, html_report(r, title));
}

}  // namespace shoal::profile
