// `shoal bench ncf-recommend`: top-K recommendation speed. Every user scored against every item
// with a NeuMF-8 [64,32,16,8] (train/ncf_recommend.h), at the contextual user's shape (654
// users × 1,127 items, 21 context features) and at ml-100k's (943 × 1,682, no context), on 1 and
// 2 threads, beside the batched PyTorch peer (bench/peers/ncf_recommend_torch.py: the same
// weights, no_grad, all items of a user in one batch) in the same run. Speed does not depend on
// the weights' values: the model is freshly initialised.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench/peer.h"
#include "cli/commands.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/peak.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/ncf_trainer.h"

namespace shoal::cli {
namespace {

struct RecommendCase {
  std::string name;
  Index users, items, context;
};

struct RecommendBenchArgs {
  std::vector<std::string> cases = {"user", "ml-100k"};
  std::vector<int> threads = {1, 2};
  Index k = 10;
  Index rows = 1024;  // items per forward chunk and thread
  int repeats = 5;
  std::string peer_python, peer_script = "bench/peers/ncf_recommend_torch.py", json;
};

RecommendCase recommend_case(const std::string& name) {
  if (name == "user") return {"user", 654, 1127, 21};
  if (name == "ml-100k") return {"ml-100k", 943, 1682, 0};
  throw Error(fmt::format("unknown case '{}'", name),
              ErrorContext{.field = "--cases", .expected = "user, ml-100k", .actual = name});
}

void put(const std::string& path, const void* p, size_t bytes) {
  write_file_atomic(path, std::string_view(static_cast<const char*>(p), bytes));
}

nlohmann::json run_recommend_case(const RecommendBenchArgs& a, const RecommendCase& c,
                                  double peak1) {
  train::NcfOptions o;  // NeuMF-8, [64, 32, 16, 8]
  const auto cfg = o.model(c.users, c.items, c.context);
  std::vector<float> context(static_cast<size_t>(c.users * c.context));
  RngStream rng(7, 3);
  for (float& v : context) v = static_cast<float>(rng.normal());
  std::vector<int32_t> users(static_cast<size_t>(c.users));
  for (Index u = 0; u < c.users; ++u) users[static_cast<size_t>(u)] = static_cast<int32_t>(u);
  const double pairs = static_cast<double>(c.users) * static_cast<double>(c.items);
  std::string weights;
  nlohmann::json out = {
      {"case", c.name}, {"users", c.users}, {"items", c.items}, {"context", c.context}, {"k", a.k}};
  train::NcfTopK first;
  double model_flops = 0, exec_flops = 0;  // per pair
  fmt::print("\n{}: {} users × {} items ({} context), top {}; {} rows per chunk\n", c.name, c.users,
             c.items, c.context, a.k, a.rows);
  fmt::print("{:>8} {:>10} {:>12} {:>14} {:>13} {:>7}\n", "threads", "seconds", "pairs/s",
             "model GFLOP/s", "exec GFLOP/s", "%peak");
  for (int t : a.threads) {
    train::NcfEvaluator ev(cfg, t, a.rows, Pinning::kAll);
    if (weights.empty()) {
      RngStream init(1, /*stream=*/0);  // as NcfTrainer initialises
      ev.model().init(init);
      weights = train::encode_checkpoint(ev.arena());
      // The model's FLOPs per pair, as an implementation scoring each pair on its own does them
      // (the peer), and the ones shoal executes (models/ncf.h, score_user).
      model_flops = 2.0 * ev.model().forward_macs();
      exec_flops = ev.model().scoring_flops_per_pair();
    } else {
      train::load_checkpoint_bytes(ev.arena(), weights, "bench weights");
    }
    const train::NcfTopKRequest req{
        .users = users, .context = c.context > 0 ? context.data() : nullptr, .k = a.k};
    train::NcfTopK r = ev.top_k(req);  // warm-up
    double best = 1e30;
    for (int i = 0; i < a.repeats; ++i) {
      const double t0 = wall_seconds();
      r = ev.top_k(req);
      best = std::min(best, wall_seconds() - t0);
    }
    if (first.items.empty()) first = r;
    SHOAL_CHECK(r.items == first.items, "{} threads ranked differently from {}", t,
                a.threads.front());
    const double model_gflops = pairs * model_flops / best * 1e-9;
    const double gflops = pairs * exec_flops / best * 1e-9;
    const double pct = 100.0 * gflops / (peak1 * t);
    fmt::print("{:>8} {:>10.4f} {:>12.4g} {:>14.1f} {:>13.1f} {:>6.1f}%\n", t, best, pairs / best,
               model_gflops, gflops, pct);
    out["shoal"].push_back({{"threads", t},
                            {"seconds", best},
                            {"pairs_per_s", pairs / best},
                            {"model_gflops", model_gflops},
                            {"gflops", gflops},
                            {"peak_fraction", pct / 100}});
  }
  if (a.peer_python.empty()) return out;
  const std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("shoal-ncf-recommend-{}", c.name))
          .string();
  std::filesystem::create_directories(dir);
  put(dir + "/weights.safetensors", weights.data(), weights.size());
  put(dir + "/user_context.f32", context.data(), context.size() * sizeof(float));
  write_file_atomic(dir + "/meta.json", nlohmann::json{{"kind", o.kind},
                                                       {"users", c.users},
                                                       {"items", c.items},
                                                       {"context", c.context},
                                                       {"factors", o.factors},
                                                       {"layers", o.layers}}
                                            .dump());
  for (int t : a.threads) {
    const std::string cmd = fmt::format("{} {} --bench-dir {} --threads {} --k {} 2>&1",
                                        a.peer_python, a.peer_script, dir, t, a.k);
    fmt::print("peer: {}\n", cmd);
    nlohmann::json p = run_peer_json(cmd);
    // The same model: each of the first users' top-K, as the peer ranked them.
    int same = 0, shown = 0;
    for (const auto& top : p.value("top", nlohmann::json::array())) {
      const auto u = static_cast<size_t>(shown++);
      std::vector<int32_t> ours(first.items.begin() + static_cast<std::ptrdiff_t>(u * a.k),
                                first.items.begin() + static_cast<std::ptrdiff_t>((u + 1) * a.k));
      same += top.get<std::vector<int32_t>>() == ours;
    }
    const double pps = p.at("pairs_per_s").get<double>();
    double shoal_pps = 0;
    for (const auto& s : out["shoal"])
      if (s["threads"] == t) shoal_pps = s["pairs_per_s"].get<double>();
    fmt::print(
        "peer PyTorch {} threads: {:.4f} s, {:.4g} pairs/s; shoal / peer = {:.1f}x; same "
        "top-{} for {} of the first {} users\n",
        t, p.at("seconds").get<double>(), pps, shoal_pps / pps, a.k, same, shown);
    p["speedup"] = shoal_pps / pps;
    p["same_top_k_users"] = same;
    p.erase("top");
    out["peer"].push_back(p);
  }
  // As `shoal bench ncf`: each side at its best thread count.
  double best_shoal = 0, best_peer = 0;
  for (const auto& s : out["shoal"])
    best_shoal = std::max(best_shoal, s["pairs_per_s"].get<double>());
  for (const auto& s : out["peer"]) best_peer = std::max(best_peer, s["pairs_per_s"].get<double>());
  out["speedup_best"] = best_shoal / best_peer;
  fmt::print(
      "shoal vs PyTorch (best of each side's thread counts, pairs/s): {:.4g} / {:.4g} = "
      "{:.1f}x\n",
      best_shoal, best_peer, best_shoal / best_peer);
  return out;
}

void run_recommend_bench(const RecommendBenchArgs& a) {
  const double peak1 = kernels::measure_peak_gflops();
  fmt::print(
      "shoal bench ncf-recommend: NeuMF-8 [64,32,16,8]; single-core FP32 peak {:.1f} GFLOP/s.\n"
      "model GFLOP/s: the forward FLOPs of each pair scored on its own (what the peer does); "
      "exec: the FLOPs shoal executes (the first layer's user and item parts formed once, not "
      "per pair); %peak: exec over the threads' peak\n",
      peak1);
  nlohmann::json all = {{"peak_gflops_per_core", peak1}};
  for (const auto& name : a.cases)
    all["cases"].push_back(run_recommend_case(a, recommend_case(name), peak1));
  if (!a.json.empty()) write_file_atomic(a.json, all.dump(1) + "\n");
}

}  // namespace

void register_bench_ncf_recommend(CLI::App& bench) {
  static RecommendBenchArgs a;
  auto* b = bench.add_subcommand(
      "ncf-recommend",
      "Top-K recommendation: every user against every item, pairs/s and % of peak");
  b->add_option("--cases", a.cases, "user (654 × 1,127, 21 context), ml-100k (943 × 1,682)")
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--threads-list", a.threads)->delimiter(',')->capture_default_str();
  b->add_option("--k", a.k)->check(kPositive)->capture_default_str();
  b->add_option("--rows", a.rows, "Items per forward chunk and thread")
      ->check(kPositive)
      ->capture_default_str();
  b->add_option("--repeats", a.repeats, "Timed passes (the best is reported)")
      ->check(kPositive)
      ->capture_default_str();
  b->add_option("--peer-python", a.peer_python,
                "Also run the PyTorch peer with this Python (e.g. /opt/peers/bin/python)");
  b->add_option("--peer-script", a.peer_script)->capture_default_str();
  b->add_option("--json", a.json, "Also write the results as JSON");
  b->callback([] { run_recommend_bench(a); });
}

}  // namespace shoal::cli
