// NCF bindings: a thin handle over train::NcfTrainer. The positives are copied once from numpy
// into the trainer's NcfPositives (the sampler reads them every epoch, so they must be owned).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "interrupt.h"
#include "options.h"
#include "profile.h"
#include "shoal/data/interaction_split.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/ncf_saved_model.h"
#include "shoal/train/ncf_trainer.h"
#include "shoal/train/ranking.h"

namespace nb = nanobind;

namespace shoal::py {
namespace {

using I32 = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I32Mat = nb::ndarray<const int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using F32Mat = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using I64 = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using F64 = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v, std::initializer_list<size_t> shape) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), shape, owner);
}

class NcfHandle {
 public:
  NcfHandle(I32 users, I32 items, F32Mat context, const std::vector<std::string>& context_names,
            Index num_users, Index num_items, const nb::dict& settings, uint64_t seed,
            int threads) {
    // The model and training options (train::NcfOptions' keys), over their defaults.
    train::NcfOptions o;
    OptionReader reader(to_json_object(settings), "NCF");
    o.visit(reader);
    reader.check_all_used();
    o.validate();
    const size_t p = users.shape(0);
    SHOAL_CHECK(items.shape(0) == p, "{} users but {} items", p, items.shape(0));
    SHOAL_CHECK(context.shape(1) == context_names.size() &&
                    (context_names.empty() || context.shape(0) == p),
                "context is [{}, {}] for {} rows and {} names", context.shape(0), context.shape(1),
                p, context_names.size());
    train_.users.assign(users.data(), users.data() + p);
    train_.items.assign(items.data(), items.data() + p);
    if (!context_names.empty())
      train_.context.assign(context.data(), context.data() + p * context_names.size());
    train_.context_names = context_names;
    train_.num_users = num_users;
    train_.num_items = num_items;
    train_.source = "train_df";
    cfg_ = o.model(num_users, num_items, Index(context_names.size()));
    tcfg_ = o.train(seed, threads, Pinning::kWorkers);
    trainer_ = std::make_unique<train::NcfTrainer>(cfg_, tcfg_, train_);
  }

  // A model for inference only (a saved one being loaded): no training data, weights to load.
  static NcfHandle* for_inference(const nb::dict& settings, Index num_users, Index num_items,
                                  Index context, int threads) {
    train::NcfOptions o;
    OptionReader reader(to_json_object(settings), "NCF");
    o.visit(reader);
    reader.check_all_used();
    o.validate();
    auto* h = new NcfHandle();
    h->cfg_ = o.model(num_users, num_items, context);
    h->tcfg_ = o.train(1, threads, Pinning::kWorkers);
    h->evaluator_ = std::make_unique<train::NcfEvaluator>(h->cfg_, h->tcfg_.threads,
                                                          std::max<Index>(h->tcfg_.eval_rows, 1));
    return h;
  }

  // Trains `epochs` epochs: {"losses": each epoch's mean loss, "profile": see profile.h}.
  // Ctrl-C stops between epochs.
  nb::dict fit(int epochs, const nb::object& profile_spec) {
    SHOAL_CHECK(trainer_ != nullptr, "a loaded NCF model is for inference: fit a new one");
    std::optional<FitProfile> prof = FitProfile::from(profile_spec);
    std::vector<double> losses;
    if (prof) trainer_->set_profiler(prof->rec.get());
    run_interruptible([&](const std::atomic<bool>& stop) {
      if (prof) prof->rec->start();
      for (int e = 0; e < epochs && !stop.load(); ++e)
        losses.push_back(trainer_->train_epoch().loss);
      if (prof) prof->finish();
    });
    if (prof) trainer_->set_profiler(nullptr);
    nb::dict out;
    out["losses"] = losses;
    out["profile"] = profile_result(prof);
    return out;
  }

  nb::dict evaluate(I32 users, I32 items, I32Mat negatives, Index k) {
    data::NcfTestSet t;
    const size_t n = users.shape(0);
    SHOAL_CHECK(items.shape(0) == n && negatives.shape(0) == n,
                "test users {}, items {} and negative rows {} differ", n, items.shape(0),
                negatives.shape(0));
    t.users.assign(users.data(), users.data() + n);
    t.items.assign(items.data(), items.data() + n);
    t.negatives.assign(negatives.data(), negatives.data() + negatives.size());
    t.negatives_per_user = Index(negatives.shape(1));
    for (size_t i = 0; i < n; ++i) {
      t.num_users = std::max<Index>(t.num_users, t.users[i] + 1);
      t.num_items = std::max<Index>(t.num_items, t.items[i] + 1);
    }
    for (int32_t v : t.negatives) t.num_items = std::max<Index>(t.num_items, v + 1);
    SHOAL_CHECK(t.num_users <= cfg_.num_users && t.num_items <= cfg_.num_items,
                "test ids reach user {} / item {}, the model has {} users and {} items",
                t.num_users - 1, t.num_items - 1, cfg_.num_users, cfg_.num_items);
    train::NcfMetrics m;
    run_interruptible([&](const std::atomic<bool>&) {
      m = trainer_
              ? trainer_->evaluate(t, k)
              : evaluator_->evaluate(t, k, user_context_.empty() ? nullptr : user_context_.data());
    });
    nb::dict out;
    out["hr"] = m.hr;
    out["ndcg"] = m.ndcg;
    out["users"] = m.users;
    return out;
  }

  // Probabilities σ(logit) of (user, item) pairs; a contextual model takes context [n, C] (one
  // row per pair; Python passes each user's context row by default).
  nb::ndarray<nb::numpy, float> score(I32 users, I32 items, F32Mat context) {
    const size_t n = users.shape(0);
    const Index c = cfg_.context;
    SHOAL_CHECK(items.shape(0) == n, "{} users but {} items", n, items.shape(0));
    SHOAL_CHECK(c == 0 || (context.shape(0) == n && Index(context.shape(1)) == c),
                "context is [{}, {}], the pairs need [{}, {}]", context.shape(0), context.shape(1),
                n, c);
    for (size_t i = 0; i < n; ++i)
      SHOAL_CHECK(users.data()[i] >= 0 && users.data()[i] < cfg_.num_users &&
                      items.data()[i] >= 0 && items.data()[i] < cfg_.num_items,
                  "pair {} (user {}, item {}) is outside the model's {} users and {} items", i,
                  users.data()[i], items.data()[i], cfg_.num_users, cfg_.num_items);
    std::vector<float> out(n);
    const Index rows = std::max<Index>(tcfg_.eval_rows, 1);
    {
      nb::gil_scoped_release release;
      models::Ncf<float>& model = trainer_ ? trainer_->model() : evaluator_->model();
      const Ctx eval{.training = false, .seed = tcfg_.seed};
      for (size_t b = 0; b < n; b += size_t(rows)) {
        const size_t k = std::min(n - b, size_t(rows));
        const ConstMat<float> ctx(c > 0 ? context.data() + b * size_t(c) : nullptr, Index(k), c);
        const ConstMat<float> z =
            model.forward(eval, {users.data() + b, k}, {items.data() + b, k}, ctx);
        for (size_t i = 0; i < k; ++i) out[b + i] = 1.0f / (1.0f + std::exp(-z.data[i]));
      }
    }
    return to_numpy(std::move(out), {n});
  }

  // The K best items per request row on every core (train/ncf_recommend.h): (items [n, k] with
  // -1 past a row's count, probabilities [n, k], counts [n]). context: [n, C] per request row,
  // or [0, 0]: the model's user context rows.
  nb::tuple top_k(I32 users, Index k, I32 candidates, I64 seen_offsets, I32 seen_items,
                  F32Mat context) {
    const size_t n = users.shape(0);
    const Index c = cfg_.context;
    const bool given = context.shape(0) > 0;
    SHOAL_CHECK(!given || (context.shape(0) == n && Index(context.shape(1)) == c),
                "context is [{}, {}], the request needs [{}, {}]", context.shape(0),
                context.shape(1), n, c);
    SHOAL_CHECK(c == 0 || given || !user_context().empty(),
                "the model takes {} context columns: pass them", c);
    train::NcfTopKRequest req{.users = {users.data(), n},
                              .candidates = {candidates.data(), candidates.shape(0)},
                              .seen_offsets = {seen_offsets.data(), seen_offsets.shape(0)},
                              .seen_items = {seen_items.data(), seen_items.shape(0)},
                              .context = given && c > 0 ? context.data() : nullptr,
                              .k = k};
    std::vector<float> stored;
    if (c > 0 && !given && !trainer_) {
      // The evaluator has no training context: expand the loaded per-user rows per request.
      stored.resize(n * size_t(c));
      for (size_t r = 0; r < n; ++r) {
        SHOAL_CHECK(users.data()[r] >= 0 && users.data()[r] < cfg_.num_users,
                    "request row {}: user row {} is outside 0..{}", r, users.data()[r],
                    cfg_.num_users - 1);
        std::copy_n(user_context_.begin() + std::ptrdiff_t(users.data()[r]) * c, c,
                    stored.begin() + std::ptrdiff_t(r) * c);
      }
      req.context = stored.data();
    }
    train::NcfTopK r;
    run_interruptible([&](const std::atomic<bool>&) {
      r = trainer_ ? trainer_->top_k(req) : evaluator_->top_k(req);
    });
    for (float& z : r.logits) z = 1.0f / (1.0f + std::exp(-z));
    std::vector<int64_t> counts(r.counts.begin(), r.counts.end());
    const size_t kk = size_t(r.k);
    return nb::make_tuple(to_numpy(std::move(r.items), {n, kk}),
                          to_numpy(std::move(r.logits), {n, kk}), to_numpy(std::move(counts), {n}));
  }

  // Each user's context row [U, C] the model scores with by default: the trainer's mean training
  // context, or the rows a loaded model was saved with.
  const std::vector<float>& user_context() const {
    return trainer_ ? trainer_->user_context() : user_context_;
  }
  nb::ndarray<nb::numpy, float> user_context_array() const {
    std::vector<float> v = user_context();
    const size_t c = size_t(cfg_.context);
    return to_numpy(std::move(v), {c > 0 ? size_t(cfg_.num_users) : 0, c});
  }
  void set_user_context(F32Mat ctx) {
    SHOAL_CHECK(trainer_ == nullptr, "a trained model keeps its mean training context");
    SHOAL_CHECK(Index(ctx.shape(0)) == cfg_.num_users && Index(ctx.shape(1)) == cfg_.context,
                "user context is [{}, {}], the model needs [{}, {}]", ctx.shape(0), ctx.shape(1),
                cfg_.num_users, cfg_.context);
    user_context_.assign(ctx.data(), ctx.data() + ctx.size());
  }

  const Arena& arena() const { return trainer_ ? trainer_->arena() : evaluator_->arena(); }
  nb::bytes weights() const {
    const std::string s = train::encode_checkpoint(arena());
    return nb::bytes(s.data(), s.size());
  }
  void load_weights(const nb::bytes& b) {
    train::load_checkpoint_bytes(arena(), {b.c_str(), b.size()}, "weights");
  }
  int threads() const { return trainer_ ? trainer_->threads() : tcfg_.threads; }

 private:
  NcfHandle() = default;
  std::unique_ptr<train::NcfEvaluator> evaluator_;  // loaded for inference (no trainer)
  std::vector<float> user_context_;                 // the evaluator's [U, C]
  data::NcfPositives train_;
  models::Ncf<float>::Config cfg_;
  train::NcfTrainConfig tcfg_;
  std::unique_ptr<train::NcfTrainer> trainer_;
};

}  // namespace

// NcfOptions as Python sees them: [(key, default as text, kind)].
// Full-ranking metrics over CSR lists (train/ranking.h).
nb::dict ranking_metrics(I64 rec_offsets, I32 rec_items, I64 truth_offsets, I32 truth_items,
                         Index k) {
  const train::RankingMetrics m = train::ranking_metrics(
      {rec_offsets.data(), rec_offsets.shape(0)}, {rec_items.data(), rec_items.shape(0)},
      {truth_offsets.data(), truth_offsets.shape(0)}, {truth_items.data(), truth_items.shape(0)},
      k);
  nb::dict out;
  out["hr"] = m.hr;
  out["ndcg"] = m.ndcg;
  out["precision"] = m.precision;
  out["recall"] = m.recall;
  out["map"] = m.map;
  out["users"] = m.users;
  return out;
}

// Rows held out by a per-user split (data/interaction_split.h): uint8 [n], 1 = test.
nb::ndarray<nb::numpy, uint8_t> split_interactions(I32 users, I32 items, F64 times,
                                                   const std::string& how, double ratio,
                                                   uint64_t seed, bool random_ties) {
  const data::SplitSpec spec{
      .kind = data::split_kind(how), .ratio = ratio, .seed = seed, .random_ties = random_ties};
  std::vector<uint8_t> test =
      data::split_interactions({users.data(), users.shape(0)}, {items.data(), items.shape(0)},
                               {times.data(), times.shape(0)}, spec);
  const size_t n = test.size();
  return to_numpy(std::move(test), {n});
}

std::vector<std::tuple<std::string, std::string, std::string>> ncf_options() {
  train::NcfOptions o;
  OptionLister l;
  o.visit(l);
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const OptionInfo& i : l.options) out.emplace_back(i.key, i.default_text, i.kind);
  return out;
}

// An id map from Python's list of ids (all ints or all strings: shoal.recsys.IdMap's to_list).
data::IdMap id_map(const nb::list& ids) {
  bool integers = true;
  for (nb::handle v : ids) integers = integers && nb::isinstance<nb::int_>(v);
  if (integers) {
    std::vector<int64_t> out;
    for (nb::handle v : ids) out.push_back(nb::cast<int64_t>(v));
    return data::IdMap::of_integers(std::move(out));
  }
  std::vector<std::string> out;
  for (nb::handle v : ids) out.push_back(nb::cast<std::string>(nb::str(v)));
  return data::IdMap::of_strings(std::move(out));
}

nb::list id_list(const data::IdMap& m) {
  nb::list out;
  if (m.integers())
    for (int64_t v : m.integer_ids()) out.append(v);
  else
    for (const std::string& v : m.string_ids()) out.append(v);
  return out;
}

void bind_ncf(nb::module_& m) {
  m.def("ncf_options", &ncf_options);
  m.def("split_interactions", &split_interactions, nb::arg("users"), nb::arg("items"),
        nb::arg("times"), nb::arg("how"), nb::arg("ratio"), nb::arg("seed"),
        nb::arg("random_ties"));
  m.def("ranking_metrics", &ranking_metrics, nb::arg("rec_offsets"), nb::arg("rec_items"),
        nb::arg("truth_offsets"), nb::arg("truth_items"), nb::arg("k"));
  m.def(
      "save_ncf_model",
      [](const std::string& path, const NcfHandle& trainer, const nb::dict& options, uint64_t seed,
         int threads, const std::string& user_col, const std::string& item_col,
         const std::vector<std::string>& context_cols, const std::string& on_unknown,
         const nb::list& users, const nb::list& items, I64 seen_offsets, I32 seen_items,
         const std::vector<double>& losses, const std::string& what) {
        train::NcfSavedModel s;
        OptionReader reader(to_json_object(options), "NCF");
        s.options.visit(reader);
        reader.check_all_used();
        s.seed = seed;
        s.threads = threads;
        s.user_col = user_col;
        s.item_col = item_col;
        s.context_cols = context_cols;
        s.on_unknown = on_unknown;
        s.users = id_map(users);
        s.items = id_map(items);
        s.seen_offsets.assign(seen_offsets.data(), seen_offsets.data() + seen_offsets.shape(0));
        s.seen_items.assign(seen_items.data(), seen_items.data() + seen_items.shape(0));
        s.user_context = trainer.user_context();
        s.weights = train::encode_checkpoint(trainer.arena());
        s.losses = losses;
        nb::gil_scoped_release release;
        train::save_ncf_model(path, s, what);
      },
      nb::arg("path"), nb::arg("trainer"), nb::arg("options"), nb::arg("seed"), nb::arg("threads"),
      nb::arg("user_col"), nb::arg("item_col"), nb::arg("context_cols"), nb::arg("on_unknown"),
      nb::arg("users"), nb::arg("items"), nb::arg("seen_offsets"), nb::arg("seen_items"),
      nb::arg("losses"), nb::arg("what"),
      "Saves a fitted NCF into the folder `path` (train/ncf_saved_model.h, the CLI's layout).");
  m.def(
      "load_ncf_model",
      [](const std::string& path) {
        train::NcfSavedModel s;
        {
          nb::gil_scoped_release release;
          s = train::load_ncf_model(path);
        }
        nb::dict out;
        out["settings"] = nb::module_::import_("json").attr("loads")(train::ncf_settings(s).dump());
        out["losses"] = s.losses;
        out["users"] = id_list(s.users);
        out["items"] = id_list(s.items);
        const size_t u = size_t(s.num_users()), c = s.context_cols.size();
        out["seen_offsets"] = to_numpy(std::move(s.seen_offsets), {u + 1});
        const size_t n = s.seen_items.size();
        out["seen_items"] = to_numpy(std::move(s.seen_items), {n});
        out["user_context"] = to_numpy(std::move(s.user_context), {c > 0 ? u : 0, c});
        out["weights"] = nb::bytes(s.weights.data(), s.weights.size());
        return out;
      },
      nb::arg("path"),
      "The NCF saved at `path`, every file checked: {settings, losses, users, items, "
      "seen_offsets, seen_items, user_context, weights}.");
  nb::class_<NcfHandle>(m, "NcfTrainer")
      .def(nb::init<I32, I32, F32Mat, const std::vector<std::string>&, Index, Index,
                    const nb::dict&, uint64_t, int>(),
           nb::arg("users"), nb::arg("items"), nb::arg("context"), nb::arg("context_names"),
           nb::arg("num_users"), nb::arg("num_items"), nb::arg("settings"), nb::arg("seed"),
           nb::arg("threads"))
      .def("fit", &NcfHandle::fit, nb::arg("epochs"), nb::arg("profile").none() = nb::none())
      .def("evaluate", &NcfHandle::evaluate, nb::arg("users"), nb::arg("items"),
           nb::arg("negatives"), nb::arg("k"))
      .def_static("for_inference", &NcfHandle::for_inference, nb::arg("settings"),
                  nb::arg("num_users"), nb::arg("num_items"), nb::arg("context"),
                  nb::arg("threads"), nb::rv_policy::take_ownership)
      .def("score", &NcfHandle::score, nb::arg("users"), nb::arg("items"), nb::arg("context"))
      .def("top_k", &NcfHandle::top_k, nb::arg("users"), nb::arg("k"), nb::arg("candidates"),
           nb::arg("seen_offsets"), nb::arg("seen_items"), nb::arg("context"))
      .def("user_context", &NcfHandle::user_context_array)
      .def("set_user_context", &NcfHandle::set_user_context, nb::arg("context"))
      .def("weights", &NcfHandle::weights)
      .def("load_weights", &NcfHandle::load_weights, nb::arg("data"))
      .def_prop_ro("threads", &NcfHandle::threads);
}

}  // namespace shoal::py
