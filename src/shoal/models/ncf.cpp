#include "shoal/models/ncf.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "shoal/core/copy_row.h"
#include "shoal/core/prefetch.h"
#include "shoal/kernels/bce.h"
#include "shoal/kernels/relu_tower.h"
#include "shoal/layers/losses.h"

namespace shoal::models {

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
// layer's embedding columns (counted per distinct row in project_rows / rows_backward).
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
void Ncf<T>::plan(Planner& planner, Index max_rows) {
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
                   {kernels::relu_tower_padded_rows(max_rows), mlp_in()});
    planner.buffer(dx0_, Region::kActivationGrads, "mlp.din", {max_rows, mlp_in()});
  }
  planner.buffer(h_, Region::kActivations, "predict.in", {max_rows, predict_in()});
  planner.buffer(dh_, Region::kActivationGrads, "predict.din", {max_rows, predict_in()});
  planner.buffer(out_, Region::kActivations, "logits", {max_rows, 1});
  planner.buffer(predict_dw_, Region::kScratch, "predict.dw_sum", {predict_in()});
  if (factored()) {
    const Index e = cfg_.layers[0] / 2, l1 = cfg_.layers[1], f = has_gmf() ? cfg_.factors : 0;
    own_rows_[0].plan(planner, "mlp.0.user_rows.", cfg_.num_users, max_rows, l1, e, f);
    own_rows_[1].plan(planner, "mlp.0.item_rows.", cfg_.num_items, max_rows, l1, e, f);
    planner.buffer(rows_wt_, Region::kScratch, "mlp.0.rows_wt", {e, l1});
  }
  if (fused_widths()) {
    const Index c = std::max<Index>(cfg_.context, 1);
    const Index l1 = cfg_.layers[1], l2 = cfg_.layers[2], l3 = cfg_.layers[3];
    planner.buffer(wc_t_, Region::kScratch, "fused.wc_t", {c, l1});
    planner.buffer(w2_t_, Region::kScratch, "fused.w2_t", {l1, l2});
    planner.buffer(w3_t_, Region::kScratch, "fused.w3_t", {l2, l3});
    planner.buffer(dwc_t_, Region::kScratch, "fused.dwc_t", {c, l1});
    const Index rows = kernels::relu_tower_padded_rows(max_rows);
    planner.buffer(fused_h1_, Region::kActivations, "fused.h1", {rows, l1});
    planner.buffer(fused_h2_, Region::kActivations, "fused.h2", {rows, l2});
    planner.buffer(fused_d1_, Region::kActivationGrads, "fused.d1", {rows, l1});
    planner.buffer(fused_d2_, Region::kActivationGrads, "fused.d2", {rows, l2});
    planner.buffer(fused_d3_, Region::kActivationGrads, "fused.d3", {rows, l3});
  }
}

// NeuMF, three tower layers with biases, first layer factored, float, and a kernel for the
// widths: train_chunk can run fused (kernels/relu_tower.h).
template <class T>
bool Ncf<T>::fused_widths() const {
  if (!std::is_same_v<T, float> || !cfg_.fused_tower || !factored() || !has_gmf() ||
      tower_.size() != 3)
    return false;
  for (const auto& l : tower_)
    if (!l.cfg.bias) return false;
  return kernels::relu_tower_supported(cfg_.layers[1], cfg_.layers[2], cfg_.layers[3],
                                       cfg_.factors);
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

namespace {
// BCE-with-logits over a column of logits: Σ loss (double, in order), dz = scale·(σ(z) − y);
// float by the one-pass kernel (kernels/bce.h), double by the reference loss (its
// mean times n, and dloss = scale·n).
template <class T>
double bce_column(const T* z, const T* y, T* dz, Index n, T scale) {
  if constexpr (std::is_same_v<T, float>) {
    return kernels::bce_logits(z, y, dz, n, scale);
  } else {
    const layers::BceWithLogitsLoss<T> bce;
    const ConstMat<T> zm(z, n, 1), ym(y, n, 1);
    const double sum = bce.forward(zm, ym) * static_cast<double>(n);
    bce.backward(zm, ym, MatView<T>(dz, n, 1), {}, static_cast<double>(scale * T(n)));
    return sum;
  }
}
}  // namespace

// A chunk that is its own set of rows (the same operations as forward + loss + backward, the
// fused kernel included).
template <class T>
double Ncf<T>::train_chunk(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                           ConstMat<T> context, const T* labels, T scale) {
  if (!factored()) return train_chunk(ctx, users, items, context, labels, scale, Rows{});
  const Rows rows = open_own_rows(ctx, users, items);
  own_rows_[0].dz_clear = own_rows_[1].dz_clear = false;
  const double loss = train_chunk(ctx, users, items, context, labels, scale, rows);
  close_own_rows(ctx);
  return loss;
}

template <class T>
double Ncf<T>::train_chunk(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                           ConstMat<T> context, const T* labels, T scale, const Rows& rows) {
  const auto n = static_cast<Index>(users.size());
  profile::Recorder* prof = zones_.embed.registered() ? ctx.profiler : nullptr;
  if (fused_widths()) {
    profile::Zone zone(prof, zones_.fused, n);
    return run_fused(users, items, context, labels, scale, rows);
  }
  const MatView<T> logits = forward(ctx, users, items, context, rows);
  T* dl = dlogits_.view.data;
  double loss = 0;
  {
    profile::Zone zone(prof, zones_.loss, n);
    loss = bce_column<T>(logits.data, labels, dl, n, scale);
  }
  backward(ctx, users, items, ConstMat<T>(dl, n, 1), rows);
  return loss;
}

// The fused chunk (kernels/relu_tower.h) on this model's buffers and the given rows.
template <class T>
double Ncf<T>::run_fused(std::span<const Id> users, std::span<const Id> items, ConstMat<T> context,
                         const T* labels, T scale, const Rows& rows) {
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
      std::fill(slot.data + n * c, slot.data + kernels::relu_tower_padded_rows(n) * c, T(0));
    }
    const auto tu = static_cast<size_t>(gmf_user_), ti = static_cast<size_t>(gmf_item_);
    kernels::ReluTowerChunk a;
    a.n = n;
    a.c = c;
    a.ctx = x0_.view.data;
    a.ld_ctx = c;
    a.users = users.data();
    a.items = items.data();
    a.proj_u = rows.proj[0];
    a.slot_u = rows.slot[0];
    a.proj_i = rows.proj[1];
    a.slot_i = rows.slot[1];
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
    a.gpg = rows.gmf[0];
    a.gqg = rows.gmf[1];
    a.dz_u = rows.dz[0];
    a.dz_i = rows.dz[1];
    a.logits = out_.view.data;
    a.h1 = fused_h1_.view.data;
    a.h2 = fused_h2_.view.data;
    a.d1 = fused_d1_.view.data;
    a.d2 = fused_d2_.view.data;
    a.d3 = fused_d3_.view.data;
    const double loss =
        kernels::relu_tower_chunk(cfg_.layers[1], cfg_.layers[2], cfg_.layers[3], f, a);
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
  // This call is its own set of rows (evaluation, tests); the backward that follows closes it.
  if (factored()) return forward(ctx, users, items, context, open_own_rows(ctx, users, items));
  return forward(ctx, users, items, context, Rows{});
}

template <class T>
MatView<T> Ncf<T>::forward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                           ConstMat<T> context, const Rows& rows) {
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
  if (has_mlp()) {
    ConstMat<T> x = x0;
    for (size_t k = 0; k < tower_.size(); ++k) {
      profile::Zone zone(prof, prof ? zones_.tower[k].forward : profile::kStepZone, n);
      const MatView<T> y = k + 1 < tower_.size() ? acts_[k].mat().rows_block(0, n)
                                                 : h.cols_block(f, cfg_.layers.back());
      if (k == 0 && factored())
        first_layer_forward(users, items, context_slot(n), y, rows);
      else
        tower_[k].forward(ctx, x, y);
      x = y;
    }
  }
  profile::Zone zone(prof, zones_.predict.forward, n);
  return predict_forward(n);
}

template <class T>
MatView<T> Ncf<T>::predict_forward(Index n) {
  const MatView<T> h = h_.mat().rows_block(0, n);
  const MatView<T> out = out_.mat().rows_block(0, n);
  // One output: a dot product per row (independent rows keep the FMA units busy); the general
  // GEMM path would pack and dispatch for a 1-wide result.
  const Index in = predict_in();
  const T* __restrict w = predict_.p.weight.value.data;
  const T b = predict_.p.bias.value.data[0];
  for (Index r = 0; r < n; ++r) {
    const T* __restrict x = h.row(r);
    T z = b;
    for (Index j = 0; j < in; ++j) z += x[j] * w[j];
    out.data[r * out.ld] = z;
  }
  return out;
}

template <class T>
void Ncf<T>::backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                      ConstMat<T> dlogits) {
  own_rows_[0].dz_clear = own_rows_[1].dz_clear = false;
  backward(ctx, users, items, dlogits, own_rows());
  if (own_open_) close_own_rows(ctx);
}

template <class T>
void Ncf<T>::backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                      ConstMat<T> dlogits, const Rows& rows) {
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
    // d(Q[i]) += dh ⊙ P[u], in ascending position order; into the rows' sums (Rows::gmf) when
    // the first layer is factored (close_rows, or the caller, passes them on), else into the
    // tables' grad buffers.
    profile::Zone zone(prof, zones_.gmf.backward, n);
    const auto tu = static_cast<size_t>(gmf_user_), ti = static_cast<size_t>(gmf_item_);
    const ConstMat<T> pu = tables_[tu].layer.p.weight.value.mat();
    const ConstMat<T> qi = tables_[ti].layer.p.weight.value.mat();
    const bool per_share = factored();
    const auto side_grads = [&](int s, size_t t) {
      return per_share ? MatView<T>(rows.gmf[s], 0, f) : table_grads_[t].mat();
    };
    const MatView<T> gu = side_grads(0, tu), gi = side_grads(1, ti);
    const auto grad_row = [&](int s, Id id) { return per_share ? rows.slot[s][id] : id; };
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
      first_layer_aggregate(users, items, dz0, rows);
    }
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

template class Ncf<float>;
template class Ncf<double>;

}  // namespace shoal::models
