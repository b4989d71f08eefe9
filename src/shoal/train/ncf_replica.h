// Internal to src/shoal/train: one NCF thread's replica (its model, share rows, batch buffers
// and arena), shared by the trainer's files.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "shoal/train/ncf_trainer.h"

namespace shoal::train::detail {

// One thread's model and buffers. Replica 0 owns params and optimizer state; the others share
// its params. merge_*, grad_ptrs are the thread's scratch for the sparse table updates.
struct NcfReplica {
  models::Ncf<float> model;
  NcfShareRows<float> rows;                // the model's rows of the step's share (ncf_shares.h)
  Buffer<int32_t> users, items;            // [R] evaluation candidates
  Buffer<float> context;                   // [R, C]
  std::vector<Buffer<int32_t>> merge_ids;  // per table [U]: the step's touched rows
  std::vector<Buffer<float>> merge_grad;  // per table [min(B, U), D]: rows several replicas touched
  std::vector<const float*> grad_ptrs;    // [max over tables of min(B, U)]: the rows' gradients
  std::vector<Buffer<int32_t>> all_ids;   // per table [U] = 0..U-1, dense_embedding_adam
  // The merge of a side's handed-over rows (NcfTrainer::update_shared_rows), per table row of
  // side s: the merge that last saw it (stamp, against gen), its MLP and GMF gradient rows, and
  // its row in merge_grad once several replicas' gradients are summed (-1 until then).
  struct SharedRows {
    std::vector<int32_t> stamp, merged;
    std::vector<const float*> mlp, gmf;
    int32_t gen = 0;
  } shared[2];
  std::vector<const float*> gmf_ptrs;  // [U of the side]: beside grad_ptrs, the GMF rows'
  // Whether rows.row_grads holds this step's share (a thread with no instances in a batch
  // opens no share; its lists are then the last step's).
  bool handed_valid = false;
  // With several threads: this thread's share of a batch, the instances of its users
  // (NcfTrainer::open_share), gathered from the epoch's arrays [B].
  Buffer<int32_t> share_users, share_items, share_ctx_rows;
  Buffer<float> share_labels;
  Buffer<int32_t> bins;  // [bins ≤ rows of the split side]: the batch's instances per bin
  // The step's share (NcfTrainer::open_share, train_chunks, close_share): its instances, and its
  // fraction of the batch. count 0: no share opened this step.
  struct Share {
    std::span<const int32_t> users, items, ctx_rows;
    const float* labels = nullptr;
    Index count = 0;
    double fraction = 0;
  } share;
  // Rows by owner: the last step (NcfTrainer::step_seq_) whose owned sums this replica has
  // finished; the owners wait for it before their backward.
  alignas(64) std::atomic<uint64_t> owned_sums_step{0};
  Arena arena;

  // chunk_rows: per forward/backward chunk; share_rows: a thread's share of a batch (0: no
  // training). owned_side: plan for NcfShareRows::share_owned_rows.
  NcfReplica(const models::Ncf<float>::Config& cfg, Index chunk_rows, Index merge_rows,
             int optim_slots, bool dense_tables, const Arena* source, Index share_rows = 0,
             int owned_side = -1)
      : model(cfg), rows(model) {
    Planner planner;
    planner.set_optim_slots(source ? 0 : optim_slots);
    model.plan(planner, chunk_rows);
    if (share_rows > 0) {
      rows.plan(planner, share_rows, owned_side);
      planner.buffer(share_users, Region::kScratch, "share.users", {share_rows});
      planner.buffer(share_items, Region::kScratch, "share.items", {share_rows});
      planner.buffer(share_ctx_rows, Region::kScratch, "share.context_rows", {share_rows});
      planner.buffer(share_labels, Region::kScratch, "share.labels", {share_rows});
      planner.buffer(bins, Region::kScratch, "share.bins",
                     {std::max(cfg.num_users, cfg.num_items)});
    }
    planner.buffer(users, Region::kActivations, "batch.users", {chunk_rows});
    planner.buffer(items, Region::kActivations, "batch.items", {chunk_rows});
    planner.buffer(context, Region::kActivations, "batch.context",
                   {chunk_rows, std::max<Index>(cfg.context, 1)});
    const size_t nt = model.tables().size();
    merge_ids.resize(nt);
    merge_grad.resize(nt);
    if (merge_rows > 0 && !dense_tables) {
      for (size_t t = 0; t < nt; ++t) {
        const auto& e = model.tables()[t];
        const Index m = std::min(merge_rows, e.layer.cfg.num_embeddings);
        planner.buffer(merge_ids[t], Region::kScratch, e.name + ".merge_ids",
                       {e.layer.cfg.num_embeddings});
        planner.buffer(merge_grad[t], Region::kScratch, e.name + ".merge_grad",
                       {m, e.layer.cfg.embedding_dim});
        grad_ptrs.resize(std::max(grad_ptrs.size(), static_cast<size_t>(m)));
      }
    }
    if (merge_rows > 0 && !dense_tables && model.has_mlp() && cfg.factored_first_layer) {
      for (int side = 0; side < 2; ++side) {
        const auto rows_of_side = static_cast<size_t>(side == 0 ? cfg.num_users : cfg.num_items);
        SharedRows& sr = shared[side];
        sr.stamp.assign(rows_of_side, 0);
        sr.merged.assign(rows_of_side, -1);
        sr.mlp.assign(rows_of_side, nullptr);
        sr.gmf.assign(rows_of_side, nullptr);
        grad_ptrs.resize(std::max(grad_ptrs.size(), rows_of_side));
        gmf_ptrs.resize(std::max(gmf_ptrs.size(), rows_of_side));
      }
    }
    if (dense_tables && source == nullptr) {
      all_ids.resize(nt);
      for (size_t t = 0; t < nt; ++t) {
        const auto& e = model.tables()[t];
        planner.buffer(all_ids[t], Region::kScratch, e.name + ".all_ids",
                       {e.layer.cfg.num_embeddings});
      }
    }
    arena = source ? Arena(std::move(planner), *source) : Arena(std::move(planner));
    for (auto& ids : all_ids)
      for (Index i = 0; i < ids.view.numel(); ++i) ids.view.data[i] = static_cast<int32_t>(i);
  }
};

using ReplicaList = std::vector<std::unique_ptr<NcfReplica>>;

// Leave-one-out HR@k / NDCG@k of the replicas' model (replica 0's params), one replica per
// thread (ncf_evaluator.cpp).
NcfMetrics evaluate_replicas(ThreadPool& pool, ReplicaList& reps, const data::NcfTestSet& test,
                             Index k, const float* user_context);

}  // namespace shoal::train::detail
