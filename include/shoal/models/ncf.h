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
    // The first tower layer by distinct rows (see forward): the same function and gradients,
    // fewer FLOPs when ids repeat; false runs it as one Linear over [P_m[u], Q_m[i], c] (the
    // reference the tests compare with).
    bool factored_first_layer = true;
    // train_chunk runs NeuMF's tower, predict layer and loss in one fused pass over tiles of
    // rows (models/ncf_fused.h) where there is a kernel for the widths (float, AVX2, first
    // layer factored); false always runs forward, the loss and backward layer by layer.
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
  // Training FLOPs this model (replica) has executed in forward/backward/end_share since
  // construction, by the same rules, except that the first layer's context columns get no dX
  // (they are data: 2·C·L1 fewer per instance) and, factored, its embedding columns count per
  // distinct row of a share instead of per instance (fewer again when ids repeat). Padding rows
  // are not counted.
  double executed_flops() const { return executed_flops_; }

  // max_rows: rows per forward/backward call; max_share_rows: rows of a share (see
  // begin_share), 0 = max_rows.
  // owned_side (0 users, 1 items; -1 none): also plan the buffers of share_owned_rows for that
  // side's table.
  void plan(Planner& planner, Index max_rows, Index max_share_rows = 0, int owned_side = -1);
  void init(RngStream& rng);
  // Returns the logits [N, 1]. context is [N, C] (ignored when C = 0).
  //
  // The first tower layer, factored by rows (Config::factored_first_layer, the default): its
  // weight is [W_u | W_i | W_c] over the input [P_m[u], Q_m[i], c], so its pre-activation is
  //   P_m[u]·W_uᵀ + Q_m[i]·W_iᵀ + (c·W_cᵀ + b),
  // and the two projections depend only on the row: they are computed once per distinct user
  // and item of a share (a GEMM over the distinct rows) and added per instance. Backward
  // mirrors it: dz summed per distinct row over the share (dZ_u = Σ_{n: u_n = u} dz_n), then
  //   dW_u += dZ_uᵀ·P_m[rows],  d(P_m[u]) = dZ_u·W_u   (one GEMM each over the distinct rows),
  // and the same for the items; only c·W_cᵀ and its dW_c run per instance. With ids repeating
  // (a batch of 1280 instances has ~560 distinct users of 654 and ~770 items of 1127) that is
  // ~40% fewer first-layer FLOPs. Rounding differs from the unfactored sums (float
  // associativity), the function and its gradients do not.
  MatView<T> forward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context);
  // dlogits [N, 1]: dense parameter grads accumulate; every table's row gradients are added
  // into its dense grad buffer (see table_grad). The tower's input gradient is formed only for
  // the embedding columns (the context columns are data, not parameters).
  void backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                ConstMat<T> dlogits);

  // One training chunk: forward, BCE-with-logits against labels [N] (loss summed in double in
  // row order, returned) with dlogits = scale·(σ(z) − y), and backward. Within a share (or as
  // its own, like forward) the same as forward + the loss + backward, by the fused kernel
  // where Config::fused_tower allows (other float rounding, same function and gradients).
  double train_chunk(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context, const T* labels, T scale);
  // Whether a share's chunks run fused (Config::fused_tower and a kernel for the widths).
  bool fused() const { return fused_widths(); }

  // A share: rows trained in several forward/backward calls (the trainer's chunks) whose
  // distinct MLP rows are projected once. begin_share takes all of the share's ids before its
  // first forward (each call's ids must be among them), end_share follows its last backward
  // (the distinct rows' weight and table gradients). Without begin_share, each forward is its
  // own share and the backward that follows it ends it. No-ops when the first layer is not
  // factored.
  void begin_share(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items);
  void end_share(const Ctx& ctx);
  // Hand-over of side s's row gradients (factored first layer; s: 0 users, 1 items): a share
  // sums them per distinct row, the MLP table's (dZ·W_part) and, NeuMF, the GMF table's (Σ of
  // dh ⊙ the other side's row over the share's instances of the row). When set, the share's
  // end leaves its distinct rows and both tables' gradients in share_row_grads(s), valid until
  // the next share opens, instead of adding them into the tables' grad buffers (table_grad:
  // those rows stay untouched there; hands_over_table(t) is then true). For a caller that
  // updates those rows from the compact lists: where they were formed when no other replica
  // touched them, else by merging the replicas' lists; no scatter into the buffers, flags or
  // clearing either way.
  void set_hand_over(int s, bool on) { hand_over_[s] = on; }
  // Whether side s's rows are handed over (set_hand_over, and the first layer factored).
  bool hands_over(int s) const { return factored() && hand_over_[s]; }
  struct RowGrads {
    std::span<const Id> rows;
    ConstMat<T> grads;      // [rows, L0/2]: the MLP table's
    ConstMat<T> gmf_grads;  // [rows, F]: the GMF table's (empty without GMF)
  };
  RowGrads share_row_grads(int s) const;
  // Whether table t's row gradients go to share_row_grads rather than table_grad(t).
  bool hands_over_table(size_t t) const;

  // Rows by owner: several replicas training one batch (NcfTrainer's threads, each a share of
  // it) project and back-propagate each of the batch's rows of one side (the owned side: the
  // items when the shares are cut by user, the users when they are cut by item) once, on the
  // replica that owns the row, instead of once per share that has it. With the planned owner
  // buffers (plan's owned_side) and share_owned_rows(holder) set, an explicit share
  // (begin_share) stamps its rows of the owned side without listing or projecting them. The
  // owners give every such row of the batch a row of the holder's table (each owner a block of
  // rows: its ids in ascending order) and project it there; a share's chunks read the
  // projections there and sum their dz and GMF gradients into the same rows of their own
  // replica's owned sums, so that an owner finds its rows' sums at its own rows in every
  // replica. The step:
  //   every replica: begin_share (the other side's rows projected, the owned side's stamped),
  //            project_owned_rows
  //   barrier; every replica: the share's chunks, then end_share
  //   once every replica's chunks are done: backward_owned_rows on every replica (the other
  //            replicas' sums of its rows added into its own, dW of the side's columns into its
  //            own grads; returns the owned rows' MLP and GMF gradients for the caller's update)
  //   barrier; the replicas' dense grads summed, the updates; clear_owned_sums on every replica.
  // Implicit shares (forward alone: evaluation) are unaffected. holder may be this model.
  void share_owned_rows(Ncf* holder);
  bool rows_by_owner() const { return holder_ != nullptr; }
  // Projects the batch's rows of the owned side among `owned` (the ids this replica owns,
  // ascending) into the holder's table from first_row on (the number of ids the replicas
  // before this one own). batch_ids: every share's ids of that side, the whole batch.
  void project_owned_rows(const Ctx& ctx, std::span<const Id> batch_ids, std::span<const Id> owned,
                          Index first_row);
  // Zeroes this replica's owned sums in the rows of the step's owners (every replica, whose
  // project_owned_rows ran this step), once every owner has read them and this replica's
  // owned rows are updated.
  void clear_owned_sums(std::span<Ncf* const> owners);
  // sharers: the replicas whose shares were open this step (begin_share ran), in replica order.
  RowGrads backward_owned_rows(const Ctx& ctx, std::span<Ncf* const> sharers);

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
  // The chunk's h1, h2 and pre-activation gradients d1, d2, d3 (ncf_fused.h), [rows, width].
  Buffer<T> fused_h1_, fused_h2_, fused_d1_, fused_d2_, fused_d3_;
  bool fused_widths() const;
  double run_fused(std::span<const Id> users, std::span<const Id> items, ConstMat<T> context,
                   const T* labels, T scale);
  int gmf_user_ = -1, gmf_item_ = -1, mlp_user_ = -1, mlp_item_ = -1;  // indexes into tables_
  double executed_flops_ = 0;
  double instance_flops(bool backward, bool factored) const;

  // The factored first layer (see forward): per MLP table (0 users, 1 items) the open share's
  // distinct rows.
  bool factored() const { return has_mlp() && cfg_.factored_first_layer; }
  enum class Share : uint8_t { kNone, kExplicit, kImplicit };
  struct ShareRows {
    Buffer<Id> slot;      // [table rows]: row r is list[slot[r]] when stamp[r] == generation
    Buffer<Id> stamp;     // [table rows]: the generation of the share that last listed row r
    Buffer<Id> list;      // [capacity + 1]: the distinct rows (see list_distinct)
    Buffer<T> proj;       // [capacity, L1]: their embeddings · W_partᵀ
    Buffer<T> dz;         // [capacity, L1]: Σ of dz over the share's instances of the row
    Buffer<T> row_grads;  // [capacity, E]: dZ·W_part, the rows' table gradients
    Buffer<T> gmf_grads;  // [capacity, F]: the rows' GMF table gradients (NeuMF)
    Index count = 0;
    bool ascending = false;  // list is in ascending order (a sweep of the table)
    bool dz_clear = false;   // dz is all zeros (see open_share)
    Id generation = 0;       // 0: stamps not yet cleared
    Index handed = 0;        // rows whose gradients the last share handed over (see set_hand_over)
  };
  // The open share's rows per side (0 users, 1 items): their projections, each id's row there,
  // and the share's sums of their dz [·, L1] and GMF gradients [·, F] by the same rows. The
  // share's own buffers (by its distinct rows), or, for the owned side, the holder's table and
  // this replica's owned sums (by the holder's rows).
  const T* proj_[2] = {nullptr, nullptr};
  const Id* slot_[2] = {nullptr, nullptr};
  T* dz_[2] = {nullptr, nullptr};
  T* gmf_[2] = {nullptr, nullptr};
  // Rows by owner (share_owned_rows): the holder's table of projections [R, L1] with each
  // owned-side id's row in it (R: that side's table rows); per replica its sums by those rows,
  // and the owned rows the step has with their row gradients.
  int owned_side_ = -1;             // planned (plan's owned_side)
  Ncf* holder_ = nullptr;           // set (share_owned_rows)
  bool explicit_by_owner_ = false;  // the open share's owned side is by owner
  Buffer<T> owned_proj_;            // holder: [R, L1]
  Buffer<Id> owned_pslot_;          // holder: [R]
  struct OwnedRows {
    Buffer<T> dz;            // [R + block, L1]: this replica's dz sums, by the holder's rows
    Buffer<T> gmf_grads;     // [R, F]: its GMF gradient sums, likewise
    bool sums_clear = true;  // dz and gmf_grads are zero (clear_owned_sums ran)
    Buffer<Id> stamp;        // [R]: the generation of the batch that last had id i
    Id generation = 0;
    Buffer<Id> list;      // [R + 1]: the batch's owned ids, ascending
    Buffer<T> row_grads;  // [padded R, E]: their MLP table gradients
    Index count = 0;
    Index first_row = 0;  // their first row in the holder's table
  } owned_;
  bool hand_over_[2] = {false, false};
  ShareRows share_rows_[2];
  Buffer<T> rows_wt_;  // [E, L1]: W_partᵀ of the side being projected
  Share share_ = Share::kNone;
  void open_share(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                  bool by_owner);
  // The open share's side whose sums are the owned sums (-1: none).
  int explicit_owned_side() const { return explicit_by_owner_ ? owned_side_ : -1; }
  // A chunk added into the open share's dz sums: the share's own buffers are no longer zero
  // (the owned side's sums are the owned ones, which clear_owned_sums clears).
  void mark_dz_used() {
    for (int s = 0; s < 2; ++s)
      if (s != explicit_owned_side()) share_rows_[s].dz_clear = false;
  }
  void list_distinct(ShareRows& rs, std::span<const Id> ids);
  void stamp_ids(ShareRows& rs, std::span<const Id> ids);
  void finish_share(const Ctx& ctx);
  void first_layer_forward(std::span<const Id> users, std::span<const Id> items,
                           ConstMat<T> context, MatView<T> y);
  void first_layer_backward(ConstMat<T> context, ConstMat<T> y, MatView<T> dy);
  void first_layer_aggregate(std::span<const Id> users, std::span<const Id> items, ConstMat<T> dz);
  void add_row_grads(size_t t, const Id* list, Index m, const T* grads);
  void mark_touched(size_t t, Id row) {
    uint8_t& f = table_touched_[t].view.data[row];
    if (f == 0) {
      f = 1;
      touched_list_[t].view.data[touched_count_[t]++] = row;
    }
  }
  struct Zones {
    profile::LayerZones embed, gmf, predict, share, owned_rows;
    profile::ZoneId share_index = profile::kStepZone, owned_index = profile::kStepZone;
    profile::ZoneId loss = profile::kStepZone, fused = profile::kStepZone;
    std::vector<profile::LayerZones> tower;
  } zones_;
};

}  // namespace shoal::models
