#include "shoal/models/ncf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ncf_fused.h"
#include "ncf_rows.h"
#include "shoal/core/copy_row.h"
#include "shoal/core/prefetch.h"
#include "shoal/kernels/gemm.h"
#include "shoal/layers/losses.h"
#include "shoal/profile/cost.h"
#include "shoal/train/bce_fused.h"

namespace shoal::models {

namespace {
// The factored first layer's dz sums (and the rows' table gradients) are padded with zero rows
// to a multiple of this, and their input-gradient GEMM runs in blocks of kShareGemmRows: its
// JIT kernels then take three shapes (32, 64, 96 rows) whatever the share's distinct count (a
// count-shaped kernel would be compiled, and allocated, for every new count).
constexpr Index kShareRowBlock = 32;
inline Index round_up_rows(Index m) {
  return (m + kShareRowBlock - 1) / kShareRowBlock * kShareRowBlock;
}
constexpr Index kShareGemmRows = 3 * kShareRowBlock;
}  // namespace

const char* ncf_kind_name(NcfKind k) {
  switch (k) {
    case NcfKind::kGmf:
      return "gmf";
    case NcfKind::kMlp:
      return "mlp";
    case NcfKind::kNeuMf:
      return "neumf";
  }
  return "?";
}

NcfKind parse_ncf_kind(const std::string& s) {
  if (s == "gmf") return NcfKind::kGmf;
  if (s == "mlp") return NcfKind::kMlp;
  if (s == "neumf") return NcfKind::kNeuMf;
  throw Error("unknown NCF model",
              ErrorContext{.field = "model", .expected = "gmf, mlp or neumf", .actual = s});
}

template <class T>
Ncf<T>::Ncf(Config cfg)
    : cfg_(std::move(cfg)), predict_(typename layers::Linear<T>::Config{.in = 1, .out = 1}) {
  SHOAL_CHECK(cfg_.num_users > 0 && cfg_.num_items > 0,
              "NCF needs num_users > 0 and num_items > 0, got {} and {}", cfg_.num_users,
              cfg_.num_items);
  SHOAL_CHECK(cfg_.context >= 0, "NCF context columns must be >= 0, got {}", cfg_.context);
  if (has_gmf()) SHOAL_CHECK(cfg_.factors > 0, "NCF factors must be > 0, got {}", cfg_.factors);
  if (has_mlp()) {
    SHOAL_CHECK(cfg_.layers.size() >= 2,
                "NCF MLP needs at least 2 layer sizes (embedding concat width, then hidden "
                "widths), got {}",
                cfg_.layers.size());
    SHOAL_CHECK(cfg_.layers[0] > 0 && cfg_.layers[0] % 2 == 0,
                "NCF layers[0] must be even and > 0 (user and item embeddings of layers[0]/2), "
                "got {}",
                cfg_.layers[0]);
    for (Index w : cfg_.layers) SHOAL_CHECK(w > 0, "NCF layer sizes must be > 0, got {}", w);
  } else {
    SHOAL_CHECK(cfg_.context == 0, "context features feed the MLP tower; GMF has none");
  }
  tables_.reserve(4);  // layers are bound by address: no reallocation after this
  using Emb = typename layers::Embedding<T>::Config;
  auto add = [&](const char* name, bool user, Index width, int& slot) {
    slot = static_cast<int>(tables_.size());
    tables_.push_back(
        Table{name, user,
              layers::Embedding<T>(Emb{.num_embeddings = user ? cfg_.num_users : cfg_.num_items,
                                       .embedding_dim = width,
                                       .init_std = cfg_.embedding_std})});
  };
  if (has_gmf()) {
    add("embed_user_gmf", true, cfg_.factors, gmf_user_);
    add("embed_item_gmf", false, cfg_.factors, gmf_item_);
  }
  if (has_mlp()) {
    const Index e = cfg_.layers[0] / 2;
    add("embed_user_mlp", true, e, mlp_user_);
    add("embed_item_mlp", false, e, mlp_item_);
    Index width = mlp_in();
    for (size_t k = 1; k < cfg_.layers.size(); ++k) {
      tower_.emplace_back(typename layers::Linear<T>::Config{
          .in = width, .out = cfg_.layers[k], .act = kernels::Act::kRelu});
      width = cfg_.layers[k];
    }
    acts_.resize(tower_.size() - 1);
    dacts_.resize(tower_.size() - 1);
  }
  predict_ = layers::Linear<T>(typename layers::Linear<T>::Config{.in = predict_in(), .out = 1});
}

template <class T>
Index Ncf<T>::predict_in() const {
  return (has_gmf() ? cfg_.factors : 0) + (has_mlp() ? cfg_.layers.back() : 0);
}

template <class T>
double Ncf<T>::forward_macs() const {
  double macs = static_cast<double>(predict_in());
  if (has_gmf()) macs += static_cast<double>(cfg_.factors);
  for (const auto& l : tower_) macs += static_cast<double>(l.cfg.in * l.cfg.out);
  return macs;
}

template <class T>
double Ncf<T>::training_flops_per_instance() const {
  return 3.0 * instance_flops(/*backward=*/false, /*factored=*/false);
}

// One instance's executed forward or backward FLOPs (dW, and dX except for the first layer's
// context columns: they are data, their dX is never formed); factored leaves out the first
// layer's embedding columns (counted per distinct row in open_share / finish_share).
template <class T>
double Ncf<T>::instance_flops(bool backward, bool factored) const {
  const double f = has_gmf() ? static_cast<double>(cfg_.factors) : 0.0;
  double linear = forward_macs() - f;
  if (factored) linear -= static_cast<double>(cfg_.layers[0] * tower_[0].cfg.out);
  if (!backward) return 2.0 * linear + f;
  const double context_dx =
      has_mlp() ? 2.0 * static_cast<double>(cfg_.context * tower_[0].cfg.out) : 0.0;
  return 2.0 * (2.0 * linear + f) - context_dx;
}

template <class T>
void Ncf<T>::plan(Planner& planner, Index max_rows, Index max_share_rows, int owned_side) {
  // Dense params first (tower, predict), then the tables: the arena orders them anyway.
  for (size_t k = 0; k < tower_.size(); ++k) {
    planner.push_scope("mlp." + std::to_string(k) + ".");
    tower_[k].plan(planner, max_rows);
    if (k + 1 < tower_.size()) {
      planner.buffer(acts_[k], Region::kActivations, "out", {max_rows, tower_[k].cfg.out});
      planner.buffer(dacts_[k], Region::kActivationGrads, "dout", {max_rows, tower_[k].cfg.out});
    }
    planner.pop_scope();
  }
  planner.push_scope("predict.");
  predict_.plan(planner, max_rows);
  planner.pop_scope();
  for (auto& t : tables_) {
    planner.push_scope(t.name + ".");
    t.layer.plan(planner, max_rows);
    planner.pop_scope();
  }
  table_grads_.resize(tables_.size());
  table_touched_.resize(tables_.size());
  touched_list_.resize(tables_.size());
  touched_count_.assign(tables_.size(), 0);
  for (size_t t = 0; t < tables_.size(); ++t) {
    const auto& c = tables_[t].layer.cfg;
    planner.buffer(table_grads_[t], Region::kScratch, tables_[t].name + ".row_grads",
                   {c.num_embeddings, c.embedding_dim});
    planner.buffer(table_touched_[t], Region::kScratch, tables_[t].name + ".touched",
                   {c.num_embeddings});
    planner.buffer(touched_list_[t], Region::kScratch, tables_[t].name + ".touched_list",
                   {c.num_embeddings});
  }
  planner.buffer(dlogits_, Region::kActivationGrads, "dlogits", {max_rows, 1});
  if (has_mlp()) {
    // Whole tiles: the fused kernel reads the context's padding rows.
    planner.buffer(x0_, Region::kActivations, "mlp.in",
                   {detail::fused_padded_rows(max_rows), mlp_in()});
    planner.buffer(dx0_, Region::kActivationGrads, "mlp.din", {max_rows, mlp_in()});
  }
  planner.buffer(h_, Region::kActivations, "predict.in", {max_rows, predict_in()});
  planner.buffer(dh_, Region::kActivationGrads, "predict.din", {max_rows, predict_in()});
  planner.buffer(out_, Region::kActivations, "logits", {max_rows, 1});
  planner.buffer(predict_dw_, Region::kScratch, "predict.dw_sum", {predict_in()});
  if (factored()) {
    const Index share = std::max(max_rows, max_share_rows);
    const Index e = cfg_.layers[0] / 2, l1 = cfg_.layers[1], f = cfg_.factors;
    for (int s = 0; s < 2; ++s) {
      ShareRows& rs = share_rows_[s];
      const Index table_rows = s == 0 ? cfg_.num_users : cfg_.num_items;
      const Index cap = std::min(share, table_rows);
      const Index padded = round_up_rows(cap);
      const std::string name = s == 0 ? "mlp.0.user_rows." : "mlp.0.item_rows.";
      planner.buffer(rs.slot, Region::kScratch, name + "slot", {table_rows});
      planner.buffer(rs.stamp, Region::kScratch, name + "stamp", {table_rows});
      planner.buffer(rs.list, Region::kScratch, name + "list", {cap + 1});
      planner.buffer(rs.proj, Region::kScratch, name + "proj", {cap, l1});
      planner.buffer(rs.dz, Region::kScratch, name + "dz", {padded, l1});
      planner.buffer(rs.row_grads, Region::kScratch, name + "row_grads", {padded, e});
      if (has_gmf()) planner.buffer(rs.gmf_grads, Region::kScratch, name + "gmf_grads", {cap, f});
    }
  }
  if (factored())
    planner.buffer(rows_wt_, Region::kScratch, "mlp.0.rows_wt",
                   {cfg_.layers[0] / 2, cfg_.layers[1]});
  SHOAL_CHECK(owned_side >= -1 && owned_side <= 1, "Ncf::plan: owned side {}", owned_side);
  owned_side_ = factored() ? owned_side : -1;
  if (owned_side_ >= 0) {
    const Index v = owned_side_ == 0 ? cfg_.num_users : cfg_.num_items, padded = round_up_rows(v);
    const Index e = cfg_.layers[0] / 2, l1 = cfg_.layers[1];
    const std::string name = owned_side_ == 0 ? "mlp.0.owned_users." : "mlp.0.owned_items.";
    planner.buffer(owned_proj_, Region::kScratch, name + "proj", {v, l1});
    planner.buffer(owned_pslot_, Region::kScratch, name + "proj_slot", {v});
    planner.buffer(owned_.stamp, Region::kScratch, name + "stamp", {v});
    planner.buffer(owned_.list, Region::kScratch, name + "list", {v + 1});
    // The owner's GEMM runs over whole blocks of rows from its first row: up to a block past V.
    planner.buffer(owned_.dz, Region::kScratch, name + "dz_sums", {v + kShareRowBlock, l1});
    planner.buffer(owned_.row_grads, Region::kScratch, name + "row_grads", {padded, e});
    if (has_gmf())
      planner.buffer(owned_.gmf_grads, Region::kScratch, name + "gmf_sums", {v, cfg_.factors});
  }
  if (fused_widths()) {
    const Index c = std::max<Index>(cfg_.context, 1);
    const Index l1 = cfg_.layers[1], l2 = cfg_.layers[2], l3 = cfg_.layers[3];
    planner.buffer(wc_t_, Region::kScratch, "fused.wc_t", {c, l1});
    planner.buffer(w2_t_, Region::kScratch, "fused.w2_t", {l1, l2});
    planner.buffer(w3_t_, Region::kScratch, "fused.w3_t", {l2, l3});
    planner.buffer(dwc_t_, Region::kScratch, "fused.dwc_t", {c, l1});
    const Index rows = detail::fused_padded_rows(max_rows);
    planner.buffer(fused_h1_, Region::kActivations, "fused.h1", {rows, l1});
    planner.buffer(fused_h2_, Region::kActivations, "fused.h2", {rows, l2});
    planner.buffer(fused_d1_, Region::kActivationGrads, "fused.d1", {rows, l1});
    planner.buffer(fused_d2_, Region::kActivationGrads, "fused.d2", {rows, l2});
    planner.buffer(fused_d3_, Region::kActivationGrads, "fused.d3", {rows, l3});
  }
}

// NeuMF, three tower layers with biases, first layer factored, float, and a kernel for the
// widths: train_chunk can run fused (models/ncf_fused.h).
template <class T>
bool Ncf<T>::fused_widths() const {
  if (!std::is_same_v<T, float> || !cfg_.fused_tower || !factored() || !has_gmf() ||
      tower_.size() != 3)
    return false;
  for (const auto& l : tower_)
    if (!l.cfg.bias) return false;
  return detail::fused_supported(cfg_.layers[1], cfg_.layers[2], cfg_.layers[3], cfg_.factors);
}

template <class T>
void Ncf<T>::init(RngStream& rng) {
  for (auto& t : tables_) t.layer.init(rng);
  for (auto& l : tower_) l.init(rng);
  predict_.init(rng);
}

namespace {

// Table rows are random and, with several threads, often last written by another core (the
// sparse update of its slice of rows): prefetch the rows of the instance kAhead positions on.
constexpr Index kRowsAhead = 8;

// The next generation of a stamp array [rows] (a row is marked when its stamp equals it); the
// stamps are cleared when the generations wrap.
template <class Id>
Id next_generation(Id* stamp, Index rows, Id& generation) {
  if (generation == std::numeric_limits<Id>::max() || generation == 0) {
    std::fill_n(stamp, rows, Id(0));
    generation = 0;
  }
  return ++generation;
}

// The factored first layer's products over a share's distinct rows, read in place from the
// table (ncf_rows.h): the vector kernels for float where the widths allow, else the plain loops.
// Rows in random order of a large table are prefetched a tile ahead.
template <class T>
void project_distinct(ConstMat<T> table, const int32_t* list, Index m, Index e, const T* wt,
                      Index l1, T* proj, bool prefetch) {
  if constexpr (std::is_same_v<T, float>) {
    if (detail::rows_kernels_supported(e, l1))
      return detail::project_rows(table.data, table.ld, list, m, e, wt, l1, proj, prefetch);
  }
  detail::project_rows_ref<T>(table.data, table.ld, list, m, e, wt, l1, proj);
}

template <class T>
void weight_grad_distinct(ConstMat<T> table, const int32_t* list, Index m, Index e, const T* dz,
                          Index l1, MatView<T> dw, bool prefetch) {
  if constexpr (std::is_same_v<T, float>) {
    if (detail::rows_kernels_supported(e, l1))
      return detail::rows_weight_grad(table.data, table.ld, list, m, e, dz, l1, dw.data, dw.ld,
                                      prefetch);
  }
  detail::rows_weight_grad_ref<T>(table.data, table.ld, list, m, e, dz, l1, dw.data, dw.ld);
}

}  // namespace

template <class T>
typename Ncf<T>::TableGrad Ncf<T>::table_grad(size_t t) {
  return {table_grads_[t].mat(), table_touched_[t].view.data};
}

template <class T>
void Ncf<T>::clear_table_grads() {
  for (size_t t = 0; t < tables_.size(); ++t) {
    const MatView<T> g = table_grads_[t].mat();
    uint8_t* flags = table_touched_[t].view.data;
    const Id* list = touched_list_[t].view.data;
    for (Index k = 0; k < touched_count_[t]; ++k) {
      std::fill_n(g.row(list[k]), g.cols, T(0));
      flags[list[k]] = 0;
    }
    touched_count_[t] = 0;
  }
}

template <class T>
void Ncf<T>::begin_share(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items) {
  if (!factored()) return;
  open_share(ctx, users, items, rows_by_owner());
  share_ = Share::kExplicit;
}

template <class T>
void Ncf<T>::end_share(const Ctx& ctx) {
  if (!factored()) return;
  SHOAL_CHECK(share_ == Share::kExplicit, "Ncf::end_share without begin_share");
  finish_share(ctx);
}

// Lists the distinct users and items (zone mlp.0.rows.index), gathers their MLP rows and
// projects them through their columns of the first layer's weight (mlp.0.rows.forward, costed
// by the distinct rows); clears their dz and GMF gradient sums. By owner, the owned side's ids
// are only stamped (their owners list and project them: project_owned_rows), and the share
// sums at the owners' rows.
template <class T>
void Ncf<T>::open_share(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                        bool by_owner) {
  profile::Recorder* prof = zones_.share.registered() ? ctx.profiler : nullptr;
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out;
  const int owned = by_owner ? owned_side_ : -1;
  {
    profile::Zone zone(prof, zones_.share_index, users.size());
    share_rows_[0].handed = share_rows_[1].handed = 0;
    for (int s = 0; s < 2; ++s) {
      const std::span<const Id> ids = s == 0 ? users : items;
      if (s != owned) {
        list_distinct(share_rows_[s], ids);
        continue;
      }
      // The owners list and project the batch's rows of this side; this share's are only
      // marked (backward_owned_rows reads its sums of the rows it marked; clear_owned_sums
      // clears them).
      stamp_ids(share_rows_[s], ids);
      if (!owned_.sums_clear) {  // a step that failed before clear_owned_sums
        std::fill_n(owned_.dz.view.data, owned_.dz.view.numel(), T(0));
        std::fill_n(owned_.gmf_grads.view.data, owned_.gmf_grads.view.numel(), T(0));
      }
      owned_.sums_clear = false;
    }
  }
  explicit_by_owner_ = by_owner;
  profile::Zone zone(prof, zones_.share.forward, share_rows_[0].count + share_rows_[1].count);
  const ConstMat<T> w = tower_[0].p.weight.value.mat();
  T* wt = rows_wt_.view.data;
  for (int s = 0; s < 2; ++s) {
    if (s == owned) continue;
    ShareRows& rs = share_rows_[s];
    const Index m = rs.count;
    const ConstMat<T> table = mlp_table(s).layer.p.weight.value.mat();
    // W_partᵀ [E, L1]: the kernels load vectors of outputs.
    for (Index j = 0; j < l1; ++j)
      for (Index p = 0; p < e; ++p) wt[p * l1 + j] = w(j, s * e + p);
    project_distinct<T>(table, rs.list.view.data, m, e, wt, l1, rs.proj.view.data, !rs.ascending);
    executed_flops_ += 2.0 * static_cast<double>(m * e * l1);
    // The dz sums start at zero: finish_share clears the rows it used (the padding rows up to
    // whole blocks are never written). Only after a share that added into them and did not
    // finish is the whole buffer cleared here.
    if (!rs.dz_clear) std::fill_n(rs.dz.view.data, rs.dz.view.numel(), T(0));
    rs.dz_clear = true;
    if (has_gmf()) std::fill_n(rs.gmf_grads.view.data, m * cfg_.factors, T(0));
  }
  for (int s = 0; s < 2; ++s) {
    ShareRows& rs = share_rows_[s];
    proj_[s] = s == owned ? holder_->owned_proj_.view.data : rs.proj.view.data;
    slot_[s] = s == owned ? holder_->owned_pslot_.view.data : rs.slot.view.data;
    dz_[s] = s == owned ? owned_.dz.view.data : rs.dz.view.data;
    gmf_[s] = s == owned ? owned_.gmf_grads.view.data : rs.gmf_grads.view.data;
  }
  if (fused_widths()) {
    // The fused kernel reads the weights it broadcasts against transposed (see ncf_fused.h).
    const Index c = cfg_.context;
    auto transpose = [](ConstMat<T> src, Index col0, Index cols, T* dst) {  // dst [cols, rows]
      for (Index r = 0; r < src.rows; ++r)
        for (Index k = 0; k < cols; ++k) dst[k * src.rows + r] = src(r, col0 + k);
    };
    transpose(w, 2 * e, c, wc_t_.view.data);
    transpose(tower_[1].p.weight.value.mat(), 0, tower_[1].cfg.in, w2_t_.view.data);
    transpose(tower_[2].p.weight.value.mat(), 0, tower_[2].cfg.in, w3_t_.view.data);
    std::fill_n(dwc_t_.view.data, dwc_t_.view.numel(), T(0));
  }
}

template <class T>
typename Ncf<T>::RowGrads Ncf<T>::share_row_grads(int s) const {
  const ShareRows& rs = share_rows_[s];
  return {std::span<const Id>(rs.list.view.data, static_cast<size_t>(rs.handed)),
          ConstMat<T>(rs.row_grads.view.data, rs.handed, cfg_.layers[0] / 2),
          has_gmf() ? ConstMat<T>(rs.gmf_grads.view.data, rs.handed, cfg_.factors) : ConstMat<T>{}};
}

template <class T>
bool Ncf<T>::hands_over_table(size_t t) const {
  if (!factored()) return false;
  const auto ti = static_cast<int>(t);
  if (ti == mlp_user_ || ti == gmf_user_) return hand_over_[0];
  if (ti == mlp_item_ || ti == gmf_item_) return hand_over_[1];
  return false;
}

// rs.list[0, count) = the distinct ids, rs.slot[id] = an id's index there. In ascending order
// when the share's ids could walk the table densely (dense_rows: the ids are marked, then the
// table's rows swept): the rows' gathers and updates then walk the tables forward, where the
// hardware prefetchers follow them. Otherwise in first-seen order (a sweep of a large table
// would cost more than the share).
template <class T>
void Ncf<T>::list_distinct(ShareRows& rs, std::span<const Id> ids) {
  const Index cap = rs.list.view.numel() - 1;
  const Index table_rows = rs.slot.view.numel();
  SHOAL_CHECK(static_cast<Index>(ids.size()) <= cap || cap == table_rows,
              "NCF share of {} rows, planned for {}", ids.size(), cap);
  Id* slot = rs.slot.view.data;
  Id* stamp = rs.stamp.view.data;
  Id* list = rs.list.view.data;
  const Id gen = next_generation(stamp, table_rows, rs.generation);
  Index m = 0;
  if (dense_rows(static_cast<Index>(ids.size()), table_rows)) {
    for (const Id id : ids) {
      SHOAL_DCHECK(id >= 0 && id < table_rows);
      stamp[id] = gen;
    }
    // Branch-free: list[m] is overwritten until a listed row keeps it (list has a spare slot).
    for (Index r = 0; r < table_rows; ++r) {
      list[m] = static_cast<Id>(r);
      slot[r] = static_cast<Id>(m);
      m += stamp[r] == gen ? 1 : 0;
    }
    rs.count = m;
    rs.ascending = true;
    return;
  }
  for (const Id id : ids) {
    SHOAL_DCHECK(id >= 0 && id < table_rows);
    // Branch-free (about half the ids are new, at random). Whether an id was seen is read
    // from its stamp, not from the list, so the only chain from one id to the next is m's
    // add and the loads of consecutive ids overlap. The slot is selected by a mask: written
    // as `seen ? slot : m`, gcc branched on seen, mispredicting on every other id.
    const Id seen = static_cast<Id>(stamp[id] == gen);
    stamp[id] = gen;
    const Id keep = -seen;
    slot[id] = (slot[id] & keep) | (static_cast<Id>(m) & ~keep);
    list[m] = id;
    m += 1 - seen;
  }
  rs.count = m;
  rs.ascending = false;
}

// rs.stamp[id] = a new generation for the ids (no list: count 0).
template <class T>
void Ncf<T>::stamp_ids(ShareRows& rs, std::span<const Id> ids) {
  Id* stamp = rs.stamp.view.data;
  const Id gen = next_generation(stamp, rs.stamp.view.numel(), rs.generation);
  for (const Id id : ids) {
    SHOAL_DCHECK(id >= 0 && id < rs.stamp.view.numel());
    stamp[id] = gen;
  }
  rs.count = 0;
}

// y = relu(c·W_cᵀ + b + proj_u[u] + proj_i[i]) for the call's rows.
template <class T>
void Ncf<T>::first_layer_forward(std::span<const Id> users, std::span<const Id> items,
                                 ConstMat<T> context, MatView<T> y) {
  const Index e = cfg_.layers[0] / 2, c = cfg_.context, l1 = tower_[0].cfg.out;
  const Index n = y.rows;
  const auto& lin = tower_[0];
  const ConstMat<T> w = lin.p.weight.value.mat();
  const T* b = lin.cfg.bias ? lin.p.bias.value.data : nullptr;
  if (c > 0) {
    kernels::linear_forward<T>(context, ConstMat<T>(w.data + 2 * e, l1, c, w.ld), b,
                               kernels::Act::kNone, y, MatView<T>{});
  } else {
    for (Index r = 0; r < n; ++r) std::fill_n(y.row(r), l1, T(0));
    if (b)
      for (Index r = 0; r < n; ++r)
        for (Index j = 0; j < l1; ++j) y(r, j) += b[j];
  }
  const Id* slot_u = slot_[0];
  const Id* slot_i = slot_[1];
  const T* proj_u = proj_[0];
  const T* proj_i = proj_[1];
  for (Index r = 0; r < n; ++r) {
    const T* __restrict pu =
        proj_u + static_cast<Index>(slot_u[users[static_cast<size_t>(r)]]) * l1;
    const T* __restrict qi =
        proj_i + static_cast<Index>(slot_i[items[static_cast<size_t>(r)]]) * l1;
    T* __restrict yr = y.row(r);
    for (Index j = 0; j < l1; ++j) {
      const T v = yr[j] + pu[j] + qi[j];
      yr[j] = v > T(0) ? v : T(0);
    }
  }
}

// dz = dy where y > 0 (in place in dy), then the context columns' dW and the bias grad.
template <class T>
void Ncf<T>::first_layer_backward(ConstMat<T> context, ConstMat<T> y, MatView<T> dy) {
  const Index e = cfg_.layers[0] / 2, c = cfg_.context, l1 = tower_[0].cfg.out;
  const Index n = dy.rows;
  for (Index r = 0; r < n; ++r) {
    const T* __restrict yr = y.row(r);
    T* __restrict d = dy.row(r);
    for (Index j = 0; j < l1; ++j) d[j] = yr[j] > T(0) ? d[j] : T(0);
  }
  auto& lin = tower_[0];
  T* db = lin.cfg.bias ? lin.p.bias.grad.data : nullptr;
  if (c > 0) {
    const ConstMat<T> w = lin.p.weight.value.mat();
    kernels::linear_backward<T>(context, ConstMat<T>(w.data + 2 * e, l1, c, w.ld), ConstMat<T>{},
                                kernels::Act::kNone, ConstMat<T>(dy), lin.dz.mat().rows_block(0, n),
                                MatView<T>{}, lin.p.weight.grad.mat().cols_block(2 * e, c), db,
                                /*accumulate=*/true);
  } else if (db) {
    for (Index r = 0; r < n; ++r)
      for (Index j = 0; j < l1; ++j) db[j] += dy(r, j);
  }
}

// dZ[row] += dz_n for the call's rows, in row order.
template <class T>
void Ncf<T>::first_layer_aggregate(std::span<const Id> users, std::span<const Id> items,
                                   ConstMat<T> dz) {
  const Index l1 = tower_[0].cfg.out;
  const Id* slot_u = slot_[0];
  const Id* slot_i = slot_[1];
  T* dz_u = dz_[0];
  T* dz_i = dz_[1];
  mark_dz_used();
  for (Index r = 0; r < dz.rows; ++r) {
    const T* __restrict d = dz.row(r);
    T* __restrict au = dz_u + static_cast<Index>(slot_u[users[static_cast<size_t>(r)]]) * l1;
    for (Index j = 0; j < l1; ++j) au[j] += d[j];
    T* __restrict ai = dz_i + static_cast<Index>(slot_i[items[static_cast<size_t>(r)]]) * l1;
    for (Index j = 0; j < l1; ++j) ai[j] += d[j];
  }
}

// Table t's grad rows list[k] += grads[k] (compact [m, D]), the rows flagged.
template <class T>
void Ncf<T>::add_row_grads(size_t t, const Id* list, Index m, const T* grads) {
  const MatView<T> tg = table_grads_[t].mat();
  const Index d = tg.cols;
  for (Index k = 0; k < m; ++k) {
    T* __restrict dst = tg.row(list[k]);
    const T* __restrict src = grads + k * d;
    for (Index j = 0; j < d; ++j) dst[j] += src[j];
    mark_touched(t, list[k]);
  }
}

// The distinct rows' part of the backward: dW_part += dZᵀ·rows and the rows' table gradients
// dZ·W_part in one Linear backward, then the share is closed. The rows' MLP and GMF gradients
// are handed over (set_hand_over) or added into the tables' row grads, the rows flagged.
template <class T>
void Ncf<T>::finish_share(const Ctx& ctx) {
  profile::Recorder* prof = zones_.share.registered() ? ctx.profiler : nullptr;
  profile::Zone zone(prof, zones_.share.backward, share_rows_[0].count + share_rows_[1].count);
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out;
  auto& lin = tower_[0];
  const ConstMat<T> w = lin.p.weight.value.mat();
  const MatView<T> dw = lin.p.weight.grad.mat();
  for (int s = 0; s < 2; ++s) {
    ShareRows& rs = share_rows_[s];
    const Index m = rs.count;
    rs.count = 0;
    if (m == 0) continue;
    const Index col = s * e, padded = round_up_rows(m);
    const T* dz = rs.dz.view.data;
    T* rg = rs.row_grads.view.data;
    // The rows' table gradients dZ·W_part over the padded rows, in blocks of a few shapes (see
    // round_up_rows), then dW_part += dZᵀ·X with X read in place.
    for (Index r0 = 0; r0 < padded; r0 += kShareGemmRows) {
      const Index rb = std::min(kShareGemmRows, padded - r0);
      kernels::gemm<T>(kernels::GemmBackend::kXsmm, kernels::Trans::kNo, kernels::Trans::kNo, rb, e,
                       l1, T(1), dz + r0 * l1, l1, w.data + col, w.ld, T(0), rg + r0 * e, e);
    }
    weight_grad_distinct<T>(mlp_table(s).layer.p.weight.value.mat(), rs.list.view.data, m, e, dz,
                            l1, dw.cols_block(col, e), !rs.ascending);
    // Cleared for the next share while the lines are near (see open_share).
    std::fill_n(rs.dz.view.data, m * l1, T(0));
    rs.dz_clear = true;
    executed_flops_ += 4.0 * static_cast<double>(m * e * l1);
    if (hand_over_[s]) {
      rs.handed = m;
      continue;
    }
    add_row_grads(static_cast<size_t>(s == 0 ? mlp_user_ : mlp_item_), rs.list.view.data, m, rg);
    if (has_gmf())
      add_row_grads(static_cast<size_t>(s == 0 ? gmf_user_ : gmf_item_), rs.list.view.data, m,
                    rs.gmf_grads.view.data);
  }
  if (fused_widths()) {
    // The context columns' dW, accumulated transposed by the fused chunks (zero when the
    // share's chunks ran forward and backward instead).
    const Index c = cfg_.context;
    const T* src = dwc_t_.view.data;
    for (Index k = 0; k < c; ++k)
      for (Index j = 0; j < l1; ++j) dw(j, 2 * e + k) += src[k * l1 + j];
  }
  share_ = Share::kNone;
}

template <class T>
void Ncf<T>::share_owned_rows(Ncf* holder) {
  SHOAL_CHECK(holder == nullptr || (owned_side_ >= 0 && holder->owned_side_ == owned_side_ &&
                                    holder->owned_proj_.view.numel() == owned_proj_.view.numel()),
              "Ncf::share_owned_rows needs both models planned with the same owned side");
  holder_ = holder;
}

// The owned rows the batch has (ascending: a sweep of the owner's blocks of the table),
// projected into the holder's table from first_row on; each one's row there noted. The batch's
// ids are stamped here rather than read from the shares' lists: then no replica waits for the
// others' lists.
template <class T>
void Ncf<T>::project_owned_rows(const Ctx& ctx, std::span<const Id> batch_ids,
                                std::span<const Id> owned, Index first_row) {
  SHOAL_CHECK(rows_by_owner(), "Ncf::project_owned_rows without share_owned_rows");
  profile::Recorder* prof = zones_.share.registered() ? ctx.profiler : nullptr;
  const int o = owned_side_;
  Id* list = owned_.list.view.data;
  Index m = 0;
  {
    profile::Zone zone(prof, zones_.owned_index, batch_ids.size());
    Id* stamp = owned_.stamp.view.data;
    const Id gen = next_generation(stamp, owned_.stamp.view.numel(), owned_.generation);
    for (const Id id : batch_ids) {
      SHOAL_DCHECK(id >= 0 && id < owned_.stamp.view.numel());
      stamp[id] = gen;
    }
    Id* pslot = holder_->owned_pslot_.view.data;
    // Branch-free; an item the batch lacks gets a row it never reads.
    for (const Id id : owned) {
      list[m] = id;
      pslot[id] = static_cast<Id>(first_row + m);
      m += stamp[id] == gen ? 1 : 0;
    }
    owned_.count = m;
    owned_.first_row = first_row;
  }
  profile::Zone zone(prof, zones_.owned_rows.forward, m);
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out;
  const ConstMat<T> w = tower_[0].p.weight.value.mat();
  T* wt = rows_wt_.view.data;
  for (Index j = 0; j < l1; ++j)
    for (Index p = 0; p < e; ++p) wt[p * l1 + j] = w(j, o * e + p);
  project_distinct<T>(mlp_table(o).layer.p.weight.value.mat(), list, m, e, wt, l1,
                      holder_->owned_proj_.view.data + first_row * l1, /*prefetch=*/false);
  executed_flops_ += 2.0 * static_cast<double>(m * e * l1);
}

// The other sharers' dz and GMF sums of the owned rows added into this replica's, in replica
// order (a sharer whose share did not have the row is skipped; the rows are the same in every
// replica: the holder's), then, as finish_share does for a share's rows: dW_o += dZᵀ·rows into
// this model's grads and the rows' table gradients dZ·W_o.
template <class T>
typename Ncf<T>::RowGrads Ncf<T>::backward_owned_rows(const Ctx& ctx,
                                                      std::span<Ncf* const> sharers) {
  SHOAL_CHECK(rows_by_owner(), "Ncf::backward_owned_rows without share_owned_rows");
  const int o = owned_side_;
  const Index m = owned_.count, first = owned_.first_row;
  profile::Recorder* prof = zones_.share.registered() ? ctx.profiler : nullptr;
  profile::Zone zone(prof, zones_.owned_rows.backward, m);
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out, f = has_gmf() ? cfg_.factors : 0;
  const Id* list = owned_.list.view.data;
  T* dz = owned_.dz.view.data + first * l1;
  T* gmf = owned_.gmf_grads.view.data + first * f;
  owned_.sums_clear = false;  // also when this replica had no share: its rows get the others'
  for (const Ncf* r : sharers) {
    if (r == this) continue;
    const Id* stamp = r->share_rows_[o].stamp.view.data;
    const Id gen = r->share_rows_[o].generation;
    const T* src = r->owned_.dz.view.data + first * l1;
    const T* src_gmf = r->owned_.gmf_grads.view.data + first * f;
    for (Index k = 0; k < m; ++k) {
      if (stamp[list[k]] != gen) continue;
      T* __restrict d = dz + k * l1;
      const T* __restrict g = src + k * l1;
      for (Index j = 0; j < l1; ++j) d[j] += g[j];
      T* __restrict dg = gmf + k * f;
      const T* __restrict gg = src_gmf + k * f;
      for (Index j = 0; j < f; ++j) dg[j] += gg[j];
    }
  }
  auto& lin = tower_[0];
  const ConstMat<T> w = lin.p.weight.value.mat();
  T* rg = owned_.row_grads.view.data;
  const Index padded = round_up_rows(m);
  // Rows past m up to a whole block are another owner's or zero: their row gradients are never
  // read.
  for (Index r0 = 0; r0 < padded; r0 += kShareGemmRows) {
    const Index rb = std::min(kShareGemmRows, padded - r0);
    kernels::gemm<T>(kernels::GemmBackend::kXsmm, kernels::Trans::kNo, kernels::Trans::kNo, rb, e,
                     l1, T(1), dz + r0 * l1, l1, w.data + o * e, w.ld, T(0), rg + r0 * e, e);
  }
  weight_grad_distinct<T>(mlp_table(o).layer.p.weight.value.mat(), list, m, e, dz, l1,
                          lin.p.weight.grad.mat().cols_block(o * e, e), /*prefetch=*/false);
  executed_flops_ += 4.0 * static_cast<double>(m * e * l1);
  return {std::span<const Id>(list, static_cast<size_t>(m)), ConstMat<T>(rg, m, e),
          has_gmf() ? ConstMat<T>(gmf, m, f) : ConstMat<T>{}};
}

// Every owner's block of rows this step, contiguous: the rows its share had lie anywhere in
// them, and a sweep of the share's stamps with a store per row cost ≈ 2× these clears
// (ncf-speed-log.md, Session 19).
template <class T>
void Ncf<T>::clear_owned_sums(std::span<Ncf* const> owners) {
  if (!rows_by_owner() || owned_.sums_clear) return;
  const Index l1 = tower_[0].cfg.out, f = has_gmf() ? cfg_.factors : 0;
  for (const Ncf* o : owners) {
    const Index first = o->owned_.first_row, m = o->owned_.count;
    std::fill_n(owned_.dz.view.data + first * l1, m * l1, T(0));
    std::fill_n(owned_.gmf_grads.view.data + first * f, m * f, T(0));
  }
  owned_.sums_clear = true;
}

namespace {
// BCE-with-logits over a column of logits: Σ loss (double, in order), dz = scale·(σ(z) − y);
// float by the trainer's fused pass (train/bce_fused.h), double by the reference loss (its
// mean times n, and dloss = scale·n).
template <class T>
double bce_column(const T* z, const T* y, T* dz, Index n, T scale) {
  if constexpr (std::is_same_v<T, float>) {
    return train::bce_logits_fused(z, y, dz, n, scale);
  } else {
    const layers::BceWithLogitsLoss<T> bce;
    const ConstMat<T> zm(z, n, 1), ym(y, n, 1);
    const double sum = bce.forward(zm, ym) * static_cast<double>(n);
    bce.backward(zm, ym, MatView<T>(dz, n, 1), {}, static_cast<double>(scale * T(n)));
    return sum;
  }
}
}  // namespace

template <class T>
double Ncf<T>::train_chunk(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                           ConstMat<T> context, const T* labels, T scale) {
  const auto n = static_cast<Index>(users.size());
  profile::Recorder* prof = zones_.embed.registered() ? ctx.profiler : nullptr;
  if (fused_widths()) {
    const bool own_share = share_ != Share::kExplicit;
    if (own_share) {
      open_share(ctx, users, items, false);
      share_ = Share::kImplicit;
    }
    double loss = 0;
    {
      profile::Zone zone(prof, zones_.fused, n);
      loss = run_fused(users, items, context, labels, scale);
    }
    if (own_share) finish_share(ctx);
    return loss;
  }
  const MatView<T> logits = forward(ctx, users, items, context);
  T* dl = dlogits_.view.data;
  double loss = 0;
  {
    profile::Zone zone(prof, zones_.loss, n);
    loss = bce_column<T>(logits.data, labels, dl, n, scale);
  }
  backward(ctx, users, items, ConstMat<T>(dl, n, 1));
  return loss;
}

// The fused chunk (ncf_fused.h) on this model's share and buffers.
template <class T>
double Ncf<T>::run_fused(std::span<const Id> users, std::span<const Id> items, ConstMat<T> context,
                         const T* labels, T scale) {
  if constexpr (!std::is_same_v<T, float>) {
    SHOAL_CHECK(false, "the fused NCF chunk is float only");
    return 0;
  } else {
    const auto n = static_cast<Index>(users.size());
    const Index c = cfg_.context, f = cfg_.factors;
    const MatView<T> slot = context_slot(n);
    if (c > 0) {
      SHOAL_DCHECK(context.rows == n && context.cols == c);
      if (context.data != slot.data)
        for (Index r = 0; r < n; ++r) copy_row(context.row(r), c, slot.row(r));
      // The last tile's padding rows (planned: x0_ has whole tiles).
      std::fill(slot.data + n * c, slot.data + detail::fused_padded_rows(n) * c, T(0));
    }
    const auto tu = static_cast<size_t>(gmf_user_), ti = static_cast<size_t>(gmf_item_);
    detail::NcfFusedChunk a;
    a.n = n;
    a.c = c;
    a.ctx = x0_.view.data;
    a.ld_ctx = c;
    a.users = users.data();
    a.items = items.data();
    a.proj_u = proj_[0];
    a.slot_u = slot_[0];
    a.proj_i = proj_[1];
    a.slot_i = slot_[1];
    a.wc_t = wc_t_.view.data;
    a.b1 = tower_[0].p.bias.value.data;
    a.w2 = tower_[1].p.weight.value.data;
    a.w2_t = w2_t_.view.data;
    a.b2 = tower_[1].p.bias.value.data;
    a.w3 = tower_[2].p.weight.value.data;
    a.w3_t = w3_t_.view.data;
    a.b3 = tower_[2].p.bias.value.data;
    a.pg = tables_[tu].layer.p.weight.value.data;
    a.qg = tables_[ti].layer.p.weight.value.data;
    a.wp = predict_.p.weight.value.data;
    a.bp = predict_.p.bias.value.data[0];
    a.labels = labels;
    a.scale = scale;
    a.dwc_t = dwc_t_.view.data;
    a.db1 = tower_[0].p.bias.grad.data;
    a.dw2 = tower_[1].p.weight.grad.data;
    a.db2 = tower_[1].p.bias.grad.data;
    a.dw3 = tower_[2].p.weight.grad.data;
    a.db3 = tower_[2].p.bias.grad.data;
    a.dwp = predict_.p.weight.grad.data;
    a.dbp = predict_.p.bias.grad.data;
    a.gpg = gmf_[0];
    a.gqg = gmf_[1];
    a.dz_u = dz_[0];
    a.dz_i = dz_[1];
    mark_dz_used();
    a.logits = out_.view.data;
    a.h1 = fused_h1_.view.data;
    a.h2 = fused_h2_.view.data;
    a.d1 = fused_d1_.view.data;
    a.d2 = fused_d2_.view.data;
    a.d3 = fused_d3_.view.data;
    const double loss = detail::fused_chunk(cfg_.layers[1], cfg_.layers[2], cfg_.layers[3], f, a);
    executed_flops_ +=
        static_cast<double>(n) * (instance_flops(false, true) + instance_flops(true, true));
    return loss;
  }
}

template <class T>
MatView<T> Ncf<T>::context_slot(Index n) {
  if (!has_mlp() || cfg_.context == 0) return {};
  // Factored, the tower input holds only the context: compact rows in x0's memory.
  if (factored()) return MatView<T>(x0_.view.data, n, cfg_.context);
  return x0_.mat().rows_block(0, n).cols_block(cfg_.layers[0], cfg_.context);
}

template <class T>
MatView<T> Ncf<T>::forward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                           ConstMat<T> context) {
  const auto n = static_cast<Index>(users.size());
  SHOAL_DCHECK(static_cast<Index>(items.size()) == n);
  const MatView<T> h = h_.mat().rows_block(0, n);
  const Index f = has_gmf() ? cfg_.factors : 0;
  executed_flops_ += static_cast<double>(n) * instance_flops(/*backward=*/false, factored());
  profile::Recorder* prof = zones_.embed.registered() ? ctx.profiler : nullptr;
  const MatView<T> x0 = has_mlp() ? x0_.mat().rows_block(0, n) : MatView<T>{};
  if (has_mlp()) {
    // The two MLP rows gathered straight into the tower input; the context too unless the
    // caller already gathered it there (context_slot).
    profile::Zone zone(prof, zones_.embed.forward, n);
    const Index e = cfg_.layers[0] / 2, c = cfg_.context;
    const ConstMat<T> pu = tables_[static_cast<size_t>(mlp_user_)].layer.p.weight.value.mat();
    const ConstMat<T> qi = tables_[static_cast<size_t>(mlp_item_)].layer.p.weight.value.mat();
    const MatView<T> slot = context_slot(n);
    const bool copy_context = c > 0 && context.data != slot.data;
    SHOAL_DCHECK(c == 0 || (context.rows == n && context.cols == c));
    if (factored()) {
      // Only the context goes into the tower input: the embedding columns are projected per
      // distinct row (see the header).
      if (copy_context)
        for (Index r = 0; r < n; ++r) copy_row(context.row(r), c, slot.row(r));
    } else {
      for (Index r = 0; r < n; ++r) {
        if (r + kRowsAhead < n) {
          prefetch_span(pu.row(users[static_cast<size_t>(r + kRowsAhead)]), e);
          prefetch_span(qi.row(items[static_cast<size_t>(r + kRowsAhead)]), e);
        }
        const Id u = users[static_cast<size_t>(r)], i = items[static_cast<size_t>(r)];
        SHOAL_DCHECK(u >= 0 && u < cfg_.num_users && i >= 0 && i < cfg_.num_items);
        T* x = x0.row(r);
        copy_row(pu.row(u), e, x);
        copy_row(qi.row(i), e, x + e);
        if (copy_context) copy_row(context.row(r), c, x + 2 * e);
      }
    }
  }
  if (has_gmf()) {
    // The GMF product read straight from the tables (backward reads them again: the weights
    // do not change in between), written into the predict layer's input.
    profile::Zone zone(prof, zones_.gmf.forward, n);
    const ConstMat<T> pu = tables_[static_cast<size_t>(gmf_user_)].layer.p.weight.value.mat();
    const ConstMat<T> qi = tables_[static_cast<size_t>(gmf_item_)].layer.p.weight.value.mat();
    for (Index r = 0; r < n; ++r) {
      if (r + kRowsAhead < n) {
        prefetch_span(pu.row(users[static_cast<size_t>(r + kRowsAhead)]), f);
        prefetch_span(qi.row(items[static_cast<size_t>(r + kRowsAhead)]), f);
      }
      const T* __restrict a = pu.row(users[static_cast<size_t>(r)]);
      const T* __restrict b = qi.row(items[static_cast<size_t>(r)]);
      T* __restrict y = h.row(r);
      for (Index j = 0; j < f; ++j) y[j] = a[j] * b[j];
    }
  }
  if (factored() && share_ != Share::kExplicit) {
    // This call is its own share (evaluation, tests); the backward that follows closes it.
    open_share(ctx, users, items, false);
    share_ = Share::kImplicit;
  }
  if (has_mlp()) {
    ConstMat<T> x = x0;
    for (size_t k = 0; k < tower_.size(); ++k) {
      profile::Zone zone(prof, prof ? zones_.tower[k].forward : profile::kStepZone, n);
      const MatView<T> y = k + 1 < tower_.size() ? acts_[k].mat().rows_block(0, n)
                                                 : h.cols_block(f, cfg_.layers.back());
      if (k == 0 && factored())
        first_layer_forward(users, items, context_slot(n), y);
      else
        tower_[k].forward(ctx, x, y);
      x = y;
    }
  }
  const MatView<T> out = out_.mat().rows_block(0, n);
  {
    // One output: a dot product per row (independent rows keep the FMA units busy); the
    // general GEMM path would pack and dispatch for a 1-wide result.
    profile::Zone zone(prof, zones_.predict.forward, n);
    const Index in = predict_in();
    const T* __restrict w = predict_.p.weight.value.data;
    const T b = predict_.p.bias.value.data[0];
    for (Index r = 0; r < n; ++r) {
      const T* __restrict x = h.row(r);
      T z = b;
      for (Index j = 0; j < in; ++j) z += x[j] * w[j];
      out.data[r * out.ld] = z;
    }
  }
  return out;
}

template <class T>
void Ncf<T>::backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                      ConstMat<T> dlogits) {
  const auto n = static_cast<Index>(users.size());
  const MatView<T> h = h_.mat().rows_block(0, n), dh = dh_.mat().rows_block(0, n);
  executed_flops_ += static_cast<double>(n) * instance_flops(/*backward=*/true, factored());
  profile::Recorder* prof = zones_.embed.registered() ? ctx.profiler : nullptr;
  {
    // dh = dz·w, dw += Σ_n dz_n·h_n (in row order), db += Σ_n dz_n.
    profile::Zone zone(prof, zones_.predict.backward, n);
    const Index in = predict_in();
    const T* __restrict w = predict_.p.weight.value.data;
    T* __restrict dw = predict_dw_.view.data;
    std::fill_n(dw, in, T(0));
    T db = 0;
    for (Index r = 0; r < n; ++r) {
      const T dz = dlogits.data[r * dlogits.ld];
      const T* __restrict x = h.row(r);
      T* __restrict dx = dh.row(r);
      for (Index j = 0; j < in; ++j) dx[j] = dz * w[j];
      for (Index j = 0; j < in; ++j) dw[j] += dz * x[j];
      db += dz;
    }
    T* __restrict gw = predict_.p.weight.grad.data;
    for (Index j = 0; j < in; ++j) gw[j] += dw[j];
    predict_.p.bias.grad.data[0] += db;
  }
  const Index f = has_gmf() ? cfg_.factors : 0;
  if (has_gmf()) {
    // The product's backward fused with the GMF tables' row sums: d(P[u]) += dh ⊙ Q[i] and
    // d(Q[i]) += dh ⊙ P[u], in ascending position order; into the open share's per distinct
    // row sums when the first layer is factored (finish_share passes them on), else into
    // the tables' grad buffers.
    profile::Zone zone(prof, zones_.gmf.backward, n);
    const auto tu = static_cast<size_t>(gmf_user_), ti = static_cast<size_t>(gmf_item_);
    const ConstMat<T> pu = tables_[tu].layer.p.weight.value.mat();
    const ConstMat<T> qi = tables_[ti].layer.p.weight.value.mat();
    const bool per_share = factored();
    const auto side_grads = [&](int s, size_t t) {
      return !per_share                   ? table_grads_[t].mat()
             : s == explicit_owned_side() ? owned_.gmf_grads.mat()
                                          : share_rows_[s].gmf_grads.mat();
    };
    const MatView<T> gu = side_grads(0, tu), gi = side_grads(1, ti);
    const auto grad_row = [&](int s, Id id) { return per_share ? slot_[s][id] : id; };
    for (Index r = 0; r < n; ++r) {
      if (r + kRowsAhead < n) {
        const Id ua = users[static_cast<size_t>(r + kRowsAhead)];
        const Id ia = items[static_cast<size_t>(r + kRowsAhead)];
        prefetch_span(pu.row(ua), f);
        prefetch_span(qi.row(ia), f);
        prefetch_span<true>(gu.row(grad_row(0, ua)), f);
        prefetch_span<true>(gi.row(grad_row(1, ia)), f);
      }
      const Id u = users[static_cast<size_t>(r)], i = items[static_cast<size_t>(r)];
      const T* __restrict d = dh.row(r);
      const T* __restrict a = pu.row(u);
      const T* __restrict b = qi.row(i);
      T* __restrict da = gu.row(grad_row(0, u));
      T* __restrict db = gi.row(grad_row(1, i));
      for (Index j = 0; j < f; ++j) da[j] += d[j] * b[j];
      for (Index j = 0; j < f; ++j) db[j] += d[j] * a[j];
      if (!per_share) {
        mark_touched(tu, u);
        mark_touched(ti, i);
      }
    }
  }
  if (!has_mlp()) return;
  const Index e = cfg_.layers[0] / 2;
  const MatView<T> dx0 = dx0_.mat().rows_block(0, n);
  {
    const Index last = cfg_.layers.back();
    const MatView<T> x0 = x0_.mat().rows_block(0, n);
    for (size_t k = tower_.size(); k-- > 0;) {
      profile::Zone zone(prof, prof ? zones_.tower[k].backward : profile::kStepZone, n);
      const bool is_last = k + 1 == tower_.size();
      const ConstMat<T> x =
          k == 0 ? ConstMat<T>(x0) : ConstMat<T>(acts_[k - 1].mat().rows_block(0, n));
      const ConstMat<T> y = is_last ? ConstMat<T>(h.cols_block(f, last))
                                    : ConstMat<T>(acts_[k].mat().rows_block(0, n));
      const ConstMat<T> dy = is_last ? ConstMat<T>(dh.cols_block(f, last))
                                     : ConstMat<T>(dacts_[k].mat().rows_block(0, n));
      if (k == 0 && factored()) {
        const MatView<T> dy0 = is_last ? dh.cols_block(f, last) : dacts_[0].mat().rows_block(0, n);
        first_layer_backward(context_slot(n), y, dy0);
        continue;
      }
      // The first layer's input gradient only for the embedding columns: the context columns
      // are data, so their 2·N·C·L1 FLOPs would be thrown away.
      const MatView<T> dx =
          k == 0 ? dx0.cols_block(0, 2 * e) : dacts_[k - 1].mat().rows_block(0, n);
      tower_[k].backward(ctx, x, y, dy, dx);
    }
  }
  if (factored()) {
    {
      // dz of the first layer summed per distinct row; the rows' GEMMs run at the share's end.
      profile::Zone zone(prof, zones_.embed.backward, n);
      const ConstMat<T> dz0 = tower_.size() == 1 ? ConstMat<T>(dh.cols_block(f, cfg_.layers.back()))
                                                 : ConstMat<T>(dacts_[0].mat().rows_block(0, n));
      first_layer_aggregate(users, items, dz0);
    }
    if (share_ == Share::kImplicit) finish_share(ctx);
    return;
  }
  // The MLP tables' row sums, straight from the tower's input gradient.
  profile::Zone zone(prof, zones_.embed.backward, n);
  const auto tu = static_cast<size_t>(mlp_user_), ti = static_cast<size_t>(mlp_item_);
  const MatView<T> gu = table_grads_[tu].mat(), gi = table_grads_[ti].mat();
  for (Index r = 0; r < n; ++r) {
    if (r + kRowsAhead < n) {
      prefetch_span<true>(gu.row(users[static_cast<size_t>(r + kRowsAhead)]), e);
      prefetch_span<true>(gi.row(items[static_cast<size_t>(r + kRowsAhead)]), e);
    }
    const Id u = users[static_cast<size_t>(r)], i = items[static_cast<size_t>(r)];
    const T* __restrict d = dx0.row(r);
    T* __restrict da = gu.row(u);
    T* __restrict db = gi.row(i);
    for (Index j = 0; j < e; ++j) da[j] += d[j];
    for (Index j = 0; j < e; ++j) db[j] += d[e + j];
    mark_touched(tu, u);
    mark_touched(ti, i);
  }
}

template <class T>
void Ncf<T>::register_zones(profile::Recorder& rec, int model, std::string_view prefix) {
  using profile::AffineCost;
  using profile::Category;
  using profile::Cost;
  const double elem = sizeof(T);
  const std::string p(prefix);
  // Embedding widths of one instance: every table is read once per row forward, and its row
  // gradients summed backward.
  // embed.* covers the MLP tables (and the context copy); the GMF tables' reads and row sums
  // are inside gmf.forward / gmf.backward, fused with the product.
  double width = 0;
  if (has_mlp()) width = static_cast<double>(cfg_.layers[0]);
  const double ctx_cols = static_cast<double>(cfg_.context);
  zones_.embed.forward = rec.zone(
      p + "embed.forward", Category::kForward, AffineCost::of([&](double n) {
        Cost c = profile::embedding_forward(n, width, elem);
        c.bytes += 2 * elem * n * ctx_cols;  // the context columns copied into the tower input
        return c;
      }),
      model);
  zones_.embed.backward = rec.zone(
      p + "embed.backward", Category::kBackward,
      AffineCost::of([&](double n) { return profile::embedding_backward(n, width, elem); }), model);
  const double f = static_cast<double>(cfg_.factors);
  zones_.gmf.forward = rec.zone(
      p + "gmf.forward", Category::kForward,
      AffineCost::of([&](double n) { return profile::elementwise(n, f, 1, 2, elem); }), model);
  zones_.gmf.backward = rec.zone(
      p + "gmf.backward", Category::kBackward, AffineCost::of([&](double n) {
        return profile::elementwise(n, f, 2, 3, elem) + profile::elementwise(n, f, 0, 0, elem);
      }),
      model);
  if (factored()) {
    // The factored first layer's per-share work, costed per distinct row (the zones' count):
    // listing the distinct ids (no FLOPs), their rows' gather and projection through the
    // embedding columns, and backward those columns' dW and the rows' gradients.
    const double e = static_cast<double>(cfg_.layers[0] / 2);
    const double l1 = static_cast<double>(tower_[0].cfg.out);
    zones_.share_index = rec.zone(p + "mlp.0.rows.index", Category::kForward, {}, model);
    zones_.share.forward =
        rec.zone(p + "mlp.0.rows.forward", Category::kForward, AffineCost::of([&](double m) {
                   Cost c = profile::linear_forward(m, e, l1, false, profile::ActKind::kNone, elem);
                   c.bytes += 2 * elem * m * e;  // the gather
                   return c;
                 }),
                 model);
    const auto rows_backward = AffineCost::of([&](double m) {
      return profile::linear_backward_dw(m, e, l1, false, elem) +
             profile::linear_backward_dx(m, e, l1, profile::ActKind::kNone, elem);
    });
    zones_.share.backward =
        rec.zone(p + "mlp.0.rows.backward", Category::kBackward, rows_backward, model);
    // Rows by owner (share_owned_rows): the owned rows listed, projected, and their dz
    // summed over the replicas with the same backward.
    const std::string owned = p + (owned_side_ == 0 ? "mlp.0.user_rows." : "mlp.0.item_rows.");
    zones_.owned_index = rec.zone(owned + "index", Category::kForward, {}, model);
    zones_.owned_rows.forward =
        rec.zone(owned + "forward", Category::kForward, AffineCost::of([&](double m) {
                   return profile::linear_forward(m, e, l1, false, profile::ActKind::kNone, elem);
                 }),
                 model);
    zones_.owned_rows.backward =
        rec.zone(owned + "backward", Category::kBackward, rows_backward, model);
  }
  zones_.loss = rec.zone(p + "loss.forward", Category::kForward, AffineCost::of([&](double n) {
                           return profile::point_loss_forward(n, 1, elem) +
                                  profile::point_loss_backward(n, 1, elem);
                         }),
                         model);
  if (fused_widths()) {
    // train_chunk's fused pass: the context columns of mlp.0, the tower, predict, the GMF
    // product and the loss, forward and backward, per row; bytes: the rows' context,
    // projections and GMF rows read, their gradients read and written.
    const double flops = instance_flops(false, true) + instance_flops(true, true);
    const double bytes =
        elem * static_cast<double>(cfg_.context + 2 * cfg_.layers[1] + 2 * cfg_.factors +
                                   4 * cfg_.layers[1] + 4 * cfg_.factors + 1);
    zones_.fused = rec.zone(p + "tower.fused", Category::kBackward,  // ⅔ of its FLOPs
                            AffineCost::of([=](double n) {
                              return Cost{flops * n, bytes * n};
                            }),
                            model);
  }
  zones_.tower.resize(tower_.size());
  for (size_t k = 0; k < tower_.size(); ++k) {
    const auto& c = tower_[k].cfg;
    const double out = static_cast<double>(c.out);
    // The first layer's dX covers only the embedding columns (see backward); factored, the
    // instances run only the context columns, without dX (the embedding columns are in the
    // mlp.0.rows zones).
    const double in =
        k == 0 && factored() ? static_cast<double>(cfg_.context) : static_cast<double>(c.in);
    const double dx_in = k == 0 ? (factored() ? 0.0 : static_cast<double>(cfg_.layers[0])) : in;
    const auto act = static_cast<profile::ActKind>(c.act);
    const std::string name = fmt::format("{}mlp.{}.", p, k);
    zones_.tower[k].forward =
        rec.zone(name + "forward", Category::kForward, AffineCost::of([&](double n) {
                   return profile::linear_forward(n, in, out, c.bias, act, elem);
                 }),
                 model);
    zones_.tower[k].backward =
        rec.zone(name + "backward", Category::kBackward, AffineCost::of([&](double n) {
                   return profile::linear_backward_dw(n, in, out, c.bias, elem) +
                          profile::linear_backward_dx(n, dx_in, out, act, elem);
                 }),
                 model);
  }
  const double pin = static_cast<double>(predict_in());
  zones_.predict.forward =
      rec.zone(p + "predict.forward", Category::kForward, AffineCost::of([&](double n) {
                 return profile::linear_forward(n, pin, 1, true, profile::ActKind::kNone, elem);
               }),
               model);
  zones_.predict.backward =
      rec.zone(p + "predict.backward", Category::kBackward, AffineCost::of([&](double n) {
                 return profile::linear_backward_dw(n, pin, 1, true, elem) +
                        profile::linear_backward_dx(n, pin, 1, profile::ActKind::kNone, elem);
               }),
               model);
}

template class Ncf<float>;
template class Ncf<double>;

}  // namespace shoal::models
