// `shoal ncf train|eval` and `shoal synth ncf`: NCF / NeuMF on implicit feedback.
//   --batch-size counts instances (positives and sampled negatives, as the NCF authors' code);
//   --batch-positives P sets it to P·(1 + neg) instead (the contextual user's convention).
//   Both figures are printed.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/profile_options.h"
#include "shoal/core/file_io.h"
#include "shoal/core/rng.h"
#include "shoal/data/ncf.h"
#include "shoal/kernels/bench.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/ncf_trainer.h"
#include "shoal/train/safetensors.h"

namespace shoal::cli {
namespace {

struct NcfArgs {
  std::string train, test, test_negatives, save, load, metrics_out;
  std::vector<std::string> context_cols;
  std::string model = "neumf";
  Index factors = 8;
  std::vector<Index> layers = {64, 32, 16, 8};
  int epochs = 20;
  int neg = 4;
  Index batch_size = 256;
  Index batch_positives = 0;
  double lr = 1e-3;
  int threads = 0;
  uint64_t seed = 1;
  Index num_users = -1, num_items = -1;
  int top_k = 10;
  std::string embedding_adam = "lazy";
  ProfileOptions profile;
};

bool is_csv(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
}

void write_json_atomic(const std::string& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(2) + "\n");
}

models::Ncf<float>::Config model_config(const NcfArgs& a, Index users, Index items, Index ctx) {
  return {.kind = models::parse_ncf_kind(a.model),
          .num_users = users,
          .num_items = items,
          .factors = a.factors,
          .layers = a.layers,
          .context = ctx};
}

void run_train(const NcfArgs& a) {
  const data::NcfIdLimits limits{a.num_users, a.num_items};
  data::NcfPositives tr = is_csv(a.train) ? data::read_ncf_csv(a.train, a.context_cols, limits)
                                          : data::read_ncf_ratings(a.train, limits);
  SHOAL_CHECK(is_csv(a.train) || a.context_cols.empty(),
              "--context-cols needs a CSV training file");
  const bool has_test = !a.test.empty();
  SHOAL_CHECK(has_test == !a.test_negatives.empty(), "--test and --test-negatives go together");
  data::NcfTestSet test;
  if (has_test) {
    test = data::read_ncf_test(a.test, a.test_negatives, limits);
    tr.num_users = std::max(tr.num_users, test.num_users);
    tr.num_items = std::max(tr.num_items, test.num_items);
  }
  const Index batch = a.batch_positives > 0 ? a.batch_positives * (1 + a.neg) : a.batch_size;
  const auto mcfg = model_config(a, tr.num_users, tr.num_items, tr.context_cols());
  SHOAL_CHECK(a.embedding_adam == "lazy" || a.embedding_adam == "dense",
              "--embedding-adam must be lazy or dense, got '{}'", a.embedding_adam);
  train::NcfTrainer trainer(mcfg,
                            {.batch_size = batch,
                             .negatives = a.neg,
                             .lr = a.lr,
                             .seed = a.seed,
                             .threads = a.threads,
                             .pinning = Pinning::kAll,
                             .dense_embedding_adam = a.embedding_adam == "dense"},
                            tr);
  if (!a.load.empty()) train::load_checkpoint(trainer.arena(), a.load);
  auto recorder = make_recorder(a.profile);
  if (recorder) {
    recorder->set_model_name(0, a.model);
    trainer.set_profiler(recorder.get());
    recorder->start();
  }
  std::string ctx_note = tr.context_cols() > 0
                             ? fmt::format(", {} context columns", tr.context_cols())
                             : std::string();
  fmt::print(stderr,
             "shoal ncf: {} on {} positives ({} users, {} items{}), {} negatives/positive → "
             "{} instances/epoch; batch {} instances (= {:.1f} positives), {} threads, "
             "{} embedding Adam\n",
             a.model, tr.size(), tr.num_users, tr.num_items, ctx_note, a.neg,
             trainer.instances_per_epoch(), batch, static_cast<double>(batch) / (1 + a.neg),
             trainer.threads(), a.embedding_adam);
  if (tr.dropped_negatives > 0)
    fmt::print(stderr, "shoal ncf: ignored {} rows with label 0 (negatives are sampled)\n",
               tr.dropped_negatives);
  nlohmann::json epoch_s = nlohmann::json::array(), hr_hist = nlohmann::json::array(),
                 ndcg_hist = nlohmann::json::array();
  double best_hr = -1, best_ndcg = 0, last_hr = 0, last_ndcg = 0, train_s = 0;
  int best_epoch = 0;
  for (int e = 0; e < a.epochs; ++e) {
    const auto r = trainer.train_epoch();
    train_s += r.seconds;
    epoch_s.push_back(r.seconds);
    std::string line = fmt::format(
        "epoch {:3d}  loss {:.4f}  {:.2f} s ({:.2f} s sampling)  {:.0f} inst/s", r.epoch, r.loss,
        r.seconds, r.sample_seconds, static_cast<double>(r.instances) / r.seconds);
    if (has_test) {
      const auto m = trainer.evaluate(test, a.top_k);
      last_hr = m.hr;
      last_ndcg = m.ndcg;
      hr_hist.push_back(m.hr);
      ndcg_hist.push_back(m.ndcg);
      if (m.hr > best_hr) {
        best_hr = m.hr;
        best_ndcg = m.ndcg;
        best_epoch = r.epoch;
      }
      line += fmt::format("  HR@{} {:.4f}  NDCG@{} {:.4f}  (eval {:.2f} s)", a.top_k, m.hr, a.top_k,
                          m.ndcg, m.seconds);
    }
    fmt::print(stderr, "{}\n", line);
  }
  const double ips = static_cast<double>(trainer.instances_per_epoch()) * a.epochs / train_s;
  const double gflops = 3.0 * 2.0 * trainer.model().forward_macs() * ips * 1e-9;
  fmt::print("trained {} epochs, {} steps in {:.2f} s: {:.0f} instances/s (~{:.1f} GFLOP/s)\n",
             a.epochs, trainer.steps(), train_s, ips, gflops);
  if (has_test)
    fmt::print("HR@{} {:.4f} NDCG@{} {:.4f} (last); best HR@{} {:.4f} NDCG@{} {:.4f} at epoch {}\n",
               a.top_k, last_hr, a.top_k, last_ndcg, a.top_k, best_hr, a.top_k, best_ndcg,
               best_epoch);
  if (recorder) finish_profile(*recorder, a.profile, "ncf");
  if (!a.save.empty())
    train::save_checkpoint(trainer.arena(), a.save,
                           {{"model", a.model},
                            {"factors", std::to_string(a.factors)},
                            {"num_users", std::to_string(mcfg.num_users)},
                            {"num_items", std::to_string(mcfg.num_items)},
                            {"context", std::to_string(mcfg.context)}});
  if (!a.metrics_out.empty()) {
    const std::string k = std::to_string(a.top_k);
    nlohmann::json j = {{"model", a.model},
                        {"epochs", a.epochs},
                        {"epoch_s", epoch_s},
                        {"instances_per_epoch", trainer.instances_per_epoch()},
                        {"batch_instances", batch},
                        {"instances_per_s", ips},
                        {"threads", trainer.threads()},
                        {"steps", trainer.steps()}};
    if (has_test) {
      j["hr@" + k] = last_hr;
      j["ndcg@" + k] = last_ndcg;
      j["best_hr@" + k] = best_hr;
      j["best_ndcg@" + k] = best_ndcg;
      j["best_epoch"] = best_epoch;
      j["hr_per_epoch"] = hr_hist;
      j["ndcg_per_epoch"] = ndcg_hist;
    }
    write_json_atomic(a.metrics_out, j);
  }
}

// Scores a saved model (e.g. converted pretrained weights) on the test files.
void run_eval(const NcfArgs& a) {
  SHOAL_CHECK(!a.load.empty() && !a.test.empty() && !a.test_negatives.empty(),
              "ncf eval needs --weights, --test and --test-negatives");
  const train::SafetensorsFile f = train::read_safetensors(a.load);
  const data::NcfTestSet test = data::read_ncf_test(a.test, a.test_negatives);
  // Table sizes come from the weights.
  const bool gmf = a.model != "mlp";
  const auto* ut = f.find(gmf ? "embed_user_gmf.weight" : "embed_user_mlp.weight");
  const auto* it = f.find(gmf ? "embed_item_gmf.weight" : "embed_item_mlp.weight");
  SHOAL_CHECK(ut != nullptr && it != nullptr, "{}: no user/item embedding tensors for model {}",
              a.load, a.model);
  auto cfg = model_config(a, ut->shape[0], it->shape[0], 0);
  train::NcfEvaluator ev(cfg, a.threads, 1024, Pinning::kAll);
  train::load_checkpoint(ev.arena(), a.load);
  const auto m = ev.evaluate(test, a.top_k);
  fmt::print("HR@{} {:.4f} NDCG@{} {:.4f} over {} users ({:.2f} s)\n", a.top_k, m.hr, a.top_k,
             m.ndcg, m.users, m.seconds);
  if (!a.metrics_out.empty()) {
    const std::string k = std::to_string(a.top_k);
    write_json_atomic(a.metrics_out,
                      {{"hr@" + k, m.hr}, {"ndcg@" + k, m.ndcg}, {"users", m.users}});
  }
}

struct SynthArgs {
  Index positives = 100000, users = 1000, items = 500, context = 0;
  uint64_t seed = 1;
  std::string out;
};

// Planted structure: see data::synth_ncf_positives.
void run_synth(const SynthArgs& s) {
  const data::NcfPositives p =
      data::synth_ncf_positives(s.positives, s.users, s.items, s.context, s.seed);
  std::string text = "user,item,label";
  for (const auto& name : p.context_names) text += "," + name;
  text += "\n";
  for (Index r = 0; r < s.positives; ++r) {
    text +=
        fmt::format("{},{},1", p.users[static_cast<size_t>(r)], p.items[static_cast<size_t>(r)]);
    for (Index c = 0; c < s.context; ++c)
      text += fmt::format(",{:.4f}", p.context[static_cast<size_t>(r * s.context + c)]);
    text += "\n";
  }
  write_file_atomic(s.out, text);
  fmt::print("wrote {} positives ({} users, {} items, {} context columns) to {}\n", s.positives,
             s.users, s.items, s.context, s.out);
}

struct BenchArgs {
  Index positives = 3647614, users = 654, items = 1127, context = 21;
  Index batch_positives = 256;
  int neg = 4;
  int epochs = 1;
  std::vector<int> threads = {1, 2};
  uint64_t seed = 1;
  std::string json;
  // The PyTorch peer (bench/peers/ncf_torch.py), run as a subprocess on the same data.
  std::string peer_python;  // empty: no peer
  std::string peer_script = "bench/peers/ncf_torch.py";
  std::string peer_dir;  // where the data for the peer is written (default: a temp dir)
  int peer_steps = 300;
  std::vector<int> peer_threads = {1, 2};
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The peer's copy of the bench data: every positive's user and item (int32, for the rejection
// of negatives), the context rows of the first `timed` positives (float32, the positives the
// peer trains on), and meta.json with the shapes.
void write_peer_data(const data::NcfPositives& tr, Index timed, const std::string& dir) {
  std::filesystem::create_directories(dir);
  auto put = [&](const std::string& name, const void* p, size_t bytes) {
    write_file_atomic(dir + "/" + name, std::string_view(static_cast<const char*>(p), bytes));
  };
  put("users.i32", tr.users.data(), tr.users.size() * sizeof(int32_t));
  put("items.i32", tr.items.data(), tr.items.size() * sizeof(int32_t));
  put("context.f32", tr.context.data(),
      static_cast<size_t>(timed * tr.context_cols()) * sizeof(float));
  write_json_atomic(dir + "/meta.json", {{"positives", tr.size()},
                                         {"users", tr.num_users},
                                         {"items", tr.num_items},
                                         {"context", tr.context_cols()},
                                         {"timed_positives", timed}});
}

// Runs `cmd`, echoing its output, and returns its last line that parses as a JSON object.
nlohmann::json run_peer(const std::string& cmd) {
  std::FILE* p = popen(cmd.c_str(), "r");
  SHOAL_CHECK(p != nullptr, "cannot run the peer: {}", cmd);
  nlohmann::json last;
  char line[8192];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::fputs(("  peer| " + std::string(line)).c_str(), stdout);
    if (line[0] == '{') {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object()) last = std::move(j);
    }
  }
  const int rc = pclose(p);
  SHOAL_CHECK(rc == 0 && last.is_object(), "the peer failed (exit status {}): {}", rc, cmd);
  return last;
}

// `shoal bench ncf`: the contextual user's shape, data synthesised in memory, one trainer per
// thread count; per epoch wall and process CPU seconds of sampling and of the steps.
void run_bench(const BenchArgs& b) {
  const data::NcfPositives tr =
      data::synth_ncf_positives(b.positives, b.users, b.items, b.context, b.seed);
  const models::Ncf<float>::Config mcfg{.kind = models::NcfKind::kNeuMf,
                                        .num_users = b.users,
                                        .num_items = b.items,
                                        .factors = 8,
                                        .layers = {64, 32, 16, 8},
                                        .context = b.context};
  const Index batch = b.batch_positives * (1 + b.neg);
  // Training FLOPs per instance: every Linear 2·in·out forward and 2·(2·in·out) backward
  // (dX and dW); the GMF product 1 multiply forward, 2 backward per factor.
  const models::Ncf<float> probe(mcfg);
  const double linear_macs = probe.forward_macs() - static_cast<double>(mcfg.factors);
  const double flops_per_instance = 6.0 * linear_macs + 3.0 * static_cast<double>(mcfg.factors);
  const double peak1 = kernels::measure_peak_gflops();
  fmt::print(
      "bench ncf: NeuMF-8 [64,32,16,8] + {} context, {} positives x (1 + {}) = {} instances "
      "per epoch, batch {} ({} positives), {} users, {} items\n"
      "training FLOPs/instance {:.0f}; single-core FP32 peak {:.1f} GFLOP/s\n",
      b.context, b.positives, b.neg, b.positives * (1 + b.neg), batch, b.batch_positives, b.users,
      b.items, flops_per_instance, peak1);
  fmt::print(
      "{:>7} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>8} {:>7} {:>8} {:>8} {:>8} "
      "{:>7}\n",
      "threads", "epoch", "wall_s", "cpu_s", "sample_w", "sample_c", "compute", "update", "inst/s",
      "GFLOP/s", "%peak", "steps", "p10_us", "p50_us", "%pk_p50");
  nlohmann::json runs = nlohmann::json::array();
  std::vector<double> step_times;
  step_times.reserve(static_cast<size_t>(b.positives * (1 + b.neg) / batch + 2));
  double best1 = 0, best_all = 0, best_cpu1 = 0;  // best_cpu1: 1 thread, per CPU-second
  for (int t : b.threads) {
    train::NcfTrainConfig cfg;
    cfg.batch_size = batch;
    cfg.negatives = b.neg;
    cfg.seed = b.seed;
    cfg.threads = t;
    cfg.pinning = Pinning::kAll;
    train::NcfTrainer trainer(mcfg, cfg, tr);
    const Index n = trainer.instances_per_epoch();
    double best_ips = 0;
    for (int e = 1; e <= b.epochs; ++e) {
      const double w0 = wall_seconds(), c0 = process_cpu_seconds();
      const double comp0 = trainer.compute_seconds(), upd0 = trainer.update_seconds();
      trainer.draw_epoch(e);
      const double w1 = wall_seconds(), c1 = process_cpu_seconds();
      int64_t steps = 0;
      // Every step's wall time: its median and 10th percentile are robust to other processes'
      // time slices (a preempted step lands in the tail), unlike the epoch's total.
      step_times.clear();
      for (Index s = 0; s < n; s += batch, ++steps) {
        const double s0 = wall_seconds();
        trainer.step(s, std::min(n, s + batch));
        step_times.push_back(wall_seconds() - s0);
      }
      const double w2 = wall_seconds(), c2 = process_cpu_seconds();
      std::sort(step_times.begin(), step_times.end());
      const auto pct = [&](double q) {
        return step_times.empty() ? 0.0
                                  : step_times[static_cast<size_t>(
                                        q * static_cast<double>(step_times.size() - 1))];
      };
      const double p10 = pct(0.1), p50 = pct(0.5);
      // A full batch's FLOPs over the median step time (the last, partial batch is negligible).
      const double p50_gflops =
          p50 > 0 ? static_cast<double>(batch) * flops_per_instance / p50 * 1e-9 : 0.0;
      const double wall = w2 - w0, step_wall = w2 - w1;
      const double ips = static_cast<double>(n) / wall;
      const double gflops = static_cast<double>(n) * flops_per_instance / step_wall * 1e-9;
      const double peak = peak1 * t;
      best_ips = std::max(best_ips, ips);
      if (t == 1) best_cpu1 = std::max(best_cpu1, static_cast<double>(n) / (c2 - c0));
      fmt::print(
          "{:>7} {:>5} {:>9.2f} {:>9.2f} {:>9.3f} {:>9.3f} {:>9.2f} {:>9.2f} {:>12.0f} "
          "{:>8.1f} {:>6.1f}% {:>8} {:>8.1f} {:>8.1f} {:>6.1f}%\n",
          t, e, wall, c2 - c0, w1 - w0, c1 - c0, trainer.compute_seconds() - comp0,
          trainer.update_seconds() - upd0, ips, gflops, 100.0 * gflops / peak, steps, p10 * 1e6,
          p50 * 1e6, 100.0 * p50_gflops / peak);
      runs.push_back({{"threads", t},
                      {"epoch", e},
                      {"wall_s", wall},
                      {"cpu_s", c2 - c0},
                      {"sample_wall_s", w1 - w0},
                      {"sample_cpu_s", c1 - c0},
                      {"steps_wall_s", step_wall},
                      {"steps_cpu_s", c2 - c1},
                      {"compute_wall_s", trainer.compute_seconds() - comp0},
                      {"update_wall_s", trainer.update_seconds() - upd0},
                      {"steps", steps},
                      {"instances", n},
                      {"instances_per_s", ips},
                      {"step_gflops", gflops},
                      {"peak_gflops", peak},
                      {"peak_fraction", gflops / peak},
                      {"step_p10_s", p10},
                      {"step_p50_s", p50},
                      {"step_p50_peak_fraction", p50_gflops / peak}});
    }
    if (t == 1) best1 = best_ips;
    best_all = std::max(best_all, best_ips);
    if (t > 1 && best1 > 0)
      fmt::print("scaling {} threads vs 1: {:.2f}x (best epoch instances/s)\n", t,
                 best_ips / best1);
  }
  nlohmann::json peers = nlohmann::json::array();
  if (!b.peer_python.empty()) {
    // The peer trains on the first `timed` positives' instances (negatives drawn with rejection
    // against all positives) for peer_steps steps, and extrapolates its per-instance sampling
    // and step times to the whole epoch.
    const Index timed =
        std::min<Index>(tr.size(), std::max<Index>(b.peer_steps * batch / (1 + b.neg) + 1, 100000));
    const std::string dir = b.peer_dir.empty()
                                ? (std::filesystem::temp_directory_path() /
                                   fmt::format("shoal-bench-ncf-{}", static_cast<long>(getpid())))
                                      .string()
                                : b.peer_dir;
    write_peer_data(tr, timed, dir);
    double best_peer = 0;
    for (int t : b.peer_threads) {
      const std::string cmd = fmt::format(
          "'{}' '{}' --bench-dir '{}' --batch-size {} --neg {} --threads {} --max-steps {} "
          "--seed {} 2>&1",
          b.peer_python, b.peer_script, dir, batch, b.neg, t, b.peer_steps, b.seed);
      fmt::print("peer: {}\n", cmd);
      std::fflush(stdout);
      nlohmann::json r = run_peer(cmd);
      const double ips = r.value("epoch_instances_per_s", 0.0);
      fmt::print(
          "peer PyTorch {} threads: steps {:.0f} inst/s, sampling {:.2f} us/inst; epoch of {} "
          "instances extrapolated from {} timed steps ({:.2f}% of an epoch): {:.1f} s, {:.0f} "
          "inst/s\n",
          t, r.value("step_instances_per_s", 0.0), 1e6 * r.value("sample_s_per_instance", 0.0),
          b.positives * (1 + b.neg), r.value("steps", 0),
          100.0 * r.value("steps", 0) * static_cast<double>(batch) /
              static_cast<double>(b.positives * (1 + b.neg)),
          r.value("epoch_s_extrapolated", 0.0), ips);
      fmt::print("  (process CPU: {:.1f} s per epoch, {:.0f} instances per CPU-second)\n",
                 r.value("epoch_cpu_s_extrapolated", 0.0),
                 static_cast<double>(b.positives * (1 + b.neg)) /
                     std::max(r.value("epoch_cpu_s_extrapolated", 0.0), 1e-9));
      best_peer = std::max(best_peer, ips);
      r["threads"] = t;
      peers.push_back(r);
    }
    if (best_peer > 0)
      fmt::print(
          "shoal vs PyTorch (best of each side's thread counts, epoch instances/s): "
          "{:.0f} / {:.0f} = {:.1f}x\n",
          best_all, best_peer, best_all / best_peer);
    // Per CPU-second, 1 thread each: robust to other processes' time slices.
    const double epoch_inst = static_cast<double>(b.positives * (1 + b.neg));
    for (const auto& r : peers) {
      const double cpu = r.value("epoch_cpu_s_extrapolated", 0.0);
      if (r.value("threads", 0) == 1 && best_cpu1 > 0 && cpu > 0)
        fmt::print(
            "shoal vs PyTorch, 1 thread, instances per process CPU-second: {:.0f} / {:.0f} = "
            "{:.1f}x\n",
            best_cpu1, epoch_inst / cpu, best_cpu1 * cpu / epoch_inst);
    }
    std::filesystem::remove_all(dir);
  }
  if (!b.json.empty())
    write_json_atomic(b.json, {{"bench", "ncf"},
                               {"peer", peers},
                               {"positives", b.positives},
                               {"users", b.users},
                               {"items", b.items},
                               {"context", b.context},
                               {"negatives", b.neg},
                               {"batch", batch},
                               {"flops_per_instance", flops_per_instance},
                               {"peak_gflops_per_core", peak1},
                               {"runs", runs}});
}

void add_model_options(CLI::App* cmd, NcfArgs& a) {
  cmd->add_option("--model", a.model, "neumf, gmf or mlp")->capture_default_str();
  cmd->add_option("--factors", a.factors, "GMF predictive factors")->capture_default_str();
  cmd->add_option("--layers", a.layers, "MLP layer sizes; layers[0]/2 is the embedding width")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "Threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--test", a.test, "*.test.rating file");
  cmd->add_option("--test-negatives", a.test_negatives, "*.test.negative file");
  cmd->add_option("--top-k", a.top_k, "K of HR@K and NDCG@K")->capture_default_str();
  cmd->add_option("--metrics-out", a.metrics_out, "Write metrics JSON here");
}

}  // namespace

void register_ncf(CLI::App& app) {
  auto* ncf = app.add_subcommand("ncf", "NCF / NeuMF recommenders on implicit feedback");
  ncf->require_subcommand(1);
  static NcfArgs a;
  auto* train = ncf->add_subcommand("train", "Train GMF / MLP / NeuMF; evaluate every epoch");
  train->add_option("--train", a.train, "*.train.rating or CSV user,item[,label][,context...]")
      ->required();
  add_model_options(train, a);
  train->add_option("--context-cols", a.context_cols, "CSV context columns (default: all others)")
      ->delimiter(',');
  train->add_option("--epochs", a.epochs)->check(kPositive)->capture_default_str();
  train->add_option("--neg", a.neg, "Sampled negatives per positive")->capture_default_str();
  train->add_option("--batch-size", a.batch_size, "Instances (positives + negatives) per step")
      ->check(kPositive)
      ->capture_default_str();
  train->add_option("--batch-positives", a.batch_positives,
                    "Positives per step (overrides --batch-size: batch = P·(1 + neg))");
  train->add_option("--lr", a.lr, "Adam learning rate")->capture_default_str();
  train->add_option("--seed", a.seed)->capture_default_str();
  train->add_option("--save", a.save, "Write the weights (safetensors)");
  train->add_option("--init-weights", a.load, "Start from these weights (safetensors)");
  train->add_option("--num-users", a.num_users, "User count (default: max id + 1)");
  train->add_option("--num-items", a.num_items, "Item count (default: max id + 1)");
  train
      ->add_option("--embedding-adam", a.embedding_adam,
                   "lazy: Adam on touched rows only; dense: torch.optim.Adam on whole tables")
      ->capture_default_str();
  add_profile_options(*train, a.profile);
  train->callback([] { run_train(a); });

  auto* eval = ncf->add_subcommand("eval", "Score saved weights on leave-one-out test files");
  eval->add_option("--weights", a.load, "safetensors weights")->required();
  add_model_options(eval, a);
  eval->callback([] { run_eval(a); });

  static SynthArgs s;
  CLI::App* synth = nullptr;
  try {
    synth = app.get_subcommand("synth");
  } catch (const CLI::OptionNotFound&) {
    synth = app.add_subcommand("synth", "Write synthetic data sets");
    synth->require_subcommand(1);
  }
  auto* sn = synth->add_subcommand("ncf", "Implicit-feedback CSV with planted structure");
  sn->add_option("--positives", s.positives)->capture_default_str();
  sn->add_option("--users", s.users)->capture_default_str();
  sn->add_option("--items", s.items)->capture_default_str();
  sn->add_option("--context", s.context, "Numeric context columns")->capture_default_str();
  sn->add_option("--seed", s.seed)->capture_default_str();
  sn->add_option("--out", s.out, "CSV path")->required();
  sn->callback([] { run_synth(s); });

  static BenchArgs bench_args;
  CLI::App* bench = nullptr;
  try {
    bench = app.get_subcommand("bench");
  } catch (const CLI::OptionNotFound&) {
    bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
  }
  auto* bn = bench->add_subcommand(
      "ncf", "NeuMF + context training epochs on synthetic data of the contextual user's shape");
  auto& ba = bench_args;
  bn->add_option("--positives", ba.positives)->capture_default_str();
  bn->add_option("--users", ba.users)->capture_default_str();
  bn->add_option("--items", ba.items)->capture_default_str();
  bn->add_option("--context", ba.context)->capture_default_str();
  bn->add_option("--neg", ba.neg)->capture_default_str();
  bn->add_option("--batch-positives", ba.batch_positives)->capture_default_str();
  bn->add_option("--epochs", ba.epochs)->check(kPositive)->capture_default_str();
  bn->add_option("--threads-list", ba.threads)->delimiter(',')->capture_default_str();
  bn->add_option("--seed", ba.seed)->capture_default_str();
  bn->add_option("--json", ba.json, "Also write the results as JSON");
  bn->add_option("--peer-python", ba.peer_python,
                 "Also run the PyTorch peer with this Python (e.g. /opt/peers/bin/python)");
  bn->add_option("--peer-script", ba.peer_script, "The peer script")->capture_default_str();
  bn->add_option("--peer-dir", ba.peer_dir, "Where to write the peer's data (default: temp)");
  bn->add_option("--peer-steps", ba.peer_steps, "Steps the peer times")
      ->check(kPositive)
      ->capture_default_str();
  bn->add_option("--peer-threads-list", ba.peer_threads)->delimiter(',')->capture_default_str();
  bn->callback([] { run_bench(bench_args); });
}

}  // namespace shoal::cli
