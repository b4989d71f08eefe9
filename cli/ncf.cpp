// `shoal ncf train|eval` and `shoal synth ncf`: NCF / NeuMF on implicit feedback.
//   --batch-size counts instances (positives and sampled negatives, as the NCF authors' code);
//   --batch-positives P sets it to P·(1 + neg) instead (the contextual user's convention).
//   Both figures are printed.

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/profile_options.h"
#include "shoal/core/arena.h"
#include "shoal/core/file_io.h"
#include "shoal/core/rng.h"
#include "shoal/data/ncf.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/ncf_saved_model.h"
#include "shoal/train/ncf_trainer.h"
#include "shoal/train/ranking.h"
#include "shoal/train/safetensors.h"

namespace shoal::cli {
namespace {

struct NcfArgs {
  std::string train, test, test_negatives, save, save_weights, load, metrics_out;
  std::vector<std::string> context_cols;
  OptionFlags options;  // train::NcfOptions
  Index batch_positives = 0;
  int threads = 0;
  uint64_t seed = 1;
  Index num_users = -1, num_items = -1;
  bool fused = true;  // Ncf::Config::fused_tower
  bool full_ranking = false;
  ProfileOptions profile;
};

bool is_csv(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
}

void write_json_atomic(const std::string& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(2) + "\n");
}

// The model and training options given on the command line, over their defaults.
train::NcfOptions options_of(const NcfArgs& a) {
  train::NcfOptions o;
  OptionReader reader(a.options.given(), "shoal ncf");
  o.visit(reader);
  o.validate();
  return o;
}

models::Ncf<float>::Config model_config(const NcfArgs& a, const train::NcfOptions& o, Index users,
                                        Index items, Index ctx) {
  models::Ncf<float>::Config c = o.model(users, items, ctx);
  c.fused_tower = a.fused;
  return c;
}

// Full-ranking metrics of the test positives (train/ranking.h): every item ranked for each test
// user, its training items excluded (seen: the training items per user row, CSR).
train::RankingMetrics full_ranking(train::NcfTrainer& t, const data::NcfTestSet& test,
                                   const std::vector<int64_t>& seen_off,
                                   const std::vector<int32_t>& seen, Index k) {
  std::vector<int64_t> off(1, 0), truth_off(1, 0);
  std::vector<int32_t> items;
  for (int32_t u : test.users) {
    const auto uu = static_cast<size_t>(u);
    const int64_t b = uu + 1 < seen_off.size() ? seen_off[uu] : 0;
    const int64_t e = uu + 1 < seen_off.size() ? seen_off[uu + 1] : 0;
    items.insert(items.end(), seen.begin() + b, seen.begin() + e);
    off.push_back(static_cast<int64_t>(items.size()));
  }
  const train::NcfTopK r =
      t.top_k({.users = test.users, .seen_offsets = off, .seen_items = items, .k = k});
  std::vector<int64_t> rec_off(1, 0);
  std::vector<int32_t> recs;
  for (size_t i = 0; i < test.users.size(); ++i) {
    const auto* row = r.items.data() + i * static_cast<size_t>(k);
    recs.insert(recs.end(), row, row + r.counts[i]);
    rec_off.push_back(static_cast<int64_t>(recs.size()));
    truth_off.push_back(static_cast<int64_t>(i + 1));
  }
  return train::ranking_metrics(rec_off, recs, truth_off, test.items, k);
}

// --num-users / --num-items before any id map or table is sized from them: rows are int32, and
// the embedding tables (params, grads, two Adam moments) must fit in memory.
void check_table_sizes(const NcfArgs& a, const train::NcfOptions& o) {
  for (const auto& [flag, n] :
       {std::pair{"--num-users", a.num_users}, {"--num-items", a.num_items}})
    if (n != -1 && (n < 1 || n > std::numeric_limits<int32_t>::max()))
      throw Error("table size out of range",
                  ErrorContext{.field = flag,
                               .expected = "an integer in [1, 2147483647] (leave it out: the "
                                           "files' ids)",
                               .actual = std::to_string(n)});
  const double rows = double(std::max<Index>(a.num_users, 0) + std::max<Index>(a.num_items, 0));
  const double width = double(o.factors) + double(o.layers.front()) / 2;
  check_fits_in_memory(
      rows * width * sizeof(float) * 4, "--num-users, --num-items, factors",
      fmt::format("{} users, {} items, factors {}", a.num_users, a.num_items, o.factors));
}

void run_train(const NcfArgs& a) {
  const train::NcfOptions o = options_of(a);
  OutputPlan outputs({a.train, a.test, a.test_negatives, a.load});
  outputs.save_folder(a.save, train::kNcfFormat, "--save")
      .file(a.save_weights, "--save-weights")
      .file(a.metrics_out, "--metrics-out");
  plan_profile_outputs(outputs, a.profile, "ncf");
  check_table_sizes(a, o);
  SHOAL_CHECK(is_csv(a.train) || a.context_cols.empty(),
              "--context-cols needs a CSV training file");
  const bool has_test = !a.test.empty();
  SHOAL_CHECK(has_test == !a.test_negatives.empty(), "--test and --test-negatives go together");
  // Ids of any kind, mapped to dense table rows over every file (data/ids.h).
  data::NcfDataset ds = data::read_ncf_dataset({.train = a.train,
                                                .test = a.test,
                                                .test_negatives = a.test_negatives,
                                                .context_cols = a.context_cols,
                                                .users = a.num_users,
                                                .items = a.num_items});
  data::NcfPositives& tr = ds.train;
  if (o.num_negatives > 0) data::check_negatives_exist(tr, ds.users);
  const data::NcfTestSet& test = ds.test;
  const Index batch =
      a.batch_positives > 0 ? a.batch_positives * (1 + o.num_negatives) : o.batch_size;
  const auto mcfg = model_config(a, o, tr.num_users, tr.num_items, tr.context_cols());
  train::NcfTrainConfig tcfg = o.train(a.seed, cap_threads(a.threads, "ncf"), Pinning::kAll);
  tcfg.batch_size = batch;
  // The tables and layers the data and options ask for, before the arena is taken.
  double layer_params = 0;
  for (size_t i = 1; i < o.layers.size(); ++i)
    layer_params += double(o.layers[i - 1] * o.layers[i]);
  check_fits_in_memory(
      (double(tr.num_users + tr.num_items) * double(o.factors + o.layers.front() / 2) +
       layer_params) *
          sizeof(float) * 4,
      "factors, layers",
      fmt::format("factors {}, layers {} for {} users and {} items", o.factors,
                  fmt::join(o.layers, ","), tr.num_users, tr.num_items));
  train::NcfTrainer trainer(mcfg, tcfg, tr);
  SHOAL_CHECK(!a.full_ranking || has_test, "--full-ranking needs --test and --test-negatives");
  std::vector<int64_t> seen_off;
  std::vector<int32_t> seen;
  if (a.full_ranking || !a.save.empty()) train::seen_items_of(tr, seen_off, seen);
  train::RankingMetrics full;
  if (!a.load.empty()) train::load_checkpoint(trainer.arena(), a.load);
  auto recorder = make_recorder(a.profile);
  if (recorder) {
    recorder->set_model_name(0, o.kind);
    trainer.set_profiler(recorder.get());
    recorder->start();
  }
  std::string ctx_note = tr.context_cols() > 0
                             ? fmt::format(", {} context columns", tr.context_cols())
                             : std::string();
  // How a batch is split between the threads (docs/ncf.md, Training).
  const int split = trainer.split_side();
  const std::string shares = trainer.threads() == 1 ? std::string()
                             : split < 0
                                 ? std::string(" (contiguous shares)")
                                 : fmt::format(" (shares cut by {})", split == 0 ? "user" : "item");
  fmt::print(stderr,
             "shoal ncf: {} on {} positives ({} users, {} items{}), {} negatives/positive → "
             "{} instances/epoch; batch {} instances (= {:.1f} positives), {} threads{}, "
             "{} embedding Adam\n",
             o.kind, tr.size(), tr.num_users, tr.num_items, ctx_note, o.num_negatives,
             trainer.instances_per_epoch(), batch,
             static_cast<double>(batch) / (1 + o.num_negatives), trainer.threads(), shares,
             o.embedding_adam);
  if (tr.dropped_negatives > 0)
    fmt::print(stderr, "shoal ncf: ignored {} rows with label 0 (negatives are sampled)\n",
               tr.dropped_negatives);
  std::vector<double> losses;
  nlohmann::json epoch_s = nlohmann::json::array(), hr_hist = nlohmann::json::array(),
                 ndcg_hist = nlohmann::json::array();
  double best_hr = -1, best_ndcg = 0, last_hr = 0, last_ndcg = 0, train_s = 0;
  int best_epoch = 0;
  for (int e = 0; e < o.epochs; ++e) {
    const auto r = trainer.train_epoch();
    train_s += r.seconds;
    losses.push_back(r.loss);
    epoch_s.push_back(r.seconds);
    std::string line = fmt::format(
        "epoch {:3d}  loss {:.4f}  {:.2f} s ({:.2f} s sampling)  {:.0f} inst/s", r.epoch, r.loss,
        r.seconds, r.sample_seconds, static_cast<double>(r.instances) / r.seconds);
    if (has_test) {
      const auto m = trainer.evaluate(test, o.top_k);
      last_hr = m.hr;
      last_ndcg = m.ndcg;
      hr_hist.push_back(m.hr);
      ndcg_hist.push_back(m.ndcg);
      if (m.hr > best_hr) {
        best_hr = m.hr;
        best_ndcg = m.ndcg;
        best_epoch = r.epoch;
      }
      line += fmt::format("  HR@{} {:.4f}  NDCG@{} {:.4f}  (eval {:.2f} s)", o.top_k, m.hr, o.top_k,
                          m.ndcg, m.seconds);
    }
    if (a.full_ranking) {
      full = full_ranking(trainer, test, seen_off, seen, o.top_k);
      line += fmt::format("  full: HR@{} {:.4f} NDCG@{} {:.4f} MAP@{} {:.4f}", o.top_k, full.hr,
                          o.top_k, full.ndcg, o.top_k, full.map);
    }
    fmt::print(stderr, "{}\n", line);
  }
  const double ips = static_cast<double>(trainer.instances_per_epoch()) * o.epochs / train_s;
  // The model's FLOPs (as an unfactored implementation does them) per second of training.
  const double gflops = trainer.model().training_flops_per_instance() * ips * 1e-9;
  fmt::print(
      "trained {} epochs, {} steps in {:.2f} s: {:.0f} instances/s (~{:.1f} model GFLOP/s)\n",
      o.epochs, trainer.steps(), train_s, ips, gflops);
  if (has_test)
    fmt::print("HR@{} {:.4f} NDCG@{} {:.4f} (last); best HR@{} {:.4f} NDCG@{} {:.4f} at epoch {}\n",
               o.top_k, last_hr, o.top_k, last_ndcg, o.top_k, best_hr, o.top_k, best_ndcg,
               best_epoch);
  if (recorder) finish_profile(*recorder, a.profile, "ncf");
  if (!a.save.empty()) {
    train::NcfSavedModel m{.options = o,
                           .seed = a.seed,
                           .context_cols = tr.context_names,
                           .users = std::move(ds.users),
                           .items = std::move(ds.items),
                           .seen_offsets = std::move(seen_off),
                           .seen_items = std::move(seen),
                           .user_context = trainer.user_context(),
                           .weights = train::encode_checkpoint(trainer.arena()),
                           .losses = losses};
    train::save_ncf_model(a.save, m, "--save");
    fmt::print(stderr, "shoal ncf: saved the model to {}\n", a.save);
  }
  if (!a.save_weights.empty())
    train::save_checkpoint(trainer.arena(), a.save_weights,
                           {{"model", o.kind},
                            {"factors", std::to_string(o.factors)},
                            {"num_users", std::to_string(mcfg.num_users)},
                            {"num_items", std::to_string(mcfg.num_items)},
                            {"context", std::to_string(mcfg.context)}});
  if (!a.metrics_out.empty()) {
    const std::string k = std::to_string(o.top_k);
    nlohmann::json j = {{"model", o.kind},
                        {"epochs", o.epochs},
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
    if (a.full_ranking) {
      j["full_hr@" + k] = full.hr;
      j["full_ndcg@" + k] = full.ndcg;
      j["full_precision@" + k] = full.precision;
      j["full_recall@" + k] = full.recall;
      j["full_map@" + k] = full.map;
    }
    write_json_atomic(a.metrics_out, j);
  }
}

// Scores a saved model (e.g. converted pretrained weights) on the test files.
void run_eval(const NcfArgs& a) {
  const train::NcfOptions o = options_of(a);
  SHOAL_CHECK(!a.load.empty() && !a.test.empty() && !a.test_negatives.empty(),
              "ncf eval needs --weights, --test and --test-negatives");
  OutputPlan({a.load, a.test, a.test_negatives}).file(a.metrics_out, "--metrics-out");
  const train::SafetensorsFile f = train::read_safetensors(a.load);
  const data::NcfTestSet test = data::read_ncf_test(a.test, a.test_negatives);
  // Table sizes come from the weights.
  const bool gmf = o.kind != "mlp";
  const auto* ut = f.find(gmf ? "embed_user_gmf.weight" : "embed_user_mlp.weight");
  const auto* it = f.find(gmf ? "embed_item_gmf.weight" : "embed_item_mlp.weight");
  SHOAL_CHECK(ut != nullptr && it != nullptr, "{}: no user/item embedding tensors for model {}",
              a.load, o.kind);
  auto cfg = model_config(a, o, ut->shape[0], it->shape[0], 0);
  train::NcfEvaluator ev(cfg, cap_threads(a.threads, "ncf"), 1024, Pinning::kAll);
  train::load_checkpoint(ev.arena(), a.load);
  const auto m = ev.evaluate(test, o.top_k);
  fmt::print("HR@{} {:.4f} NDCG@{} {:.4f} over {} users ({:.2f} s)\n", o.top_k, m.hr, o.top_k,
             m.ndcg, m.users, m.seconds);
  if (!a.metrics_out.empty()) {
    const std::string k = std::to_string(o.top_k);
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
  OutputPlan({}).file(s.out, "--out");
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

// The command's own flags, then every NcfOptions option as a flag (cli/model_options.h); `skip`
// leaves out the options the subcommand does not use.
void add_model_options(CLI::App* cmd, NcfArgs& a, const std::vector<std::string>& skip) {
  train::NcfOptions defaults;
  OptionLister list;
  defaults.visit(list);
  a.options.add(*cmd, {{"ncf", list.options}},
                {{"model", "kind"}, {"neg", "num_negatives"}, {"lr", "learning_rate"}}, skip);
  cmd->add_option("--threads", a.threads, "Threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--test", a.test, "*.test.rating file");
  cmd->add_option("--test-negatives", a.test_negatives, "*.test.negative file");
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
  add_model_options(train, a, {});
  train->add_option("--context-cols", a.context_cols, "CSV context columns (default: all others)")
      ->delimiter(',');
  train->add_option("--batch-positives", a.batch_positives,
                    "Positives per step (overrides --batch-size: batch = P·(1 + neg))");
  train->add_option("--seed", a.seed)->check(kUint64)->capture_default_str();
  train->add_option("--save", a.save,
                    "Write the whole model into this directory (settings, id maps, weights, the "
                    "users' training items and context; docs/ncf.md): `shoal ncf recommend "
                    "--model DIR` and Python's NCF.load read it");
  train->add_option("--save-weights", a.save_weights, "Write the weights only (safetensors)");
  train->add_option("--init-weights", a.load, "Start from these weights (safetensors)");
  train->add_option("--num-users", a.num_users,
                    "Also know the users 0..N-1 (ids absent from the files; default: only the "
                    "files' ids)");
  train->add_option("--num-items", a.num_items,
                    "Also know the items 0..N-1 (e.g. a catalog with items nobody chose yet)");
  train->add_flag("--full-ranking", a.full_ranking,
                  "Also rank every item for each test user (training items excluded) every "
                  "epoch: full-ranking HR, NDCG, MAP@K (docs/ncf.md)");
  train
      ->add_flag("--fused,!--layer-by-layer", a.fused,
                 "Train each chunk in one fused pass where the model has a kernel (the "
                 "default), or layer by layer (the profiler then shows every layer's zones)")
      ->capture_default_str();
  add_profile_options(*train, a.profile);
  train->callback([] { run_train(a); });

  auto* eval = ncf->add_subcommand("eval", "Score saved weights on leave-one-out test files");
  eval->add_option("--weights", a.load, "safetensors weights")->required();
  add_model_options(eval, a,
                    {"epochs", "batch_size", "num_negatives", "learning_rate", "embedding_adam"});
  eval->callback([] { run_eval(a); });
  register_ncf_use(*ncf);

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
  sn->add_option("--seed", s.seed)->check(kUint64)->capture_default_str();
  sn->add_option("--out", s.out, "CSV path")->required();
  sn->callback([] { run_synth(s); });
}

}  // namespace shoal::cli
