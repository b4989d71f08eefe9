#include "shoal/profile/trace.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <zlib.h>
#include <nlohmann/json.hpp>

#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/profile/report.h"

namespace shoal::profile {

namespace {

// ns since the session start, as "µs.nnn".
void append_us(std::string& out, uint64_t ns) {
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

std::string json_escape(std::string_view s) {
  return nlohmann::json(std::string(s)).dump();
}

}  // namespace

std::string chrome_trace_json(const Recorder& rec, const Machine& machine) {
  const Clock& clock = rec.clock();
  const auto& zones = rec.zones();
  const uint64_t base = rec.session_start_ticks();
  auto to_ns = [&](uint64_t t) -> uint64_t {
    return t <= base ? 0 : static_cast<uint64_t>(std::llround(clock.to_ns(t - base)));
  };
  std::vector<std::string> names, cats;
  for (const auto& z : zones) {
    names.push_back(json_escape(z.name));
    cats.push_back(
        json_escape(z.category == Category::kStep ? "user_annotation" : category_name(z.category)));
  }

  std::string out;
  out.reserve(static_cast<size_t>(rec.threads_seen()) * 4096 + 4096);
  out += "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",";
  fmt::format_to(std::back_inserter(out),
                 "\"shoal\":{{\"mode\":\"{}\",\"steps\":{},\"dropped_events\":{},"
                 "\"ns_per_tick\":{},\"peak_gflops\":{},\"bandwidth_gbs\":{},\"cpu\":{}}},\n",
                 mode_name(rec.mode()), rec.steps_recorded(), rec.dropped_events(),
                 clock.ns_per_tick(), machine.peak_gflops, machine.bandwidth_gbs,
                 json_escape(machine.cpu));
  out += "\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  std::set<std::pair<int, int>> tracks;  // (pid, tid)
  std::vector<int64_t> order;
  for (int t = 0; t < rec.threads_seen(); ++t) {
    const Event* ev = rec.events(t);
    const int64_t n = rec.event_count(t);
    order.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    // Parents before children: by start, then longest first.
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return ev[a].t0 != ev[b].t0 ? ev[a].t0 < ev[b].t0 : ev[a].t1 > ev[b].t1;
    });
    for (int64_t i : order) {
      const Event& e = ev[i];
      const ZoneInfo& z = zones[e.zone];
      const uint64_t b = to_ns(e.t0), d = to_ns(e.t1) - b;
      tracks.insert({z.model, t});
      sep();
      out += "{\"ph\":\"X\",\"cat\":";
      out += cats[e.zone];
      if (e.zone == kStepZone) {
        fmt::format_to(std::back_inserter(out), ",\"name\":\"ProfilerStep#{}\"", e.rows);
      } else {
        out += ",\"name\":";
        out += names[e.zone];
      }
      fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"ts\":", z.model, t);
      append_us(out, b);
      out += ",\"dur\":";
      append_us(out, d);
      if (e.zone != kStepZone && (z.cost.per_row.flops > 0 || z.cost.fixed.flops > 0)) {
        const Cost c = z.cost.at(e.rows);
        fmt::format_to(std::back_inserter(out), ",\"args\":{{\"rows\":{},\"flops\":{:.0f}}}",
                       e.rows, c.flops);
      }
      out += '}';
    }
  }
  std::set<int> pids;
  for (const auto& [pid, tid] : tracks) pids.insert(pid);
  for (int pid : pids) {
    const auto& mn = rec.model_names();
    const std::string name =
        static_cast<size_t>(pid) < mn.size() && !mn[static_cast<size_t>(pid)].empty()
            ? mn[static_cast<size_t>(pid)]
            : fmt::format("model {}", pid);
    sep();
    fmt::format_to(std::back_inserter(out),
                   "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,"
                   "\"args\":{{\"name\":{}}}}}",
                   pid, json_escape(name));
  }
  for (const auto& [pid, tid] : tracks) {
    sep();
    fmt::format_to(std::back_inserter(out),
                   "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                   "\"args\":{{\"name\":\"{}\"}}}},\n"
                   "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},"
                   "\"args\":{{\"sort_index\":{}}}}}",
                   pid, tid, tid == 0 ? "main" : fmt::format("worker {}", tid), pid, tid, tid);
  }
  out += "\n]}\n";
  return out;
}

std::string gzip_bytes(std::string_view bytes, int level) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer, which Perfetto and gunzip read.
  SHOAL_CHECK(deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
              "gzip: deflateInit2 failed");
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t n = z.total_out;
  deflateEnd(&z);
  SHOAL_CHECK(rc == Z_STREAM_END, "gzip: deflate failed ({})", rc);
  out.resize(n);
  return out;
}

void write_chrome_trace(const Recorder& rec, const Machine& machine, const std::string& path) {
  const std::string json = chrome_trace_json(rec, machine);
  if (path.ends_with(".gz"))
    write_file_atomic(path, gzip_bytes(json));
  else
    write_file_atomic(path, json);
}

TraceCheck validate_chrome_trace(std::string_view text, size_t max_errors) {
  TraceCheck r;
  auto fail = [&](std::string msg) {
    if (r.errors.size() < max_errors) r.errors.push_back(std::move(msg));
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    fail("not valid JSON");
    return r;
  }
  if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array()) {
    fail("top level must be an object with a traceEvents array");
    return r;
  }
  // Per track: (start ns, end ns, index), X events only.
  std::map<std::pair<int64_t, int64_t>, std::vector<std::tuple<int64_t, int64_t, size_t>>> tracks;
  const auto& events = j["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const std::string where = fmt::format("event {}", i);
    if (!e.is_object()) {
      fail(where + ": not an object");
      continue;
    }
    if (!e.contains("ph") || !e["ph"].is_string()) {
      fail(where + ": missing ph");
      continue;
    }
    const std::string ph = e["ph"].get<std::string>();
    if (!e.contains("name") || !e["name"].is_string()) fail(where + ": missing name");
    bool ids_ok = true;
    for (const char* k : {"pid", "tid"}) {
      if (!e.contains(k) || !e[k].is_number_integer() || e[k].get<int64_t>() < 0 ||
          e[k].get<int64_t>() >= (int64_t{1} << 31)) {
        fail(fmt::format("{}: {} must be an integer in [0, 2^31)", where, k));
        ids_ok = false;
      }
    }
    if (ph == "M") continue;
    if (!e.contains("ts") || !e["ts"].is_number()) {
      fail(where + ": missing ts");
      continue;
    }
    if (ph != "X") continue;
    if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
      fail(where + ": X event needs dur ≥ 0");
      continue;
    }
    if (!e.contains("cat") || !e["cat"].is_string()) fail(where + ": X event needs cat");
    if (!ids_ok) continue;
    ++r.x_events;
    const auto b = static_cast<int64_t>(std::llround(e["ts"].get<double>() * 1000));
    const auto d = static_cast<int64_t>(std::llround(e["dur"].get<double>() * 1000));
    tracks[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].emplace_back(b, b + d, i);
  }
  r.tracks = static_cast<int64_t>(tracks.size());
  for (auto& [key, v] : tracks) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                              : std::get<1>(a) > std::get<1>(b);
    });
    std::vector<std::tuple<int64_t, int64_t, size_t>> stack;
    for (const auto& ev : v) {
      while (!stack.empty() && std::get<1>(stack.back()) <= std::get<0>(ev)) stack.pop_back();
      if (!stack.empty() && std::get<1>(ev) > std::get<1>(stack.back()))
        fail(fmt::format(
            "pid {} tid {}: event {} [{}, {}] ns overlaps event {} [{}, {}] ns without "
            "nesting",
            key.first, key.second, std::get<2>(ev), std::get<0>(ev), std::get<1>(ev),
            std::get<2>(stack.back()), std::get<0>(stack.back()), std::get<1>(stack.back())));
      stack.push_back(ev);
    }
  }
  return r;
}

}  // namespace shoal::profile
