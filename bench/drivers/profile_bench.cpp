#include "bench/drivers/profile_bench.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/core/rng.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/profile/report.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/mlp_trainer.h"
#include "shoal/train/ncf_trainer.h"

namespace shoal::profile {

namespace {

using Clk = std::chrono::steady_clock;

// The best per-zone time over chunks of 10 000 zones (~0.3 ms): a chunk that lost its time
// slice to another process on a shared machine is not the profiler's cost.
// `chain`: consecutive zones of a ZoneChain (one clock read per zone edge shared by two zones).
double loop_ns(Recorder* rec, ZoneId z, int64_t iterations, bool chain = false) {
  constexpr int64_t kChunk = 10000;
  double best = 1e30;
  for (int64_t done = 0; done < iterations; done += kChunk) {
    const auto t0 = Clk::now();
    if (chain) {
      ZoneChain zones(rec, 0u);
      for (int64_t i = 0; i < kChunk; ++i) {
        zones.next(z);
        asm volatile("" ::: "memory");
      }
    } else {
      for (int64_t i = 0; i < kChunk; ++i) {
        Zone zone(rec, z);
        asm volatile("" ::: "memory");
      }
    }
    best = std::min(best, std::chrono::duration<double, std::nano>(Clk::now() - t0).count() /
                              static_cast<double>(kChunk));
  }
  return best;
}

}  // namespace

double zone_cost_ns(Mode mode, int64_t iterations, int reps, bool chain) {
  std::vector<double> base, with;
  for (int r = 0; r < reps; ++r) {
    RecorderConfig cfg;
    cfg.mode = mode;
    cfg.max_threads = 2;
    cfg.max_zones = 4;
    cfg.events_per_thread = mode == Mode::kTrace ? iterations + iterations / 10 + 16 : 0;
    // A thread of its own takes slot 0 of a fresh recorder per repetition.
    double b = 0, w = 0;
    std::thread([&] {
      Recorder rec(cfg);
      const ZoneId z = rec.zone("probe", Category::kOther);
      rec.start();
      Recorder* p = mode == Mode::kOff ? nullptr : &rec;
      loop_ns(p, z, iterations / 10, chain);  // warm caches and the branch predictor
      b = loop_ns(nullptr, z, iterations, chain);
      w = loop_ns(p, z, iterations, chain);
      rec.stop();
    }).join();
    base.push_back(b);
    with.push_back(w);
  }
  return std::max(0.0, median(with) - median(base));
}

// The median of `v` and a ~95% confidence interval for it from order statistics (ranks
// n/2 ± 0.98·√n, distribution-free).
struct MedianCi {
  double median, lo, hi;
};
MedianCi median_ci(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  const double half = 0.98 * std::sqrt(n);
  const auto rank = [&](double r) { return v[static_cast<size_t>(std::clamp(r, 0.0, n - 1))]; };
  return {median(v), rank(std::floor(n / 2 - half)), rank(std::ceil(n / 2 + half - 1))};
}

OverheadCase measure_overhead(const Workload& w, int rounds, double seconds) {
  OverheadCase c;
  c.name = w.name;
  c.headline = w.headline;
  RecorderConfig sc;
  sc.mode = Mode::kStats;
  RecorderConfig tc;
  tc.mode = Mode::kTrace;
  tc.events_per_thread = 1 << 18;
  Recorder stats(sc), trace(tc);
  w.attach(&stats);
  w.attach(&trace);
  w.attach(nullptr);
  stats.start();
  trace.start();
  Recorder* recs[3] = {nullptr, &stats, &trace};
  // One untimed warm-up unit per mode (JIT kernels, caches, thread slots); their time sizes the
  // rounds when none are given: a case's noise shrinks with the number of paired rounds, not with
  // the length of a unit.
  // The fastest warm-up sizes them: the first may include one-off work (an epoch's sampling).
  double unit = 1e30;
  for (Recorder* r : recs) {
    w.attach(r);
    const double t0 = process_cpu_seconds();
    w.run();
    unit = std::min(unit, std::max(1e-6, process_cpu_seconds() - t0));
  }
  if (rounds <= 0) rounds = std::clamp(static_cast<int>(seconds / (3 * unit)), 11, 401) | 1;
  c.rounds = rounds;
  std::vector<double> t[3], ratio_s, ratio_t;
  int64_t steps = 1;
  for (int round = 0; round < rounds; ++round) {
    double sec[3] = {};
    for (int k = 0; k < 3; ++k) {
      const int m = (round + k) % 3;  // rotate the order so no mode always runs first
      w.attach(recs[m]);
      const double t0 = process_cpu_seconds();
      steps = w.run();
      sec[m] = process_cpu_seconds() - t0;
    }
    for (int m = 0; m < 3; ++m) t[m].push_back(sec[m] * 1e6 / static_cast<double>(steps));
    ratio_s.push_back(sec[1] / sec[0]);
    ratio_t.push_back(sec[2] / sec[0]);
  }
  w.attach(nullptr);
  stats.stop();
  trace.stop();
  c.step_us_off = median(t[0]);
  c.step_us_stats = median(t[1]);
  c.step_us_trace = median(t[2]);
  const MedianCi s = median_ci(ratio_s), tr = median_ci(ratio_t);
  c.overhead_stats = s.median - 1;
  c.overhead_trace = tr.median - 1;
  c.ci_stats = {s.lo - 1, s.hi - 1};
  c.ci_trace = {tr.lo - 1, tr.hi - 1};
  uint64_t calls = 0;
  for (int th = 0; th < stats.threads_seen(); ++th)
    for (size_t z = 0; z < stats.zones().size(); ++z)
      calls += stats.stats(th, static_cast<ZoneId>(z)).calls;
  const auto total_steps = static_cast<double>(steps) * (rounds + 1);
  c.zones_per_step = static_cast<double>(calls) / total_steps;
  return c;
}

namespace {

// An MLP regression workload on synthetic rows; one run() is one epoch.
Workload mlp_workload(std::string name, Index in, std::vector<Index> hidden, Index out, Index batch,
                      Index steps, int threads) {
  struct State {
    std::vector<double> x, y;
    std::unique_ptr<train::MlpTrainer> trainer;
  };
  auto s = std::make_shared<State>();
  const Index rows = batch * steps;
  RngStream rng(3, 1);
  s->x.resize(static_cast<size_t>(rows * in));
  s->y.resize(static_cast<size_t>(rows * out));
  for (auto& v : s->x) v = rng.uniform();
  for (auto& v : s->y) v = rng.uniform();
  s->trainer = std::make_unique<train::MlpTrainer>(
      models::Mlp<float>::Config{.in = in, .hidden = std::move(hidden), .out = out},
      train::MlpTrainConfig{.batch_size = batch, .seed = 1, .threads = threads},
      ConstMat<double>(s->x.data(), rows, in), ConstMat<double>(s->y.data(), rows, out));
  return {std::move(name), [s](Recorder* r) { s->trainer->set_profiler(r); },
          [s, steps] {
            s->trainer->train_epoch();
            return static_cast<int64_t>(steps);
          }};
}

// A whole TSMixerx fit (train::fit_forecast on model tsmixerx, as `shoal forecast` runs it: setup,
// zone registration, sampling, steps, validation, predict) on synthetic monthly-like series with
// one historical exogenous column; one run() is one fit.
Workload tsmixerx_workload(std::string name, Index n_series, Index h, Index input_size, Index steps,
                           Index batch) {
  struct State {
    data::SeriesSet set;
    std::unique_ptr<data::Panel> panel;
    train::ForecastJob job;
  };
  auto s = std::make_shared<State>();
  const Index len = 8 * (input_size + h);
  RngStream rng(5, 2);
  s->set.source = "synthetic";
  s->set.offsets.push_back(0);
  s->set.exog_names = {"x"};
  s->set.exog.resize(1);
  std::vector<Index> series;
  for (Index i = 0; i < n_series; ++i) {
    s->set.ids.push_back(fmt::format("s{}", i));
    for (Index t = 0; t < len; ++t) {
      const double season = std::sin(6.283185307179586 * double(t) / 12.0);
      s->set.ds.push_back(t);
      s->set.y.push_back(10 + 0.05 * double(t) + 3 * season + 0.3 * rng.uniform());
      s->set.exog[0].push_back(season + 0.1 * rng.uniform());
    }
    s->set.offsets.push_back(s->set.rows());
    s->set.freq.push_back({});
    series.push_back(i);
  }
  s->job.model = "tsmixerx";
  s->job.exog.hist = {"x"};
  s->job.windows.h = h;
  s->job.windows.input_size = input_size;
  s->job.windows.windows_batch_size = batch;
  s->job.windows.val_size = h;
  s->job.train.max_steps = steps;
  s->job.train.val_check_steps = std::max<Index>(steps / 4, 1);
  s->panel = std::make_unique<data::Panel>(s->set, series, s->job.exog);
  return {std::move(name), [s](Recorder* r) { s->job.profiler = r; },
          [s, steps] {
            train::fit_forecast(*s->panel, s->job);
            return static_cast<int64_t>(steps);
          },
          /*headline=*/true};
}

}  // namespace

std::vector<Workload> default_workloads() {
  std::vector<Workload> w;
  // The reference MLP of the profiler spec (A4): 784-256-10, batch 64, one thread.
  w.push_back(mlp_workload("mlp 784-256-10 b64 1t", 784, {256}, 10, 64, 32, 1));
  // The MLP demo's default shape on a small table: µs-scale ops, where overhead shows most.
  w.push_back(mlp_workload("mlp 10-64-64-1 b64 1t", 10, {64, 64}, 1, 64, 200, 1));
  // A TSMixerx fit as `shoal forecast --model tsmixerx` runs it (neuralforecast defaults:
  // ff_dim 64, 2 blocks, batch 32), one series with a historical exogenous column, L 36, h 12;
  // 50 steps, so many fits (setup, steps, validation, predict) fit the time of a case.
  w.push_back(tsmixerx_workload("tsmixerx fit N1 L36 h12", 1, 12, 36, 50, 32));
  // The contextual NeuMF of the NCF user at its seed shape (654 users, 1,127 items, 21 context
  // features, 256 positives + 4 negatives each per step), one thread; 10 steps per unit.
  auto ncf = std::make_shared<train::NcfSyntheticRun>(
      train::NcfSyntheticConfig{.pinning = Pinning::kNone});
  w.push_back({"ncf seed shape b256 1t", [ncf](Recorder* r) { ncf->trainer().set_profiler(r); },
               [ncf] { return ncf->run(10); }, /*headline=*/true});
  return w;
}

ProfilerBench bench_profiler(int rounds, double seconds) {
  ProfilerBench b;
  const int64_t iters = 1000000;
  b.zone_ns_off = zone_cost_ns(Mode::kOff, iters, 5);
  b.zone_ns_stats = zone_cost_ns(Mode::kStats, iters, 5);
  b.zone_ns_trace = zone_cost_ns(Mode::kTrace, iters, 5);
  b.chain_ns_trace = zone_cost_ns(Mode::kTrace, iters, 5, /*chain=*/true);
  b.overhead_stats = b.overhead_trace = -1e30;
  for (const auto& w : default_workloads()) {
    b.cases.push_back(measure_overhead(w, rounds, seconds));
    // What the zone cost alone predicts: zones per step × cost per zone, over the step time.
    b.cases.back().modelled_trace =
        b.cases.back().zones_per_step * b.zone_ns_trace / (1e3 * b.cases.back().step_us_off);
    if (!w.headline) continue;
    b.overhead_stats = std::max(b.overhead_stats, b.cases.back().overhead_stats);
    b.overhead_trace = std::max(b.overhead_trace, b.cases.back().overhead_trace);
  }
  if (b.overhead_stats < -1e29) b.overhead_stats = b.overhead_trace = 0;
  return b;
}

std::string format_profiler_bench(const ProfilerBench& b) {
  std::string o;
  o += fmt::format(
      "cost of one zone (begin+end, tight loop, empty loop subtracted):\n"
      "  off {:.2f} ns   stats {:.2f} ns   trace {:.2f} ns   (best 10k-zone chunk, median of 5)\n"
      "  trace, consecutive zones of a ZoneChain (one clock read per zone): {:.2f} ns\n",
      b.zone_ns_off, b.zone_ns_stats, b.zone_ns_trace, b.chain_ns_trace);
  o += "end-to-end overhead (interleaved rounds in one process, median of per-round ratios of "
       "process CPU time with its 95% confidence interval; 'zone cost': zones/step × trace zone "
       "cost ÷ step time):\n";
  o += fmt::format("  {:<26} {:>6} {:>10} {:>10} {:>10} {:>24} {:>24} {:>10} {:>9}\n", "case",
                   "rounds", "off us/st", "stats", "trace", "stats overhead", "trace overhead",
                   "zones/step", "zone cost");
  const auto pct = [](double v, std::array<double, 2> ci) {
    return fmt::format("{:+.2f}% [{:+.2f}, {:+.2f}]", 100 * v, 100 * ci[0], 100 * ci[1]);
  };
  for (const auto& c : b.cases)
    o += fmt::format(
        "  {:<26} {:>6} {:>10.1f} {:>10.1f} {:>10.1f} {:>24} {:>24} {:>10.1f} {:>8.3f}%\n", c.name,
        c.rounds, c.step_us_off, c.step_us_stats, c.step_us_trace,
        pct(c.overhead_stats, c.ci_stats), pct(c.overhead_trace, c.ci_trace), c.zones_per_step,
        100 * c.modelled_trace);
  o += fmt::format(
      "worst of the training cases (TSMixerx fit, NCF): stats {:+.2f}%  trace {:+.2f}%   (the "
      "MLP cases show the limit: µs-scale steps with a zone per layer)\n",
      100 * b.overhead_stats, 100 * b.overhead_trace);
  return o;
}

void write_profiler_bench_json(const ProfilerBench& b, const std::string& path) {
  nlohmann::json j;
  j["zone_ns_off"] = b.zone_ns_off;
  j["zone_ns_stats"] = b.zone_ns_stats;
  j["zone_ns_trace"] = b.zone_ns_trace;
  j["chain_ns_trace"] = b.chain_ns_trace;
  j["overhead_stats"] = b.overhead_stats;
  j["overhead_trace"] = b.overhead_trace;
  j["cases"] = nlohmann::json::array();
  for (const auto& c : b.cases)
    j["cases"].push_back({{"name", c.name},
                          {"rounds", c.rounds},
                          {"step_us_off", c.step_us_off},
                          {"step_us_stats", c.step_us_stats},
                          {"step_us_trace", c.step_us_trace},
                          {"overhead_stats", c.overhead_stats},
                          {"overhead_trace", c.overhead_trace},
                          {"overhead_stats_ci", c.ci_stats},
                          {"overhead_trace_ci", c.ci_trace},
                          {"headline", c.headline},
                          {"modelled_trace", c.modelled_trace},
                          {"zones_per_step", c.zones_per_step}});
  write_file_atomic(path, j.dump(2) + "\n");
}

}  // namespace shoal::profile
