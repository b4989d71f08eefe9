// NCF models (He et al., WWW 2017): GMF, MLP and NeuMF, with optional numeric context features
// concatenated to the MLP tower's input.
//   GMF:    h = P_g[u] ⊙ Q_g[i]                                          [N, F]
//   MLP:    x0 = [P_m[u], Q_m[i], c]   (P_m, Q_m width E = L0 / 2)      [N, L0 + C]
//           x_k = relu(x_{k-1} · W_kᵀ + b_k),  k = 1..K                  widths L1..LK
//   NeuMF:  z = [h, x_K] · w_pᵀ + b_p   (GMF: z = h·w_pᵀ + b_p; MLP: z = x_K·w_pᵀ + b_p)
// z [N, 1] is a logit (train with BCE-with-logits; σ(z) is the probability).
// Shapes: users, items [N] int32; context c [N, C]; tables P [U, ·], Q [V, ·].
// Legend: N batch rows, U users, V items, F predictive factors (GMF width), L0..LK the MLP
// layer sizes (`layers`), E = L0/2, C context columns.
// Init: embeddings N(0, 0.01²) (the paper), Linear layers PyTorch's default U(±1/√in).
// Parameter names (PyTorch-style, also the safetensors names): embed_user_gmf.weight,
// embed_item_gmf.weight, embed_user_mlp.weight, embed_item_mlp.weight, mlp.{k}.weight/bias
// (k = 0..K-1), predict.weight/bias. Embedding tables are sparse-row parameters.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/embedding.h"
#include "shoal/layers/linear.h"
#include "shoal/models/ncf_row_set.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

enum class NcfKind : uint8_t { kGmf, kMlp, kNeuMf };
const char* ncf_kind_name(NcfKind k);
NcfKind parse_ncf_kind(const std::string& s);  // "gmf" | "mlp" | "neumf"

template <class T>
class Ncf {
 public:
  using Id = int32_t;
  struct Config {
    NcfKind kind = NcfKind::kNeuMf;
    Index num_users = 0;
    Index num_items = 0;
    Index factors = 8;                            // F
    std::vector<Index> layers = {64, 32, 16, 8};  // L0..LK; L0 even
    Index context = 0;                            // C
    double embedding_std = 0.01;
    // The first tower layer by distinct rows (see Rows): the same function and gradients,
    // fewer FLOPs when ids repeat; false runs it as one Linear over [P_m[u], Q_m[i], c] (the
    // reference the tests compare with).
    bool factored_first_layer = true;
    // train_chunk runs NeuMF's tower, predict layer and loss in one fused pass over tiles of
    // rows (kernels/relu_tower.h) where there is a kernel for the widths (float, first layer
    // factored); false always runs forward, the loss and backward layer by layer.
    bool fused_tower = true;
  };

  explicit Ncf(Config cfg);
  Ncf(const Ncf&) = delete;
  Ncf& operator=(const Ncf&) = delete;

  const Config& config() const { return cfg_; }
  bool has_gmf() const { return cfg_.kind != NcfKind::kMlp; }
  bool has_mlp() const { return cfg_.kind != NcfKind::kGmf; }
  // Width of the MLP tower's input (L0 + C) and of the predict layer's input.
  Index mlp_in() const { return has_mlp() ? cfg_.layers[0] + cfg_.context : 0; }
  Index predict_in() const;
  // Multiply-adds of one instance's forward (for FLOP accounting).
  double forward_macs() const;
  // The model's training FLOPs per instance, as an unfactored implementation does them: every
  // Linear 2·in·out forward and 2·(2·in·out) backward (dX and dW), the GMF product 1 multiply
  // forward and 2 backward per factor.
  double training_flops_per_instance() const;
  // Training FLOPs this model (replica) has executed in its forward, backward and rows calls since
  // construction, by the same rules, except that the first layer's context columns get no dX
  // (they are data: 2·C·L1 fewer per instance) and, factored, its embedding columns count per
  // distinct row of a set of rows instead of per instance (fewer again when ids repeat). Padding
  // rows are not counted.
  double executed_flops() const { return executed_flops_; }

  // max_rows: rows per forward/backward call.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);

  // The factored first layer (Config::factored_first_layer, the default): its weight is
  // [W_u | W_i | W_c] over the input [P_m[u], Q_m[i], c], so its pre-activation is
  //   P_m[u]·W_uᵀ + Q_m[i]·W_iᵀ + (c·W_cᵀ + b),
  // and the two projections depend only on the row: they are computed once per distinct user
  // and item of a set of instances (a GEMM over the distinct rows, project_rows) and added per
  // instance. Backward mirrors it: dz summed per distinct row over the set (dZ_u = Σ_{n: u_n =
  // u} dz_n), then
  //   dW_u += dZ_uᵀ·P_m[rows],  d(P_m[u]) = dZ_u·W_u   (one GEMM each over the distinct rows,
  // rows_backward), and the same for the items; only c·W_cᵀ and its dW_c run per instance. With
  // ids repeating (a batch of 1280 instances has ~560 distinct users of 654 and ~770 items of
  // 1127) that is ~40% fewer first-layer FLOPs. Rounding differs from the unfactored sums
  // (float associativity), the function and its gradients do not.
  //
  // Rows: where the calls over a set of instances find, per side s (0 users, 1 items), each
  // id's row slot[s][id] of the projections proj[s] [·, L1] and of the sums the calls add into:
  // dz[s] [·, L1] and, NeuMF, gmf[s] [·, F] (the GMF tables' row gradients). A caller that runs
  // several calls over one set (NcfTrainer's chunks of a share, train/ncf_shares.h) lists and
  // projects the rows once (open_rows) and passes them to every call; without Rows, each
  // forward opens its own set of the call's ids and the backward that follows closes it.
  struct Rows {
    const T* proj[2] = {nullptr, nullptr};
    const Id* slot[2] = {nullptr, nullptr};
    T* dz[2] = {nullptr, nullptr};
    T* gmf[2] = {nullptr, nullptr};
  };
  // Returns the logits [N, 1]. context is [N, C] (ignored when C = 0).
  MatView<T> forward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context);
  MatView<T> forward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context, const Rows& rows);
  // dlogits [N, 1]: dense parameter grads accumulate; every table's row gradients are added
  // into its dense grad buffer (see table_grad), or, factored, into the rows' sums. The tower's
  // input gradient is formed only for the embedding columns (the context columns are data,
  // not parameters).
  void backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                ConstMat<T> dlogits);
  void backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                ConstMat<T> dlogits, const Rows& rows);

  // Recommendation: many items scored for one user (train/ncf_recommend.h). The first layer's
  // pre-activation is a user part (its MLP row's projection, the context row's and the bias)
  // plus an item part (the item's MLP row's projection) — see the factored first layer above.
  // scoring_tables forms every item's part ([V, L1]) and the tower's later weights transposed,
  // once for a set of weights; score_user then forms the user's part once and, per item, adds
  // the two, so a pair costs the tower's later layers, the GMF product and the predict dot
  // only — in one register-tiled pass (kernels/relu_tower_score.h) where the widths allow. The same
  // function as forward (other float rounding). Returns the logits [n, 1]; context_row: [C]
  // (null when C = 0). Several replicas may share one ScoringTables.
  struct ScoringTables {
    std::vector<T> item_proj;   // [V, L1] (empty without an MLP tower)
    std::vector<T> w2_t, w3_t;  // mlp.1 and mlp.2 weights transposed (a three-layer tower)
  };
  ScoringTables scoring_tables() const;
  MatView<T> score_user(const Ctx& ctx, Id user, const T* context_row, std::span<const Id> items,
                        const ScoringTables& tables);
  // Executed FLOPs of score_user per pair (the user's part not counted: once per call).
  double scoring_flops_per_pair() const;

  // One training chunk: forward, BCE-with-logits against labels [N] (loss summed in double in
  // row order, returned) with dlogits = scale·(σ(z) − y), and backward. The same as forward +
  // the loss + backward, by the fused kernel where Config::fused_tower allows (other float
  // rounding, same function and gradients). With rows, between begin_chunks and end_chunks.
  double train_chunk(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context, const T* labels, T scale);
  double train_chunk(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context, const T* labels, T scale, const Rows& rows);
  // Whether train_chunk runs fused (Config::fused_tower and a kernel for the widths).
  bool fused() const { return fused_widths(); }
  // Around a run of train_chunk calls over the same weights: the fused kernel's transposed
  // weights, and the context columns' dW it accumulates, added into mlp.0's grad at the end.
  void begin_chunks();
  void end_chunks();

  // The first layer factored (a model with an MLP tower, Config::factored_first_layer).
  bool factored() const { return has_mlp() && cfg_.factored_first_layer; }
  // Side s's rows of `rs` (listed) projected into rs.proj, their dz sums zeroed where a call
  // may have added into them and their GMF sums zeroed: ready for the calls' Rows.
  void open_rows(int s, NcfRowSet<T>& rs);
  // proj[k, :] = the MLP table's row rows[k] of side s · W_partᵀ (the side's columns of the
  // first layer). prefetch: rows in random order of a large table.
  void project_rows(int s, std::span<const Id> rows, T* proj, bool prefetch);
  // The rows' part of the backward: row_grads = dZ·W_part over NcfRowSet::padded(m) rows of dz
  // (the padding rows are read: zero, or any finite values whose results are not used) and
  // dW_part += dZᵀ·rows.
  void rows_backward(int s, std::span<const Id> rows, const T* dz, T* row_grads, bool prefetch);
  // Side s's listed rows of `rs` after the calls: rows_backward, their dz sums cleared for the
  // next set; with add_to_tables the MLP and GMF row gradients are added into the tables' grad
  // buffers (add_row_grads), else left in rs.row_grads and rs.gmf_grads for the caller.
  void close_rows(int s, NcfRowSet<T>& rs, bool add_to_tables);
  // Table t's grad rows rows[k] += grads[k] (compact [m, D]), the rows flagged.
  void add_row_grads(size_t t, std::span<const Id> rows, const T* grads);
  // Indexes into tables() of side s's MLP and GMF tables (-1 where the model has none).
  int mlp_table_index(int s) const { return s == 0 ? mlp_user_ : mlp_item_; }
  int gmf_table_index(int s) const { return s == 0 ? gmf_user_ : gmf_item_; }
  // The profiler zones of the rows' listing, projection and backward (register_zones).
  profile::ZoneId rows_index_zone() const { return zones_.share_index; }
  const profile::LayerZones& rows_zones() const { return zones_.share; }

  // Table t's gradient after backward: a dense [rows, D] buffer (this model's, not shared
  // with replicas), zero except the rows the batch touched, and one flag per row (1 where some
  // instance used it). backward adds the rows' gradients (over the batch in ascending
  // position order: deterministic), sets the flags and lists the newly touched rows;
  // clear_table_grads() zeroes the listed rows and their flags (O(touched rows)). Backward
  // accumulates until then, so call it once per step before the first backward (the trainer
  // does, on the thread that owns this replica: the sparse update only reads the buffers,
  // and no other core writes this replica's lines). A table of a few thousand rows keeps this
  // in L2 and needs no sort of the ids. A consumer that zeroes rows or flags itself must
  // leave the list valid (rows zeroed twice are harmless).
  struct TableGrad {
    MatView<T> grad;   // [rows, D]
    uint8_t* touched;  // [rows]
  };
  TableGrad table_grad(size_t t);
  void clear_table_grads();
  // The tower input's context columns for rows [0, n) ([n, C]; row stride L0 + C, or C when
  // the first layer is factored). A caller that gathers the context here and passes this view
  // to forward saves forward's copy.
  MatView<T> context_slot(Index n);

  // Profiler zones with analytic costs, recorded when ctx.profiler is set: "{prefix}embed"
  // (the four table lookups; backward: the touched-row sums), "{prefix}gmf" (the product),
  // "{prefix}mlp.{k}", "{prefix}predict", each ".forward" and ".backward".
  void register_zones(profile::Recorder& rec, int model = 0, std::string_view prefix = "");

  // Calls f(name, Param&) for every parameter (dense first, then the tables).
  template <class F>
  void for_each_param(F&& f) {
    for (size_t k = 0; k < tower_.size(); ++k) {
      const std::string prefix = "mlp." + std::to_string(k) + ".";
      tower_[k].for_each_param(
          [&](std::string_view name, Param<T>& p) { f(prefix + std::string(name), p); });
    }
    predict_.for_each_param(
        [&](std::string_view name, Param<T>& p) { f("predict." + std::string(name), p); });
    for (auto& t : tables_) f(t.name + ".weight", t.layer.p.weight);
  }
  // The embedding tables, in a fixed order (for the trainer's sparse updates).
  struct Table {
    std::string name;  // "embed_user_gmf", ...
    bool is_user;
    layers::Embedding<T> layer;
  };
  std::vector<Table>& tables() { return tables_; }
  // The MLP embedding table of side s (0 users, 1 items).
  Table& mlp_table(int s) { return tables_[static_cast<size_t>(s == 0 ? mlp_user_ : mlp_item_)]; }
  // The GMF embedding table of side s (NeuMF, GMF).
  Table& gmf_table(int s) { return tables_[static_cast<size_t>(s == 0 ? gmf_user_ : gmf_item_)]; }

 private:
  Config cfg_;
  std::vector<Table> tables_;  // gmf user, gmf item, mlp user, mlp item (those present)
  std::vector<layers::Linear<T>> tower_;
  layers::Linear<T> predict_;
  std::vector<Buffer<T>> table_grads_;          // per table [rows, D]
  std::vector<Buffer<uint8_t>> table_touched_;  // per table [rows]
  std::vector<Buffer<Id>> touched_list_;        // per table [rows]: rows flagged, in order
  std::vector<Index> touched_count_;            // per table
  Buffer<T> x0_, dx0_;                          // MLP input [N, L0 + C] and its gradient
  std::vector<Buffer<T>> acts_, dacts_;  // tower outputs except the last (which writes into h)
  Buffer<T> h_, dh_;                     // predict input [N, F + LK] and its gradient
  Buffer<T> out_;                        // logits [N, 1]
  Buffer<T> predict_dw_;                 // [F + LK] the batch's predict weight grad
  Buffer<T> dlogits_;                    // [N, 1] train_chunk's unfused path
  // The fused path (train_chunk): per share, the weights it reads transposed (the context
  // columns of mlp.0 [C, L1], mlp.1 [L1, L2], mlp.2 [L2, L3]) and the context columns' dW
  // transposed [C, L1], added into mlp.0's grad when the share ends.
  Buffer<T> wc_t_, w2_t_, w3_t_, dwc_t_;
  // The chunk's h1, h2 and pre-activation gradients d1, d2, d3 (kernels/relu_tower.h), [rows,
  // width].
  Buffer<T> fused_h1_, fused_h2_, fused_d1_, fused_d2_, fused_d3_;
  bool fused_widths() const;
  double run_fused(std::span<const Id> users, std::span<const Id> items, ConstMat<T> context,
                   const T* labels, T scale, const Rows& rows);
  int gmf_user_ = -1, gmf_item_ = -1, mlp_user_ = -1, mlp_item_ = -1;  // indexes into tables_
  double executed_flops_ = 0;
  double instance_flops(bool backward, bool factored) const;
  // The predict layer over h's first n rows (forward and score_user).
  MatView<T> predict_forward(Index n);
  std::vector<T> user_part_;  // score_user's [L1]
  std::vector<T> gmf_part_;   // score_user's [F]
  void form_user_part(Id user, const T* context_row);

  // The model's own set of rows (forward without Rows), open from that forward to the
  // backward that follows it.
  NcfRowSet<T> own_rows_[2];
  bool own_open_ = false;
  Buffer<T> rows_wt_;  // [E, L1]: W_partᵀ of the side being projected
  Rows open_own_rows(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items);
  Rows own_rows() const;
  void close_own_rows(const Ctx& ctx);
  void first_layer_forward(std::span<const Id> users, std::span<const Id> items,
                           ConstMat<T> context, MatView<T> y, const Rows& rows);
  void first_layer_backward(ConstMat<T> context, ConstMat<T> y, MatView<T> dy);
  void first_layer_aggregate(std::span<const Id> users, std::span<const Id> items, ConstMat<T> dz,
                             const Rows& rows);
  void mark_touched(size_t t, Id row) {
    uint8_t& f = table_touched_[t].view.data[row];
    if (f == 0) {
      f = 1;
      touched_list_[t].view.data[touched_count_[t]++] = row;
    }
  }
  struct Zones {
    profile::LayerZones embed, gmf, predict, share;
    profile::ZoneId share_index = profile::kStepZone;
    profile::ZoneId loss = profile::kStepZone, fused = profile::kStepZone;
    std::vector<profile::LayerZones> tower;
  } zones_;
};

}  // namespace shoal::models
