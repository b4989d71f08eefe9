// `shoal bench fleet`: does the fleet scale? One default TSMixerx per series (h 18, input_size
// 36, 1000 steps) on M3 monthly, run with 1 worker and then with W workers (default 2), each
// pinned; prints fits/s, median per-fit wall and thread-CPU time, the scaling efficiency
// fits_per_s(W) / (W · fits_per_s(1)) and the per-fit time ratio. With --peer-python, the
// seed's pattern in the same run: neuralforecast TSMixerx in 1 and then W concurrent
// single-thread processes (bench/peers/fleet_tsmixerx.py), a few series per process.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/fleet/fleet.h"
#include "shoal/fleet/jobs.h"

extern char** environ;

namespace shoal::cli {
namespace {

namespace fs = std::filesystem;

struct BenchFleetArgs {
  std::string data, peer_python, peer_script = "bench/peers/fleet_tsmixerx.py", json;
  int64_t series = 0;
  int workers = 2;
  int64_t max_steps = 1000;
  int peer_series = 2;
};

std::string default_data() {
  const char* env = std::getenv("SHOAL_DATA");
  return (fs::path(env ? env : "../shared/data") / "ts" / "m3_monthly_train.csv.gz").string();
}

struct ShoalRun {
  int workers = 0;
  fleet::FleetSummary sum;
  double load_before = 0, load_after = 0;
};

ShoalRun run_shoal(const fleet::BuiltJobs& built, int workers) {
  ShoalRun r;
  r.workers = workers;
  r.load_before = load_average_1m();
  fleet::run_fleet(built.jobs, {.workers = workers, .progress = true}, &r.sum);
  r.load_after = load_average_1m();
  SHOAL_CHECK(r.sum.failed == 0, "{} of {} fits failed in the fleet benchmark", r.sum.failed,
              r.sum.jobs);
  return r;
}

// The peer: `procs` concurrent processes, each fitting the same `n` series one after another.
// They import torch and load data first, signal ready, and start fitting together.
struct PeerRun {
  int procs = 0;
  double fits_per_s = 0, fit_s_median = 0, wall_s = 0;
  nlohmann::json raw = nlohmann::json::array();
};

PeerRun run_peer(const BenchFleetArgs& a, const std::string& data, int procs) {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("shoal_bench_fleet_{}_{}", ::getpid(), procs);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<pid_t> pids;
  for (int p = 0; p < procs; ++p) {
    std::vector<std::string> args = {a.peer_python, a.peer_script,
                                     "--data",      data,
                                     "--n-series",  std::to_string(a.peer_series),
                                     "--max-steps", std::to_string(a.max_steps),
                                     "--ready",     (dir / fmt::format("ready.{}", p)).string(),
                                     "--go",        (dir / "go").string(),
                                     "--out",       (dir / fmt::format("out.{}.json", p)).string()};
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string log = (dir / fmt::format("log.{}.txt", p)).string();
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    SHOAL_CHECK(rc == 0, "cannot start the peer '{}'", a.peer_python);
    pids.push_back(pid);
  }
  // Wait until every process has imported and read its data, then release them together.
  for (;;) {
    int ready = 0;
    for (int p = 0; p < procs; ++p) ready += fs::exists(dir / fmt::format("ready.{}", p));
    if (ready == procs) break;
    for (const pid_t pid : pids) {
      int st = 0;
      if (waitpid(pid, &st, WNOHANG) == pid)
        throw Error("the peer exited before it was ready; see its log",
                    ErrorContext{.file = (dir / "log.0.txt").string()});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::ofstream(dir / "go") << "go\n";
  for (const pid_t pid : pids) {
    int st = 0;
    waitpid(pid, &st, 0);
    SHOAL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a peer process failed; see {}",
                (dir / "log.0.txt").string());
  }
  PeerRun r;
  r.procs = procs;
  double first = 1e300, last = 0;
  std::vector<double> fit_s;
  int64_t fits = 0;
  for (int p = 0; p < procs; ++p) {
    std::ifstream in(dir / fmt::format("out.{}.json", p));
    const nlohmann::json j = nlohmann::json::parse(in);
    first = std::min(first, j.at("start").get<double>());
    last = std::max(last, j.at("end").get<double>());
    for (const auto& s : j.at("fit_s")) fit_s.push_back(s.get<double>());
    fits += static_cast<int64_t>(j.at("fit_s").size());
    r.raw.push_back(j);
  }
  std::sort(fit_s.begin(), fit_s.end());
  r.wall_s = last - first;
  r.fits_per_s = double(fits) / r.wall_s;
  r.fit_s_median = fit_s.size() % 2 ? fit_s[fit_s.size() / 2]
                                    : 0.5 * (fit_s[fit_s.size() / 2 - 1] + fit_s[fit_s.size() / 2]);
  fs::remove_all(dir);
  return r;
}

void run_bench_fleet(const BenchFleetArgs& a) {
  SHOAL_CHECK(a.workers >= 2, "--workers must be ≥ 2 (it is compared with 1 worker)");
  const std::string data = a.data.empty() ? default_data() : a.data;
  fleet::JobSpec spec;
  spec.id = spec.group = "m3_monthly";
  spec.model = "tsmixerx";
  spec.data = data;
  spec.max_series = a.series;
  spec.config = {{"h", 18}, {"input_size", 36}, {"max_steps", a.max_steps}, {"seasonality", 12}};
  const fleet::BuiltJobs built = fleet::build_jobs({spec});
  const size_t n = built.jobs.size();
  fmt::print(
      "bench fleet: {} M3 monthly series ({}), one TSMixerx each (defaults, h 18, input_size 36, "
      "{} steps), {:.1f} MiB arena per fit; load average {:.2f}\n",
      n, data, a.max_steps, double(built.jobs.front().arena_bytes) / 1048576.0, load_average_1m());
  const ShoalRun one = run_shoal(built, 1);
  const ShoalRun many = run_shoal(built, a.workers);
  const auto row = [](const char* who, int w, double fps, double p50, double cpu50, double lb,
                      double la) {
    fmt::print(
        "  {:<13} {:>2} worker(s)  {:>7.3f} fits/s  per-fit {:>7.3f} s wall  {:>7.3f} s "
        "CPU  (load {:.1f} → {:.1f})\n",
        who, w, fps, p50, cpu50, lb, la);
  };
  row("shoal", 1, one.sum.fits_per_s, one.sum.fit_s_median, one.sum.fit_cpu_s_median,
      one.load_before, one.load_after);
  row("shoal", a.workers, many.sum.fits_per_s, many.sum.fit_s_median, many.sum.fit_cpu_s_median,
      many.load_before, many.load_after);
  const double eff = many.sum.fits_per_s / (a.workers * one.sum.fits_per_s);
  const double ratio = many.sum.fit_s_median / one.sum.fit_s_median;
  const double cpu_ratio = many.sum.fit_cpu_s_median / one.sum.fit_cpu_s_median;
  fmt::print(
      "shoal: scaling efficiency {:.3f} (target ≥ 0.95: {}), per-fit time ratio {:.3f} wall "
      "(target within 5%: {}), {:.3f} thread CPU\n",
      eff, eff >= 0.95 ? "met" : "MISSED", ratio, std::abs(ratio - 1) <= 0.05 ? "met" : "MISSED",
      cpu_ratio);
  nlohmann::json j = {{"data", data},
                      {"series", n},
                      {"h", 18},
                      {"input_size", 36},
                      {"max_steps", a.max_steps},
                      {"arena_bytes", built.jobs.front().arena_bytes},
                      {"shoal",
                       {{"runs", nlohmann::json::array()},
                        {"efficiency", eff},
                        {"fit_time_ratio", ratio},
                        {"fit_cpu_time_ratio", cpu_ratio}}}};
  for (const ShoalRun* r : {&one, &many}) {
    nlohmann::json rj = fleet::summary_json(r->sum);
    rj["load_before"] = r->load_before;
    rj["load_after"] = r->load_after;
    j["shoal"]["runs"].push_back(rj);
  }
  if (!a.peer_python.empty()) {
    fmt::print(
        "peer: neuralforecast TSMixerx, same settings, {} series per process (the first "
        "{} of the data), single-thread processes, 1 then {} at once (unpinned, the "
        "seed's pattern)...\n",
        a.peer_series, a.peer_series, a.workers);
    std::fflush(stdout);
    const PeerRun p1 = run_peer(a, data, 1);
    const PeerRun pw = run_peer(a, data, a.workers);
    for (const PeerRun* p : {&p1, &pw})
      fmt::print("  {:<13} {:>2} process(es) {:>7.3f} fits/s  per-fit {:>7.3f} s wall\n",
                 "neuralforecast", p->procs, p->fits_per_s, p->fit_s_median);
    const double peff = pw.fits_per_s / (a.workers * p1.fits_per_s);
    fmt::print(
        "neuralforecast: scaling efficiency {:.3f}, per-fit time ratio {:.3f}; shoal is "
        "{:.1f}× its fits/s with 1 worker, {:.1f}× with {}\n",
        peff, pw.fit_s_median / p1.fit_s_median, one.sum.fits_per_s / p1.fits_per_s,
        many.sum.fits_per_s / pw.fits_per_s, a.workers);
    j["peer"] = {{"series_per_process", a.peer_series},
                 {"runs",
                  {{{"processes", 1},
                    {"fits_per_s", p1.fits_per_s},
                    {"fit_s_median", p1.fit_s_median},
                    {"wall_s", p1.wall_s}},
                   {{"processes", a.workers},
                    {"fits_per_s", pw.fits_per_s},
                    {"fit_s_median", pw.fit_s_median},
                    {"wall_s", pw.wall_s}}}},
                 {"efficiency", peff},
                 {"fit_time_ratio", pw.fit_s_median / p1.fit_s_median},
                 {"raw", {p1.raw, pw.raw}}};
  }
  if (!a.json.empty()) shoal::write_file_atomic(a.json, j.dump(2) + "\n");
}

}  // namespace

void register_bench_fleet(CLI::App& bench) {
  static BenchFleetArgs a;
  auto* cmd = bench.add_subcommand(
      "fleet", "Fleet scaling: one TSMixerx per M3 monthly series, 1 vs W workers (+ peer)");
  cmd->add_option("--data", a.data,
                  "Long-format series (default $SHOAL_DATA or ../shared/data: "
                  "ts/m3_monthly_train.csv.gz)");
  cmd->add_option("--series", a.series, "Use the first N series (0: all 1,428)")
      ->capture_default_str();
  cmd->add_option("--workers", a.workers, "Workers compared with 1")->capture_default_str();
  cmd->add_option("--max-steps", a.max_steps, "Training steps per fit (default: TSMixerx's)")
      ->capture_default_str();
  cmd->add_option("--peer-python", a.peer_python,
                  "Python with neuralforecast (e.g. /opt/peers/bin/python): also run the peer");
  cmd->add_option("--peer-script", a.peer_script, "The peer script")->capture_default_str();
  cmd->add_option("--peer-series", a.peer_series, "Series fitted by each peer process")
      ->capture_default_str();
  cmd->add_option("--json", a.json, "Also write the figures as JSON");
  cmd->callback([] { run_bench_fleet(a); });
}

}  // namespace shoal::cli
