// `shoal bench models`: one fit of every forecasting model at its defaults on M3 monthly (every
// 7th series with input_size + h observations, h 18, input_size 36; univariate models trained
// globally over all of them, multivariate ones jointly, as neuralforecast runs them), on 1 and
// 2 threads, with the peers in the same run (bench/peers/models_speed.py): neuralforecast's
// fit of the same model and a torch.compile'd PyTorch loop of its module (compile time and
// steady-state steps reported apart). Per fit: seconds, steps, the achieved GFLOP/s (the
// model's analytic FLOPs per step, from the profiler's zones, times the steps, over the
// unprofiled fit's time) and % of the threads' FP32 peak; the ratios to each peer.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli/bench/peer.h"
#include "cli/commands.h"
#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/data/windows.h"
#include "shoal/kernels/peak.h"
#include "shoal/profile/report.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"

namespace shoal::cli {
namespace {

struct ModelsBenchArgs {
  std::string data = "../shared/data/ts/m3_monthly_train.csv.gz";
  Index every = 7, h = 18, input_size = 36;
  std::vector<std::string> models = {"mlp",
                                     "nlinear",
                                     "dlinear",
                                     "mlp_multivariate",
                                     "nhits",
                                     "nbeats",
                                     "nbeatsx",
                                     "tide",
                                     "rnn",
                                     "gru",
                                     "lstm",
                                     "tcn",
                                     "dilated_rnn",
                                     "itransformer",
                                     "bitcn",
                                     "patchtst",
                                     "vanilla_transformer"};
  std::vector<int> threads = {1, 2};
  Index max_steps = 0;       // 0: each model's default
  Index profile_steps = 20;  // steps of the profiled fit that measures FLOPs per step
  std::string peer_python, peer_script = "bench/peers/models_speed.py", json;
  int peer_threads = 1;
};

// Every `every`-th series with at least input_size + h observations, as CSV text: the bench
// parses it and the peers read the same text from a file.
std::string subset_csv(const data::SeriesSet& all, Index every, Index need) {
  std::string csv = "unique_id,ds,y\n";
  for (Index s = 0; s < all.n_series(); s += every) {
    const auto y = all.y_of(s);
    if (static_cast<Index>(y.size()) < need) continue;
    const auto ds = all.ds_of(s);
    for (size_t t = 0; t < y.size(); ++t)
      csv += fmt::format("{},{},{:.17g}\n", all.ids[size_t(s)], ds[t], y[t]);
  }
  return csv;
}

// A --models entry: a registry name, optionally with its own arguments,
// "tide:layernorm=false:dropout=0.1" (values parsed as JSON, else taken as strings).
struct ModelSpec {
  std::string name;
  nlohmann::json options = nlohmann::json::object();
};

ModelSpec spec_of(const std::string& entry) {
  ModelSpec spec;
  size_t at = entry.find(':');
  spec.name = entry.substr(0, at);
  while (at != std::string::npos) {
    const size_t next = entry.find(':', at + 1);
    const std::string kv = entry.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error(fmt::format("--models {}: '{}' is not key=value", entry, kv));
    const std::string value = kv.substr(eq + 1);
    nlohmann::json v = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    spec.options[kv.substr(0, eq)] = v.is_discarded() ? nlohmann::json(value) : v;
    at = next;
  }
  return spec;
}

train::ForecastJob job_for(const ModelsBenchArgs& a, const std::string& model, int threads,
                           Index max_steps) {
  const ModelSpec spec = spec_of(model);
  nlohmann::json o = {{"h", a.h}, {"input_size", a.input_size}, {"random_seed", 1}};
  if (max_steps > 0) o["max_steps"] = max_steps;
  o.update(spec.options);
  train::ForecastJob job = train::forecast_job(spec.name, o);
  job.train.threads = threads;
  return job;
}

// Analytic FLOPs per training step, from the profiler's zones: a short profiled fit on one
// synthetic series long enough that every step has windows_batch_size distinct windows (the
// global fit's steps draw that many; FLOPs do not depend on the values), or, for a
// multivariate model, on the bench's own panel.
double flops_per_step(const ModelsBenchArgs& a, const std::string& model, const data::Panel& p) {
  train::ForecastJob job = job_for(a, model, 1, a.profile_steps);
  const bool multivariate = train::forecast_model(spec_of(model).name).multivariate;
  data::SeriesSet one;
  std::vector<Index> first = {0};
  std::optional<data::Panel> single;
  if (!multivariate) {
    const Index len = a.input_size + a.h + std::max<Index>(job.windows.windows_batch_size, 1) + 8;
    std::string csv = "unique_id,ds,y\n";
    for (Index t = 0; t < len; ++t) csv += fmt::format("s,{},{:.6f}\n", t, std::sin(0.3 * t));
    one = data::parse_series(csv, "synthetic");
    single.emplace(one, first, data::ExogSpec{});
  }
  profile::Recorder rec({.mode = profile::Mode::kStats});
  job.profiler = &rec;
  rec.start();
  const train::FitResult r = train::fit_forecast(multivariate ? p : *single, job);
  rec.stop();
  const profile::Report rep = profile::summarize(rec, profile::Machine{});
  double flops = 0;
  for (const auto& z : rep.zones)
    if (z.name.find("predict") != 0 && z.name.find("validation") != 0) flops += z.cost.flops;
  return flops / static_cast<double>(std::max<Index>(r.steps, 1));
}

void run_models_bench(const ModelsBenchArgs& a) {
  const double peak1 = kernels::measure_peak_gflops();
  const std::string csv = subset_csv(data::read_series(a.data), a.every, a.input_size + a.h);
  const data::SeriesSet set = data::parse_series(csv, a.data + " (subset)");
  std::vector<Index> all(static_cast<size_t>(set.n_series()));
  for (Index s = 0; s < set.n_series(); ++s) all[size_t(s)] = s;
  const data::Panel panel(set, all, data::ExogSpec{});
  fmt::print(
      "shoal bench models: {} ({} series, every {}th with ≥ {} observations), h {}, "
      "input_size {}; FP32 peak {:.1f} GFLOP/s per core\n",
      a.data, set.n_series(), a.every, a.input_size + a.h, a.h, a.input_size, peak1);
  std::string peer_data;
  if (!a.peer_python.empty()) {
    // Per process: two benchmarks at once must not overwrite each other's subset.
    peer_data = (std::filesystem::temp_directory_path() /
                 fmt::format("shoal-bench-models-{}.csv", ::getpid()))
                    .string();
    write_file_atomic(peer_data, csv);
  }
  nlohmann::json out = {{"peak_gflops_per_core", peak1}, {"series", set.n_series()}};
  struct Row {
    std::string model;
    int threads;
    double fit_s, step_ms, gflops, pct;
    Index steps;
  };
  std::vector<Row> rows;
  std::vector<nlohmann::json> peers;
  for (const auto& model : a.models) {
    const double fps = flops_per_step(a, model, panel);
    for (int t : a.threads) {
      const train::FitResult r = train::fit_forecast(panel, job_for(a, model, t, a.max_steps));
      const double gflops = fps * static_cast<double>(r.steps) / r.fit_seconds * 1e-9;
      rows.push_back({model, t, r.fit_seconds, 1e3 * r.fit_seconds / double(r.steps), gflops,
                      100 * gflops / (peak1 * t), r.steps});
      fmt::print("  {} {} threads: {:.2f} s, {} steps\n", model, t, r.fit_seconds, r.steps);
    }
    if (!a.peer_python.empty()) {
      const ModelSpec spec = spec_of(model);
      const std::string cls(train::forecast_model(spec.name).class_name);
      // The peers run the same steps as shoal (each model's default, or --max-steps), with the
      // entry's own arguments.
      const std::string cmd = fmt::format(
          "{} {} --data {} --h {} --input-size {} --models {} --threads {}{}{} 2>/dev/null",
          a.peer_python, a.peer_script, peer_data, a.h, a.input_size, cls, a.peer_threads,
          a.max_steps > 0 ? fmt::format(" --max-steps {}", a.max_steps) : "",
          spec.options.empty() ? "" : fmt::format(" --kwargs '{}'", spec.options.dump()));
      fmt::print("peer: {}\n", cmd);
      peers.push_back(run_peer_json(cmd));
    }
  }
  if (!peer_data.empty()) {
    std::error_code ignored;  // a subset left in the temporary folder is harmless
    std::filesystem::remove(peer_data, ignored);
  }
  fmt::print("\n{:<22}{:>4}{:>9}{:>7}{:>9}{:>9}{:>7}{:>10}{:>7}{:>10}{:>10}{:>10}{:>7}\n", "model",
             "thr", "fit s", "steps", "ms/step", "GFLOP/s", "%peak", "nf fit s", "x nf",
             "cmp ms/st", "compile s", "cmp fit s", "x cmp");
  for (const Row& r : rows) {
    std::string peer_cols;
    nlohmann::json p;
    for (size_t m = 0; m < peers.size(); ++m)
      if (a.models[m] == r.model) p = peers[m];
    if (p.is_object()) {
      const double nf = p.value("nf_fit_s", 0.0), cmp = p.at("compile_fit_s").get<double>();
      peer_cols = fmt::format("{:>10.2f}{:>7.1f}{:>10.3f}{:>10.1f}{:>10.2f}{:>7.1f}", nf,
                              nf / r.fit_s, 1e3 * p.at("step_s").get<double>(),
                              p.at("compile_s").get<double>(), cmp, cmp / r.fit_s);
      p["shoal_fit_s"] = r.fit_s;
    }
    fmt::print("{:<22}{:>4}{:>9.2f}{:>7}{:>9.3f}{:>9.1f}{:>6.1f}%{}\n", r.model, r.threads, r.fit_s,
               r.steps, r.step_ms, r.gflops, r.pct, peer_cols);
    out["shoal"].push_back({{"model", r.model},
                            {"threads", r.threads},
                            {"fit_s", r.fit_s},
                            {"steps", r.steps},
                            {"gflops", r.gflops},
                            {"peak_fraction", r.pct / 100}});
  }
  for (const auto& p : peers) out["peers"].push_back(p);
  fmt::print(
      "peer threads: {}; x nf / x cmp: the peer's fit time over shoal's (cmp: compile "
      "time + the fit's steps at the compiled loop's steady-state step)\n",
      a.peer_threads);
  if (!a.json.empty()) write_file_atomic(a.json, out.dump(1) + "\n");
}

}  // namespace

void register_bench_models(CLI::App& bench) {
  static ModelsBenchArgs a;
  auto* b = bench.add_subcommand("models", "Per-fit speed of every forecasting model vs its peers");
  b->add_option("--data", a.data, "Series CSV (M3 monthly's training part)")->capture_default_str();
  b->add_option("--every", a.every, "Keep every K-th series")->capture_default_str();
  b->add_option("--h", a.h)->capture_default_str();
  b->add_option("--input-size", a.input_size)->capture_default_str();
  b->add_option("--models", a.models,
                "Registry names, each optionally with arguments: tide:layernorm=false")
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--threads-list", a.threads)->delimiter(',')->capture_default_str();
  b->add_option("--max-steps", a.max_steps, "Steps per fit (0: each model's default)")
      ->capture_default_str();
  b->add_option("--peer-python", a.peer_python,
                "Also run the peers with this Python (e.g. /opt/peers/bin/python)");
  b->add_option("--peer-script", a.peer_script)->capture_default_str();
  b->add_option("--peer-threads", a.peer_threads)->capture_default_str();
  b->add_option("--json", a.json, "Also write the results as JSON");
  b->callback([] { run_models_bench(a); });
}

}  // namespace shoal::cli
