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
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "interrupt.h"
#include "options.h"
#include "profile.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/ncf_trainer.h"

namespace nb = nanobind;

namespace shoal::py {
namespace {

using I32 = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I32Mat = nb::ndarray<const int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using F32Mat = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

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

  // Trains `epochs` epochs: {"losses": each epoch's mean loss, "profile": see profile.h}.
  // Ctrl-C stops between epochs.
  nb::dict fit(int epochs, const nb::object& profile_spec) {
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
    run_interruptible([&](const std::atomic<bool>&) { m = trainer_->evaluate(t, k); });
    nb::dict out;
    out["hr"] = m.hr;
    out["ndcg"] = m.ndcg;
    out["users"] = m.users;
    return out;
  }

  // Probabilities σ(logit) of (user, item) pairs; with context, each user's mean training
  // context (as evaluate does).
  nb::ndarray<nb::numpy, float> score(I32 users, I32 items) {
    const size_t n = users.shape(0);
    SHOAL_CHECK(items.shape(0) == n, "{} users but {} items", n, items.shape(0));
    for (size_t i = 0; i < n; ++i)
      SHOAL_CHECK(users.data()[i] >= 0 && users.data()[i] < cfg_.num_users &&
                      items.data()[i] >= 0 && items.data()[i] < cfg_.num_items,
                  "pair {} (user {}, item {}) is outside the model's {} users and {} items", i,
                  users.data()[i], items.data()[i], cfg_.num_users, cfg_.num_items);
    auto* out = new std::vector<float>(n);
    nb::capsule owner(out, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    const Index c = cfg_.context, rows = std::max<Index>(tcfg_.eval_rows, 1);
    std::vector<float> ctx(size_t(rows * std::max<Index>(c, 1)), 0.0f);
    const std::vector<float>& uctx = trainer_->user_context();
    {
      nb::gil_scoped_release release;
      models::Ncf<float>& model = trainer_->model();
      const Ctx eval{.training = false, .seed = tcfg_.seed};
      for (size_t b = 0; b < n; b += size_t(rows)) {
        const size_t k = std::min(n - b, size_t(rows));
        if (c > 0)
          for (size_t i = 0; i < k; ++i)
            std::copy_n(uctx.begin() + std::ptrdiff_t(users.data()[b + i]) * c, c,
                        ctx.begin() + std::ptrdiff_t(i) * c);
        const ConstMat<float> z =
            model.forward(eval, {users.data() + b, k}, {items.data() + b, k},
                          ConstMat<float>(ctx.data(), Index(k), std::max<Index>(c, 1)));
        for (size_t i = 0; i < k; ++i) (*out)[b + i] = 1.0f / (1.0f + std::exp(-z.data[i]));
      }
    }
    return nb::ndarray<nb::numpy, float>(out->data(), {n}, owner);
  }

  nb::bytes weights() const {
    const std::string s = train::encode_checkpoint(trainer_->arena());
    return nb::bytes(s.data(), s.size());
  }
  void load_weights(const nb::bytes& b) {
    train::load_checkpoint_bytes(trainer_->arena(), {b.c_str(), b.size()}, "weights");
  }
  int threads() const { return trainer_->threads(); }

 private:
  data::NcfPositives train_;
  models::Ncf<float>::Config cfg_;
  train::NcfTrainConfig tcfg_;
  std::unique_ptr<train::NcfTrainer> trainer_;
};

}  // namespace

// NcfOptions as Python sees them: [(key, default as text, kind)].
std::vector<std::tuple<std::string, std::string, std::string>> ncf_options() {
  train::NcfOptions o;
  OptionLister l;
  o.visit(l);
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const OptionInfo& i : l.options) out.emplace_back(i.key, i.default_text, i.kind);
  return out;
}

void bind_ncf(nb::module_& m) {
  m.def("ncf_options", &ncf_options);
  nb::class_<NcfHandle>(m, "NcfTrainer")
      .def(nb::init<I32, I32, F32Mat, const std::vector<std::string>&, Index, Index,
                    const nb::dict&, uint64_t, int>(),
           nb::arg("users"), nb::arg("items"), nb::arg("context"), nb::arg("context_names"),
           nb::arg("num_users"), nb::arg("num_items"), nb::arg("settings"), nb::arg("seed"),
           nb::arg("threads"))
      .def("fit", &NcfHandle::fit, nb::arg("epochs"), nb::arg("profile").none() = nb::none())
      .def("evaluate", &NcfHandle::evaluate, nb::arg("users"), nb::arg("items"),
           nb::arg("negatives"), nb::arg("k"))
      .def("score", &NcfHandle::score, nb::arg("users"), nb::arg("items"))
      .def("weights", &NcfHandle::weights)
      .def("load_weights", &NcfHandle::load_weights, nb::arg("data"))
      .def_prop_ro("threads", &NcfHandle::threads);
}

}  // namespace shoal::py
