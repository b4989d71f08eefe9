// `shoal bench tsmixerx`: seconds per TSMixerx fit (h 12, input_size 24, 1,000 steps, 32
// windows per step, one thread) for shoal and, in the same run, for neuralforecast and a bare
// PyTorch loop of the same model (bench/peers/tsmixerx_speed.py, when --peer-python is given),
// plus shoal's achieved GFLOP/s and % of this core's peak in the training steps.
//
// Two cases on M4 hourly series (ds is an integer step, hour of day = ds mod 24):
//   n1       series H1 alone, y only (a default TSMixerx, one model per series);
//   n10_exog H1…H10 jointly (n_series 10), 1 historical (the series' standardised value 24
//            steps back), 2 future (hour-of-day sine and cosine) and 2 static (log10 of the
//            mean level, coefficient of variation) exogenous variables.
// The benchmark writes each case's data as CSV files (long format, static table, futr_df) into
// a temporary folder; shoal parses the same files the peers read.
//
// Figures: a fit is train_predict (window setup, max_steps steps, predict) as `shoal forecast`
// times it, best of --fits runs, wall clock and thread CPU time. The training-step rate is the
// step loop alone (sample + gather windows, forward, loss, backward, Adam), thread CPU time,
// best of --step-reps runs of --max-steps steps after a warm-up, against the analytic FLOPs of
// a step (profile/cost.h conventions, counted below).
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/models/forecast.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/profile/cost.h"
#include "shoal/profile/machine.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_trainer.h"

namespace shoal::cli {
namespace {

struct Options {
  std::string data = "../shared/data/ts/m4_hourly_train.csv.gz";
  std::string peer_python;
  std::string peer_script = "bench/peers/tsmixerx_speed.py";
  std::string json;
  std::string work_dir;
  std::string cases = "n1,n10_exog";
  Index max_steps = 1000;
  Index peer_steps = 1000;
  int fits = 3;
  int step_reps = 3;
  Index chunk = -1;
  bool steps_only = false;  // windows per chunk in the step loop; < 0: the trainer's default
};

struct Case {
  std::string name;
  Index n_series = 1;
  bool exog = false;
};

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// ---- data ------------------------------------------------------------------------------------

struct CaseFiles {
  std::string data, stat, futr;  // futr/stat empty without exogenous variables
  std::vector<std::string> hist_names, futr_names, stat_names;
};

// Writes the case's series (the first n ids of H1, H2, …) with its covariates.
CaseFiles write_case(const data::SeriesSet& src, const Case& c, Index h, const std::string& dir) {
  CaseFiles f;
  f.data = dir + "/" + c.name + ".csv";
  if (c.exog) {
    f.stat = dir + "/" + c.name + "_static.csv";
    f.futr = dir + "/" + c.name + "_futr.csv";
    f.hist_names = {"lag24"};
    f.futr_names = {"hod_sin", "hod_cos"};
    f.stat_names = {"level", "cv"};
  }
  std::ofstream out(f.data), st, fu;
  out << "unique_id,ds,y" << (c.exog ? ",lag24,hod_sin,hod_cos" : "") << "\n";
  if (c.exog) {
    st.open(f.stat);
    fu.open(f.futr);
    st << "unique_id,level,cv\n";
    fu << "unique_id,ds,hod_sin,hod_cos\n";
  }
  constexpr double kTwoPi = 6.283185307179586;
  auto hod = [&](int64_t ds, bool sine) {
    const double a = kTwoPi * double(ds % 24) / 24.0;
    return sine ? std::sin(a) : std::cos(a);
  };
  for (Index k = 1; k <= c.n_series; ++k) {
    const std::string id = fmt::format("H{}", k);
    const Index s = src.find(id);
    SHOAL_CHECK(s >= 0, "bench tsmixerx: series {} not in {}", id, src.source);
    const auto y = src.y_of(s);
    const auto ds = src.ds_of(s);
    double mean = 0, sq = 0;
    for (double v : y) mean += v;
    mean /= double(y.size());
    for (double v : y) sq += (v - mean) * (v - mean);
    const double sd = std::sqrt(sq / double(y.size())) + 1e-12;
    for (size_t t = 0; t < y.size(); ++t) {
      out << id << "," << ds[t] << "," << fmt::format("{:.9g}", y[t]);
      if (c.exog)
        out << fmt::format(",{:.9g},{:.9g},{:.9g}", t >= 24 ? (y[t - 24] - mean) / sd : 0.0,
                           hod(ds[t], true), hod(ds[t], false));
      out << "\n";
    }
    if (c.exog) {
      st << fmt::format("{},{:.9g},{:.9g}\n", id, std::log10(std::max(mean, 1e-12)), sd / mean);
      for (Index t = 1; t <= h; ++t) {
        const int64_t d = ds.back() + t;
        fu << fmt::format("{},{},{:.9g},{:.9g}\n", id, d, hod(d, true), hod(d, false));
      }
    }
  }
  return f;
}

// ---- analytic FLOPs of one training step -----------------------------------------------------

// Forward, backward and Adam of TSMixerx on B windows, with the conventions of profile/cost.h.
// Input gradients are counted only where the model needs them (not into data: the future and
// static mixers' inputs; the projection's input only for RevIN's y column, counted whole as
// the layer computes it). Without dropout the static mixers run once per chunk of windows
// (their input is the same for every window, models/tsmixerx.cpp): `chunks` windows' worth.
double train_step_flops(const models::TSMixerx<float>::Config& c, Index b, Index chunks,
                        Index params) {
  using namespace profile;
  const double bh = double(b * c.h), k = double(c.ff_dim), n = double(c.n_series);
  const double x = double(c.hist_exog), f = double(c.futr_exog), s = double(c.stat_exog),
               h = double(c.h), l = double(c.input_size);
  Cost t;
  auto linear = [&](double rows, double in, double out, ActKind act, bool dx) {
    t += linear_forward(rows, in, out, true, act);
    t += linear_backward_dw(rows, in, out, true);
    if (dx) t += linear_backward_dx(rows, in, out, act);
  };
  auto norm = [&](double cols) {
    const double rows = double(b), feats = h * cols;  // one LayerNorm row per window
    t += layer_norm_forward(rows, feats, true);
    t += layer_norm_backward_dx(rows, feats);
    t += layer_norm_backward_dw(rows, feats, true);
  };
  auto residual = [&](double cols) {
    t += elementwise(bh, cols, 1, 2);  // forward add
    t += elementwise(bh, cols, 1, 2);  // backward: the skip gradient joins the branch's
  };
  auto feature_mixing_on = [&](double rows, double in, double out, bool dx) {
    linear(rows, in, k, ActKind::kRelu, dx);
    linear(rows, k, out, ActKind::kNone, true);
    if (in != out) linear(rows, in, out, ActKind::kNone, dx);
    t += elementwise(rows, out, 1, 2);
    t += elementwise(rows, out, 1, 2);
    const double windows = rows / h;
    t += layer_norm_forward(windows, h * out, true);
    t += layer_norm_backward_dx(windows, h * out);
    t += layer_norm_backward_dw(windows, h * out, true);
  };
  auto feature_mixing = [&](double in, double out, bool dx) { feature_mixing_on(bh, in, out, dx); };
  const double stat_rows = c.dropout > 0 ? bh : h * double(chunks);
  auto temporal_mixing = [&](double cols) {
    linear(double(b) * cols, h, h, ActKind::kRelu, true);  // a Linear over time per column
    residual(cols);
    norm(cols);
  };
  const double c0 = 1 + x + f;
  if (c.revin) {
    t += elementwise(double(b) * l, n, 4, 1);  // normalise
    t += elementwise(bh, n, 4, 1);             // denormalise
    t += elementwise(bh, n, 6, 2);             // its backward
  }
  linear(double(b) * c0 * n, l, h, ActKind::kNone, c.revin);
  feature_mixing(n * c0, k, true);
  double m = 1;
  if (f > 0) feature_mixing(n * f, k, false), ++m;
  if (s > 0) feature_mixing_on(stat_rows, n * s, k, false), ++m;
  temporal_mixing(m * k);
  feature_mixing(m * k, k, true);
  for (Index j = 0; j < c.n_block; ++j) {
    if (s > 0) {
      feature_mixing_on(stat_rows, n * s, k, false);
      temporal_mixing(2 * k);
      feature_mixing(2 * k, k, true);
    } else {
      temporal_mixing(k);
      feature_mixing(k, k, true);
    }
  }
  linear(bh, k, n, ActKind::kNone, true);
  t += point_loss_forward(bh, n);
  t += point_loss_backward(bh, n);
  t += adam_update(double(params));
  return t.flops;
}

// ---- shoal -----------------------------------------------------------------------------------

struct ShoalFigures {
  double fit_wall_s = 0, fit_cpu_s = 0;  // best of the fits
  double step_cpu_s = 0;                 // per step, best of the step runs
  double step_flops = 0;
  size_t arena_bytes = 0;
  Index params = 0;
};

train::ForecastJob make_job(const Options& o, const CaseFiles& f) {
  return train::forecast_job("tsmixerx", {{"h", 12},
                                          {"input_size", 24},
                                          {"hist_exog_list", f.hist_names},
                                          {"futr_exog_list", f.futr_names},
                                          {"stat_exog_list", f.stat_names},
                                          {"max_steps", o.max_steps},
                                          {"random_seed", 1}});
}

ShoalFigures run_shoal(const Options& o, const CaseFiles& f) {
  const data::SeriesSet set = data::read_series(f.data);
  data::StaticTable statics;
  if (!f.stat.empty()) statics = data::read_static(f.stat);
  data::SeriesSet futr;
  if (!f.futr.empty()) futr = data::read_series(f.futr, /*require_y=*/false);
  std::vector<Index> all(size_t(set.n_series()));
  for (Index s = 0; s < set.n_series(); ++s) all[size_t(s)] = s;
  const train::ForecastJob job = make_job(o, f);
  const data::Panel panel(set, all, job.exog, f.stat.empty() ? nullptr : &statics,
                          f.futr.empty() ? nullptr : &futr, job.windows.h);
  ShoalFigures r;
  r.fit_wall_s = r.fit_cpu_s = o.steps_only ? 0 : 1e30;  // 0: not timed (--steps-only)
  for (int i = 0; i < (o.steps_only ? 0 : o.fits); ++i) {
    const double w0 = wall_seconds(), c0 = thread_cpu_seconds();
    const train::FitResult fit = train::fit_forecast(panel, job);
    r.fit_cpu_s = std::min(r.fit_cpu_s, thread_cpu_seconds() - c0);
    r.fit_wall_s = std::min(r.fit_wall_s, wall_seconds() - w0);
    r.arena_bytes = fit.arena_bytes;
  }

  // The step loop alone, as fit_forecast runs it (no validation: val_size 0).
  const auto mc = models::TSMixerx<float>::Config::shaped({.h = job.windows.h,
                                                           .input_size = job.windows.input_size,
                                                           .n_series = panel.n_series(),
                                                           .hist_exog = panel.n_hist(),
                                                           .futr_exog = panel.n_futr(),
                                                           .stat_exog = panel.n_stat()});
  models::TSMixerx<float> model(mc);
  const Index b = job.windows.windows_batch_size;
  train::ForecastTrainer<models::TSMixerx<float>, float>::Config tc{.max_batch = b, .seed = 1};
  if (o.chunk >= 0) tc.chunk_windows = o.chunk;
  train::ForecastTrainer<models::TSMixerx<float>, float> trainer(model, tc);
  r.params = model.num_params();
  const Index chunks = (b + trainer.chunk_windows() - 1) / trainer.chunk_windows();
  r.step_flops = train_step_flops(mc, b, chunks, r.params);
  data::TrainBatcher batcher(panel, job.windows, 1);
  auto step = [&] {
    const data::WindowBatch& wb = batcher.next();
    const Index rows = wb.B * wb.h;
    models::ForecastInputs<float> in{.batch = wb.B,
                                     .insample_y = wb.insample_y.data,
                                     .hist_exog = wb.X > 0 ? wb.hist_exog.data : nullptr,
                                     .futr_exog = wb.F > 0 ? wb.futr_exog.data : nullptr,
                                     .stat_exog = wb.S > 0 ? wb.stat_exog.data : nullptr};
    trainer.train_step(in, ConstMat<float>(wb.outsample_y.data, rows, wb.N),
                       ConstMat<float>(wb.outsample_mask.data, rows, wb.N));
  };
  for (int i = 0; i < 50; ++i) step();
  r.step_cpu_s = 1e30;
  for (int rep = 0; rep < o.step_reps; ++rep) {
    const double c0 = thread_cpu_seconds();
    for (Index i = 0; i < o.max_steps; ++i) step();
    r.step_cpu_s = std::min(r.step_cpu_s, (thread_cpu_seconds() - c0) / double(o.max_steps));
  }
  return r;
}

// ---- peers -----------------------------------------------------------------------------------

nlohmann::json run_peers(const Options& o, const CaseFiles& f) {
  if (o.peer_python.empty()) return {};
  auto join = [](const std::vector<std::string>& v) {
    return fmt::format("{}", fmt::join(v, ","));
  };
  std::string cmd = fmt::format(
      "OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 '{}' '{}' --data '{}' --h 12 --input-size 24 "
      "--max-steps {} --peer-steps {}",
      o.peer_python, o.peer_script, f.data, o.max_steps, o.peer_steps);
  if (!f.stat.empty()) cmd += fmt::format(" --static '{}' --stat {}", f.stat, join(f.stat_names));
  if (!f.hist_names.empty()) cmd += fmt::format(" --hist {}", join(f.hist_names));
  if (!f.futr.empty()) cmd += fmt::format(" --futr {} --futr-df '{}'", join(f.futr_names), f.futr);
  cmd += " 2>/dev/null";
  std::fprintf(stderr, "  peers: %s\n", cmd.c_str());
  FILE* pipe = popen(cmd.c_str(), "r");
  SHOAL_CHECK(pipe != nullptr, "bench tsmixerx: could not run {}", o.peer_python);
  std::string text;
  std::array<char, 4096> buf{};
  while (size_t got = std::fread(buf.data(), 1, buf.size(), pipe)) text.append(buf.data(), got);
  const int rc = pclose(pipe);
  SHOAL_CHECK(rc == 0, "bench tsmixerx: the peer script failed (exit {}): {}", rc, cmd);
  const size_t brace = text.find('{');
  SHOAL_CHECK(brace != std::string::npos, "bench tsmixerx: no JSON from the peer script");
  return nlohmann::json::parse(text.substr(brace));
}

void run(const Options& o) {
  const profile::Machine machine = profile::machine_roofs(/*measure=*/true);
  std::string dir = o.work_dir;
  if (dir.empty()) dir = (std::filesystem::temp_directory_path() / "shoal_bench_tsmixerx").string();
  std::filesystem::create_directories(dir);
  const data::SeriesSet src = data::read_series(o.data);
  nlohmann::json out = {{"machine", {{"cpu", machine.cpu}, {"peak_gflops", machine.peak_gflops}}},
                        {"load_before", load_average()},
                        {"max_steps", o.max_steps},
                        {"peer_steps", o.peer_steps},
                        {"data", o.data},
                        {"cases", nlohmann::json::array()}};
  std::printf(
      "TSMixerx fit: h 12, input_size 24, ff 64, 2 blocks, %lld steps of 32 windows, "
      "1 thread; %s\n",
      static_cast<long long>(o.max_steps), o.data.c_str());
  std::printf("peak %.1f GFLOP/s (%s); load average %s\n", machine.peak_gflops,
              machine.source.c_str(), load_average().c_str());
  std::vector<Case> cases;
  const std::string wanted = "," + o.cases + ",";
  for (const Case& c : {Case{"n1", 1, false}, Case{"n10_exog", 10, true}})
    if (wanted.find("," + c.name + ",") != std::string::npos) cases.push_back(c);
  SHOAL_CHECK(!cases.empty(), "bench tsmixerx: no case in '{}' (n1, n10_exog)", o.cases);
  for (const Case& c : cases) {
    const CaseFiles files = write_case(src, c, 12, dir);
    std::fprintf(stderr, "case %s: shoal...\n", c.name.c_str());
    const ShoalFigures s = run_shoal(o, files);
    const nlohmann::json peers = o.steps_only ? nlohmann::json{} : run_peers(o, files);
    const double gflops = s.step_flops / s.step_cpu_s * 1e-9;
    const double pct = machine.peak_gflops > 0 ? 100 * gflops / machine.peak_gflops : 0;
    std::printf("\n%s: n_series %lld%s, %lld parameters, arena %.2f MB\n", c.name.c_str(),
                static_cast<long long>(c.n_series),
                c.exog ? ", hist lag24, futr hod_sin/hod_cos, static level/cv" : "",
                static_cast<long long>(s.params), double(s.arena_bytes) / 1e6);
    if (!o.steps_only)
      std::printf("  shoal            fit %7.3f s wall, %7.3f s CPU (best of %d)\n", s.fit_wall_s,
                  s.fit_cpu_s, o.fits);
    std::printf(
        "  shoal steps      %.3f ms/step CPU, %.1f MFLOP/step, %.1f GFLOP/s = %.1f%% of "
        "peak\n",
        s.step_cpu_s * 1e3, s.step_flops * 1e-6, gflops, pct);
    nlohmann::json rec = {{"name", c.name},
                          {"n_series", c.n_series},
                          {"exog", c.exog},
                          {"params", s.params},
                          {"arena_bytes", s.arena_bytes},
                          {"shoal",
                           {{"fit_wall_s", s.fit_wall_s},
                            {"fit_cpu_s", s.fit_cpu_s},
                            {"step_cpu_s", s.step_cpu_s},
                            {"step_mflop", s.step_flops * 1e-6},
                            {"step_gflops", gflops},
                            {"step_pct_peak", pct}}}};
    for (const char* peer : {"neuralforecast", "torch"}) {
      if (!peers.contains(peer)) continue;
      const nlohmann::json& p = peers[peer];
      const double fit = p["fit_s"].get<double>(), cpu = p["fit_cpu_s"].get<double>();
      std::printf(
          "  %-16s fit %7.3f s wall, %7.3f s CPU%s (%lld steps run, %.2f ms/step median, "
          "%.2f s fixed)\n",
          std::string(peer) == "torch" ? "bare torch loop" : peer, fit, cpu,
          p["extrapolated"].get<bool>() ? " extrapolated" : "",
          static_cast<long long>(p["steps_run"].get<Index>()),
          1e3 * p["step_median_s"].get<double>(), p["fixed_s"].get<double>());
      std::printf("  %-16s shoal is %.1fx faster (wall), %.1fx (CPU)\n", "", fit / s.fit_wall_s,
                  cpu / s.fit_cpu_s);
      rec[peer] = p;
      rec[std::string("speedup_wall_vs_") + peer] = fit / s.fit_wall_s;
      rec[std::string("speedup_cpu_vs_") + peer] = cpu / s.fit_cpu_s;
    }
    out["cases"].push_back(rec);
  }
  out["load_after"] = load_average();
  std::printf("\nload average after: %s\n", load_average().c_str());
  if (!o.json.empty()) write_file_atomic(o.json, out.dump(1) + "\n");
}

}  // namespace

void register_bench_tsmixerx(CLI::App& bench) {
  auto o = std::make_shared<Options>();
  auto* cmd = bench.add_subcommand(
      "tsmixerx", "TSMixerx seconds per fit vs neuralforecast and a bare PyTorch loop");
  cmd->add_option("--data", o->data, "M4 hourly training file (series H1..H10 are used)");
  cmd->add_option("--peer-python", o->peer_python,
                  "Python with neuralforecast (e.g. /opt/peers/bin/python): also time the peers");
  cmd->add_option("--peer-script", o->peer_script, "The peers' timing script");
  cmd->add_option("--peer-steps", o->peer_steps,
                  "Steps the peers run; fewer than --max-steps are extrapolated per step")
      ->check(kPositive);
  cmd->add_option("--max-steps", o->max_steps, "Training steps per fit")->check(kPositive);
  cmd->add_option("--fits", o->fits, "shoal fits per case (the best is reported)")
      ->check(kPositive);
  cmd->add_option("--step-reps", o->step_reps, "Timed runs of the step loop (the best is kept)")
      ->check(kPositive);
  cmd->add_option("--cases", o->cases, "Comma-separated: n1, n10_exog");
  cmd->add_option("--chunk", o->chunk,
                  "Windows per chunk in the timed step loop (0: whole batch; default: the "
                  "trainer's)");
  cmd->add_flag("--steps-only", o->steps_only, "Time only the step loop (no fits, no peers)");
  cmd->add_option("--work-dir", o->work_dir, "Where the case CSV files are written");
  cmd->add_option("--json", o->json, "Also write the figures as JSON to this file");
  cmd->callback([o] { run(*o); });
}

}  // namespace shoal::cli
