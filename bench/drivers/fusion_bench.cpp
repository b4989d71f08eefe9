#include "bench/drivers/fusion_bench.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "shoal/core/arena.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/core/rng.h"
#include "shoal/core/thread_pool.h"
#include "shoal/layers/losses.h"
#include "shoal/models/lanes_mlp.h"
#include "shoal/models/mlp.h"
#include "shoal/optim/adam.h"

namespace shoal::fleet {

namespace {

using kernels::kLanes;

models::Mlp<float>::Config mlp_config(const FusionCase& c) {
  SHOAL_CHECK(c.widths.size() >= 2, "case '{}': needs at least in and out widths", c.name);
  return {.in = c.widths.front(),
          .hidden = std::vector<Index>(c.widths.begin() + 1, c.widths.end() - 1),
          .out = c.widths.back(),
          .act = kernels::Act::kRelu};
}

// A model's own training data: `rows` rows it gathers into its batch each step.
struct Data {
  std::vector<float> x, y;
  Data(Index rows, Index in, Index out, uint64_t seed)
      : x(static_cast<size_t>(rows * in)), y(static_cast<size_t>(rows * out)) {
    RngStream rng(seed, 7);
    for (auto& v : x) v = rng.uniform(-1, 1);
    for (auto& v : y) v = rng.uniform(-1, 1);
  }
};

// One model trained the normal way: Mlp (per-model fused Linear kernels), MSE, Adam, in its arena.
struct Separate {
  models::Mlp<float> model;
  Buffer<float> x, y, dout;
  layers::MseLoss<float> loss;
  optim::Adam<float> adam{{.lr = 1e-3}};
  Arena arena;
  Data data;

  Separate(const models::Mlp<float>::Config& cfg, Index rows, uint64_t seed)
      : model(cfg), data(rows, cfg.in, cfg.out, seed) {
    Planner planner;
    planner.set_optim_slots(adam.slots());
    model.plan(planner, rows);
    planner.buffer(x, Region::kActivations, "batch.x", {rows, cfg.in});
    planner.buffer(y, Region::kActivations, "batch.y", {rows, cfg.out});
    planner.buffer(dout, Region::kActivationGrads, "batch.dout", {rows, cfg.out});
    arena = Arena(std::move(planner));
    RngStream rng(seed, 0);
    model.init(rng);
  }

  void step(const Ctx& ctx) {
    std::copy(data.x.begin(), data.x.end(), x.view.data);
    std::copy(data.y.begin(), data.y.end(), y.view.data);
    const MatView<float> xb = x.mat(), yb = y.mat();
    const MatView<float> pred = model.forward(ctx, xb);
    loss.forward(pred, yb);
    loss.backward(pred, yb, dout.mat());
    model.backward(ctx, xb, dout.mat());
    adam.step(arena);
    std::memset(arena.grads<float>(), 0, arena.region_bytes(Region::kGrads));
  }
};

// The 8 models fused across lanes: one LanesMlp, one Adam pass over its arena.
struct Fused {
  models::LanesMlp model;
  Buffer<float> x, y, dout;
  optim::Adam<float> adam{{.lr = 1e-3}};
  Arena arena;
  std::vector<Data> data;
  std::vector<ConstMat<float>> xs, ys;
  Index rows;

  Fused(const models::Mlp<float>::Config& cfg, Index rows_) : model(cfg), rows(rows_) {
    Planner planner;
    planner.set_optim_slots(adam.slots());
    model.plan(planner, rows);
    planner.buffer(x, Region::kActivations, "batch.x", {rows, cfg.in, kLanes});
    planner.buffer(y, Region::kActivations, "batch.y", {rows, cfg.out, kLanes});
    planner.buffer(dout, Region::kActivationGrads, "batch.dout", {rows, cfg.out, kLanes});
    arena = Arena(std::move(planner));
    for (Index l = 0; l < kLanes; ++l) {
      data.emplace_back(rows, cfg.in, cfg.out, static_cast<uint64_t>(l + 1));
      RngStream rng(static_cast<uint64_t>(l + 1), 0);
      model.init_lane(l, rng);
    }
    for (auto& d : data) {
      xs.emplace_back(d.x.data(), rows, cfg.in);
      ys.emplace_back(d.y.data(), rows, cfg.out);
    }
  }

  void step() {
    kernels::lanes_pack(xs, x.view.data);
    kernels::lanes_pack(ys, y.view.data);
    const float* pred = model.forward(x.view.data, rows);
    double loss[kLanes];
    models::lanes_mse(pred, y.view.data, rows, model.config().out, dout.view.data, loss);
    model.backward(x.view.data, dout.view.data, rows);
    adam.step(arena);
    std::memset(arena.grads<float>(), 0, arena.region_bytes(Region::kGrads));
  }
};

struct Samples {
  std::vector<double> us;
  double median() {
    std::vector<double> s = us;
    std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
    return s[s.size() / 2];
  }
  double best() const { return *std::min_element(us.begin(), us.end()); }
};

// Calls of fn per sample so that one sample lasts ≥ 200 µs of thread CPU time.
template <class F>
int calls_per_sample(F&& fn) {
  for (int w = 0; w < 3; ++w) fn();
  int inner = 1;
  for (;;) {
    const double t0 = thread_cpu_seconds();
    for (int r = 0; r < inner; ++r) fn();
    if (thread_cpu_seconds() - t0 >= 200e-6 || inner >= (1 << 16)) return inner;
    inner *= 2;
  }
}

template <class F>
double sample_us(int inner, F&& fn) {
  const double t0 = thread_cpu_seconds();
  for (int r = 0; r < inner; ++r) fn();
  return (thread_cpu_seconds() - t0) * 1e6 / inner;
}

FusionRow bench_case(const FusionCase& c, int reps) {
  const auto cfg = mlp_config(c);
  std::vector<std::unique_ptr<Separate>> sep;
  for (Index l = 0; l < kLanes; ++l)
    sep.push_back(std::make_unique<Separate>(cfg, c.rows, static_cast<uint64_t>(l + 1)));
  Fused fused(cfg, c.rows);
  Ctx ctx;
  auto run_separate = [&] {
    for (auto& s : sep) s->step(ctx);
  };
  auto run_fused = [&] { fused.step(); };
  const int inner_sep = calls_per_sample(run_separate);
  const int inner_fused = calls_per_sample(run_fused);
  Samples s_sep, s_fused;
  // Alternating samples: both paths see the same machine load.
  for (int r = 0; r < std::max(reps, 1); ++r) {
    s_sep.us.push_back(sample_us(inner_sep, run_separate) / kLanes);
    s_fused.us.push_back(sample_us(inner_fused, run_fused) / kLanes);
  }
  FusionRow row;
  row.shape = c;
  for (size_t k = 0; k + 1 < c.widths.size(); ++k) {
    const double nio = 2.0 * static_cast<double>(c.rows) * static_cast<double>(c.widths[k]) *
                       static_cast<double>(c.widths[k + 1]);
    row.flops += nio * (k == 0 ? 2 : 3);  // forward, dW, and dx except for the input layer
  }
  row.separate_median_us = s_sep.median();
  row.separate_best_us = s_sep.best();
  row.fused_median_us = s_fused.median();
  row.fused_best_us = s_fused.best();
  row.ratio_median = row.separate_median_us / row.fused_median_us;
  row.ratio_best = row.separate_best_us / row.fused_best_us;
  row.separate_gflops = row.flops / row.separate_median_us * 1e-3;
  row.fused_gflops = row.flops / row.fused_median_us * 1e-3;
  return row;
}

std::string widths_text(const std::vector<Index>& w) {
  std::string s;
  for (size_t k = 0; k < w.size(); ++k) s += (k ? "-" : "") + std::to_string(w[k]);
  return s;
}

}  // namespace

std::vector<FusionCase> default_fusion_cases(Index rows, const std::vector<Index>& widths,
                                             bool tsmixerx) {
  std::vector<FusionCase> cases;
  for (Index w : widths) cases.push_back({"mlp", rows, {w, w, w, 1}, true});
  if (tsmixerx) {
    // TSMixerx defaults on M3 monthly (input_size 36, h 18, ff_dim 64, 32 windows per step):
    // the first time Linear (36 → 18 over 32 windows × 1 series), a temporal mixer (18 → 18
    // over 32 windows × 64 features) and a feature mixer (64 → 64 → 64 over 32 × 18 rows).
    cases.push_back({"tsmixerx time 36>18", 32, {36, 18}, false});
    cases.push_back({"tsmixerx TM 18>18", 32 * 64, {18, 18}, false});
    cases.push_back({"tsmixerx FM 64>64>64", 32 * 18, {64, 64, 64}, false});
  }
  return cases;
}

FusionReport bench_fusion(const std::vector<FusionCase>& cases, int reps) {
  const int cpu = sched_getcpu();
  if (cpu >= 0) pin_current_thread(cpu);
  FusionReport rep;
  rep.reps = reps;
  for (const auto& c : cases) {
    rep.rows.push_back(bench_case(c, reps));
    const FusionRow& r = rep.rows.back();
    if (c.sweep && r.ratio_median >= 1.1 && r.ratio_best >= 1.1)
      rep.crossover_width = std::max(rep.crossover_width, c.widths[1]);
  }
  return rep;
}

std::string format_fusion_report(const FusionReport& report) {
  std::string out = fmt::format(
      "8 models, one training step each (gather, fwd, MSE, bwd, Adam); µs per model-step, "
      "thread CPU time, median | best of {} samples\n",
      report.reps);
  out += fmt::format("{:<22} {:>5} {:>12} {:>10} {:>9} {:>10} {:>9} {:>7} {:>6} {:>8} {:>8}\n",
                     "case", "rows", "widths", "sep_med", "sep_best", "fused_med", "fus_best",
                     "ratio", "best", "GF/s sep", "GF/s fus");
  for (const auto& r : report.rows)
    out += fmt::format(
        "{:<22} {:>5} {:>12} {:>10.2f} {:>9.2f} {:>10.2f} {:>9.2f} {:>6.2f}x {:>5.2f}x {:>8.2f} "
        "{:>8.2f}\n",
        r.shape.name, r.shape.rows, widths_text(r.shape.widths), r.separate_median_us,
        r.separate_best_us, r.fused_median_us, r.fused_best_us, r.ratio_median, r.ratio_best,
        r.separate_gflops, r.fused_gflops);
  if (report.crossover_width > 0)
    out += fmt::format(
        "crossover: fusion wins by >= 10% (median and best) up to hidden width {} of the mlp "
        "sweep\n",
        report.crossover_width);
  else
    out += "crossover: fusion never wins by >= 10% (median and best) in the mlp sweep\n";
  return out;
}

void write_fusion_report_json(const FusionReport& report, const std::string& path) {
  nlohmann::json j;
  j["reps"] = report.reps;
  j["crossover_width"] = report.crossover_width;
  j["cases"] = nlohmann::json::array();
  for (const auto& r : report.rows)
    j["cases"].push_back({{"name", r.shape.name},
                          {"rows", r.shape.rows},
                          {"widths", r.shape.widths},
                          {"flops_per_model_step", r.flops},
                          {"separate_median_us", r.separate_median_us},
                          {"separate_best_us", r.separate_best_us},
                          {"fused_median_us", r.fused_median_us},
                          {"fused_best_us", r.fused_best_us},
                          {"ratio_median", r.ratio_median},
                          {"ratio_best", r.ratio_best},
                          {"separate_gflops", r.separate_gflops},
                          {"fused_gflops", r.fused_gflops}});
  write_file_atomic(path, j.dump(2) + "\n");
}

}  // namespace shoal::fleet
