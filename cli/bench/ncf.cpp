// `shoal bench ncf`: the contextual NCF user's shape (654 users, 1,127 items, 21 context
// columns, 3,647,614 positives, NeuMF-8 [64,32,16,8]) on synthetic data, seconds per epoch and
// % of peak per thread count, and the PyTorch peer (bench/peers/ncf_torch.py) in the same run.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/drivers/kernel_bench.h"
#include "cli/bench/peer.h"
#include "cli/commands.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/core/thread_pool.h"
#include "shoal/data/ncf.h"
#include "shoal/kernels/peak.h"
#include "shoal/train/ncf_trainer.h"

namespace shoal::cli {
namespace {

void write_json_atomic(const std::string& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(2) + "\n");
}

struct BenchArgs {
  Index positives = 3647614, users = 654, items = 1127, context = 21;
  Index batch_positives = 256;
  int neg = 4;
  int epochs = 1;
  double warm_up_s = 0.5;  // before every epoch, untimed (keep_cpus_busy)
  std::vector<int> threads = {1, 2};
  uint64_t seed = 1;
  std::string json;
  // The PyTorch peer (bench/peers/ncf_torch.py), run as a subprocess on the same data.
  std::string peer_python;  // empty: no peer
  std::string peer_script = "bench/peers/ncf_torch.py";
  std::string peer_dir;  // where the data for the peer is written (default: a temp dir)
  int peer_steps = 300;
  std::vector<int> peer_threads = {1, 2};
  bool factored_first_layer = true;  // Ncf::Config::factored_first_layer
  bool fused = true;                 // Ncf::Config::fused_tower
};

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

// Keeps the first `threads` allowed CPUs busy for `seconds` (one thread pinned to each; the
// caller's own mask is restored). On a VM a vCPU that sat idle for seconds (here: during the
// other thread counts' epochs) comes back slow: the two-thread steps that followed took ≈ 300
// µs, a one-thread step's time, for their first 0.1–0.3 s, then ≈ 167 (docs/ncf.md). Training keeps
// its cores busy from one epoch to the next; so does the bench.
void keep_cpus_busy(const std::vector<int>& cpus, int threads, double seconds) {
  const auto n = static_cast<size_t>(std::min<int>(threads, static_cast<int>(cpus.size())));
  const double until = wall_seconds() + seconds;
  auto spin = [until] {
    uint64_t x = 1;
    while (wall_seconds() < until)
      for (int i = 0; i < 4096; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    volatile uint64_t sink = x;
    (void)sink;
  };
  std::vector<std::thread> others;
  for (size_t k = 1; k < n; ++k)
    others.emplace_back([&, k] {
      pin_current_thread(cpus[k]);
      spin();
    });
  {
    ScopedPin pin(cpus[0]);
    spin();
  }
  for (auto& th : others) th.join();
}

// `shoal bench ncf`: the contextual user's shape, data synthesised in memory, one trainer per
// thread count, their epochs interleaved; per epoch wall and process CPU seconds of sampling and
// of the steps.
void run_bench(const BenchArgs& b) {
  const data::NcfPositives tr =
      data::synth_ncf_positives(b.positives, b.users, b.items, b.context, b.seed);
  const models::Ncf<float>::Config mcfg{.kind = models::NcfKind::kNeuMf,
                                        .num_users = b.users,
                                        .num_items = b.items,
                                        .factors = 8,
                                        .layers = {64, 32, 16, 8},
                                        .context = b.context,
                                        .factored_first_layer = b.factored_first_layer,
                                        .fused_tower = b.fused};
  const Index batch = b.batch_positives * (1 + b.neg);
  // Two FLOP counts: the model's (what an unfactored implementation executes per instance,
  // Ncf::training_flops_per_instance: "model GFLOP/s", the work rate a user compares) and the
  // FLOPs shoal's kernels executed (Ncf::executed_flops: fewer when the first layer is factored
  // by distinct rows; "GFLOP/s" and "%peak" are these, the hardware efficiency).
  const double flops_per_instance = models::Ncf<float>(mcfg).training_flops_per_instance();
  const double peak1 = kernels::measure_peak_gflops();
  fmt::print(
      "bench ncf: NeuMF-8 [64,32,16,8] + {} context, {} positives x (1 + {}) = {} instances "
      "per epoch, batch {} ({} positives), {} users, {} items\n"
      "first tower layer {}; model training FLOPs/instance {:.0f}; single-core FP32 peak "
      "{:.1f} GFLOP/s\n",
      b.context, b.positives, b.neg, b.positives * (1 + b.neg), batch, b.batch_positives, b.users,
      b.items,
      b.factored_first_layer ? (b.fused ? "factored by distinct rows, chunks fused"
                                        : "factored by distinct rows, layer by layer")
                             : "unfactored",
      flops_per_instance, peak1);
  fmt::print(
      "{:>7} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>8} {:>8} {:>7} {:>8} {:>8} "
      "{:>8} {:>7} {:>6}\n",
      "threads", "epoch", "wall_s", "cpu_s", "sample_w", "sample_c", "compute", "update", "inst/s",
      "mGFLOP/s", "GFLOP/s", "%peak", "steps", "p10_us", "p50_us", "%pk_p50", "rt_ns");
  // Two threads move cache lines between the cores every step (the items' rows, the barrier):
  // the cores' round trip, measured before each epoch, is one of the things that set their
  // pace on a VM (docs/ncf.md).
  const std::vector<int> cpus = allowed_cpus();
  auto round_trip_ns = [&](int threads) {
    return threads > 1 && cpus.size() > 1 ? kernels::measure_core_round_trip_ns(cpus[0], cpus[1])
                                          : 0.0;
  };
  nlohmann::json runs = nlohmann::json::array();
  std::vector<double> step_times;
  step_times.reserve(static_cast<size_t>(b.positives * (1 + b.neg) / batch + 2));
  // One trainer per thread count, all built first; the epochs then run in rounds, each round
  // one epoch of every thread count. The VM's slow spells last from a fraction of a second to
  // tens of seconds: run one thread count's epochs back to back and a spell can take all of
  // them, while in rounds every thread count's epochs spread over the whole run, and each
  // round's epochs met nearly the same machine (the per-round ratios below).
  struct Side {
    int threads;
    std::unique_ptr<train::NcfTrainer> trainer;
    std::vector<double> ips;  // per round
    double best_ips = 0, best_p10 = 0, best_cpu = 0;
  };
  std::vector<Side> sides;
  for (int t : b.threads) {
    train::NcfTrainConfig cfg;
    cfg.batch_size = batch;
    cfg.negatives = b.neg;
    cfg.seed = b.seed;
    cfg.threads = t;
    cfg.pinning = Pinning::kAll;
    sides.push_back({t, std::make_unique<train::NcfTrainer>(mcfg, cfg, tr), {}});
  }
  for (int e = 1; e <= b.epochs; ++e) {
    for (Side& side : sides) {
      const int t = side.threads;
      train::NcfTrainer& trainer = *side.trainer;
      const Index n = trainer.instances_per_epoch();
      keep_cpus_busy(cpus, ThreadPool::resolve(t), b.warm_up_s);
      const double rt_ns = round_trip_ns(t);
      const double w0 = wall_seconds(), c0 = process_cpu_seconds();
      const double comp0 = trainer.compute_seconds(), upd0 = trainer.update_seconds();
      trainer.draw_epoch(e);
      const double w1 = wall_seconds(), c1 = process_cpu_seconds();
      const double flops0 = trainer.executed_flops();
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
      const double executed = trainer.executed_flops() - flops0;
      std::sort(step_times.begin(), step_times.end());
      const auto pct = [&](double q) {
        return step_times.empty() ? 0.0
                                  : step_times[static_cast<size_t>(
                                        q * static_cast<double>(step_times.size() - 1))];
      };
      const double p10 = pct(0.1), p50 = pct(0.5);
      // A full batch's executed FLOPs (the epoch's mean per instance) over the median step time.
      const double p50_gflops =
          p50 > 0 ? static_cast<double>(batch) * executed / static_cast<double>(n) / p50 * 1e-9
                  : 0.0;
      const double wall = w2 - w0, step_wall = w2 - w1;
      const double ips = static_cast<double>(n) / wall;
      const double model_gflops = static_cast<double>(n) * flops_per_instance / step_wall * 1e-9;
      const double gflops = executed / step_wall * 1e-9;
      const double peak = peak1 * t;
      side.ips.push_back(ips);
      side.best_ips = std::max(side.best_ips, ips);
      if (p10 > 0) side.best_p10 = side.best_p10 > 0 ? std::min(side.best_p10, p10) : p10;
      side.best_cpu = std::max(side.best_cpu, static_cast<double>(n) / (c2 - c0));
      fmt::print(
          "{:>7} {:>5} {:>9.2f} {:>9.2f} {:>9.3f} {:>9.3f} {:>9.2f} {:>9.2f} {:>12.0f} "
          "{:>8.1f} {:>8.1f} {:>6.1f}% {:>8} {:>8.1f} {:>8.1f} {:>6.1f}% {:>6}\n",
          t, e, wall, c2 - c0, w1 - w0, c1 - c0, trainer.compute_seconds() - comp0,
          trainer.update_seconds() - upd0, ips, model_gflops, gflops, 100.0 * gflops / peak, steps,
          p10 * 1e6, p50 * 1e6, 100.0 * p50_gflops / peak,
          rt_ns > 0 ? fmt::format("{:.0f}", rt_ns) : std::string("-"));
      std::fflush(stdout);
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
                      {"step_model_gflops", model_gflops},
                      {"step_gflops", gflops},
                      {"executed_flops_per_instance", executed / static_cast<double>(n)},
                      {"peak_gflops", peak},
                      {"peak_fraction", gflops / peak},
                      {"step_p10_s", p10},
                      {"step_p50_s", p50},
                      {"step_p50_peak_fraction", p50_gflops / peak},
                      {"core_round_trip_ns", rt_ns}});
    }
  }
  double best_all = 0, best_cpu1 = 0;  // best_cpu1: 1 thread, per CPU-second
  const Side* one = nullptr;
  for (const Side& side : sides) {
    best_all = std::max(best_all, side.best_ips);
    if (side.threads == 1) {
      one = &side;
      best_cpu1 = side.best_cpu;
    }
  }
  // The epochs' ratio moves with a VM's slow spells on either side; the fastest steps' ratio
  // (a step's instances are the same for every thread count) is what the threads gain when
  // both run at full speed; each round's ratio compares epochs a few seconds apart.
  for (const Side& side : sides) {
    if (one == nullptr || side.threads <= 1 || one->best_ips <= 0) continue;
    std::string rounds;
    for (size_t r = 0; r < side.ips.size(); ++r)
      rounds += fmt::format("{}{:.2f}", r == 0 ? "" : " ", side.ips[r] / one->ips[r]);
    fmt::print(
        "scaling {} threads vs 1: {:.2f}x (best epoch instances/s), {:.2f}x (fastest steps: "
        "best p10); per round: {}\n",
        side.threads, side.best_ips / one->best_ips,
        side.best_p10 > 0 ? one->best_p10 / side.best_p10 : 0.0, rounds);
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
      nlohmann::json r = run_peer_json(cmd);
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
                               {"first_layer_factored", b.factored_first_layer},
                               {"fused_tower", b.fused},
                               {"flops_per_instance", flops_per_instance},
                               {"peak_gflops_per_core", peak1},
                               {"runs", runs}});
}

}  // namespace

void register_bench_ncf(CLI::App& bench) {
  static BenchArgs bench_args;
  auto* bn = bench.add_subcommand(
      "ncf", "NeuMF + context training epochs on synthetic data of the contextual user's shape");
  auto& ba = bench_args;
  bn->add_option("--positives", ba.positives)->capture_default_str();
  bn->add_option("--users", ba.users)->capture_default_str();
  bn->add_option("--items", ba.items)->capture_default_str();
  bn->add_option("--context", ba.context)->capture_default_str();
  bn->add_option("--neg", ba.neg)->capture_default_str();
  bn->add_option("--batch-positives", ba.batch_positives)->capture_default_str();
  bn->add_option("--epochs", ba.epochs,
                 "Epochs per thread count, run in rounds of one epoch of every thread count")
      ->check(kPositive)
      ->capture_default_str();
  bn->add_option("--threads-list", ba.threads)->delimiter(',')->capture_default_str();
  bn->add_option("--warm-up", ba.warm_up_s,
                 "Seconds to keep an epoch's CPUs busy before timing it (a vCPU that sat idle "
                 "comes back slow)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
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
  bn->add_flag("--factored-first-layer,!--unfactored-first-layer", ba.factored_first_layer,
               "The first tower layer by distinct user/item rows (the default) or as one Linear "
               "over every instance's concatenated input")
      ->capture_default_str();
  bn->add_flag("--fused,!--layer-by-layer", ba.fused,
               "Train each chunk in one fused pass (the default) or layer by layer")
      ->capture_default_str();
  bn->callback([] { run_bench(bench_args); });
}

}  // namespace shoal::cli
