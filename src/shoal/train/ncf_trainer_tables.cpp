#include <algorithm>
#include <limits>

#include "ncf_replica.h"
#include "shoal/core/prefetch.h"

namespace shoal::train {

namespace {
// dst[0, n) += src[0, n): a row gradient summed into another (the replicas' sums).
void add_row(float* __restrict dst, const float* __restrict src, Index n) {
  for (Index j = 0; j < n; ++j) dst[j] += src[j];
}

}  // namespace

// Sparse Adam on side s's rows from their compact MLP and GMF gradients.
void NcfTrainer::update_rows(int s, const NcfShareRows<float>::RowGrads& g) {
  auto& model = replicas_[0]->model;
  using Rows = optim::SparseAdam<float>::TableRows;
  const Rows tables[] = {
      {&model.mlp_table(s).layer.p.weight, g.grads},
      {model.has_gmf() ? &model.gmf_table(s).layer.p.weight : nullptr, g.gmf_grads}};
  sparse_adam_.update_rows(replicas_[0]->arena, g.rows,
                           std::span<const Rows>(tables, model.has_gmf() ? 2 : 1));
}

// Thread tid's share of every table's rows: the replicas' row grads of the touched rows summed
// in replica order and the rows updated. Lazy mode only reads the replicas' buffers (each
// replica clears its own rows at its next step); a user table's touched rows are the thread's
// own (its replica alone touched them), an item table's are shared out by count;
// dense mode takes a slice of row ids, sums into replica 0's buffer and clears what it summed.
void NcfTrainer::update_tables(int tid, TableSet set) {
  detail::NcfReplica& mine = *replicas_[static_cast<size_t>(tid)];
  detail::NcfReplica& src = *replicas_[0];
  const int nt = pool_.size();
  auto& tables = src.model.tables();
  constexpr int kMaxReplicas = 256;
  SHOAL_DCHECK(nt <= kMaxReplicas);
  MatView<float> grads[kMaxReplicas];
  uint8_t* touched[kMaxReplicas];
  const bool dense = cfg_.dense_embedding_adam;
  for (size_t t = 0; t < tables.size(); ++t) {
    const int side = tables[t].is_user ? 0 : 1;
    if ((set == TableSet::kSplitSide && side != split_side_) ||
        (set == TableSet::kOtherSide && side == split_side_) || src.rows.hands_over_table(t))
      continue;
    const auto& emb = tables[t].layer;
    const Index d = emb.cfg.embedding_dim;
    for (int r = 0; r < nt; ++r) {
      const auto tg = replicas_[static_cast<size_t>(r)]->model.table_grad(t);
      grads[r] = tg.grad;
      touched[r] = tg.touched;
    }
    if (dense) {
      // torch.optim.Adam on the whole slice: untouched rows get a zero gradient. Slices of 64
      // rows: no cache line of flags (or of row grads) is written by two threads.
      const Range slice = split_range(emb.cfg.num_embeddings, tid, nt, 64);
      if (slice.size() == 0) continue;
      const MatView<float> g0 = grads[0];
      for (Index row = slice.begin; row < slice.end; ++row) {
        for (int r = 1; r < nt; ++r) {
          if (!touched[r][row]) continue;
          float* __restrict dst = g0.row(row);
          float* __restrict g = grads[r].row(row);
          add_row(dst, g, d);
          std::fill_n(g, d, 0.0f);
          touched[r][row] = 0;
        }
      }
      sparse_adam_.update_rows(src.arena, emb.p.weight,
                               std::span<const int32_t>(src.all_ids[t].view.data + slice.begin,
                                                        static_cast<size_t>(slice.size())),
                               ConstMat<float>(g0.row(slice.begin), slice.size(), d));
      std::fill_n(g0.row(slice.begin), slice.size() * d, 0.0f);
      std::fill_n(touched[0] + slice.begin, slice.size(), uint8_t{0});
      continue;
    }
    // Lazy: read only (each replica clears its own rows at its next step,
    // Ncf::clear_table_grads). A thread updates the touched rows it owns (owned_), in
    // ascending order: always the same rows, so a row's weights and moments
    // stay in its owner's cache from step to step (a split of the touched list by count moved
    // them between cores with the list). A row touched by one replica is updated straight from
    // that replica's buffer; only rows touched by several are summed (in replica order) into
    // the thread's scratch first.
    const Index table_rows = emb.cfg.num_embeddings;
    int32_t* ids = mine.merge_ids[t].view.data;  // [table_rows]
    Index total = 0;
    // The split side's rows were touched by one replica only (open_share), so this thread
    // updates the rows its own replica touched, from its own buffer; the same holds trivially
    // on one thread.
    const bool own = own_side(side);
    const std::vector<int32_t>& owned = owned_[side][static_cast<size_t>(tid)];
    // Branch-free: most rows are touched, at random.
    if (own) {
      const uint8_t* f = touched[tid];
      for (Index row = 0; row < table_rows; ++row) {
        ids[total] = static_cast<int32_t>(row);
        total += f[row];
      }
    } else {
      for (const int32_t row : owned) {
        unsigned any = 0;
        for (int r = 0; r < nt; ++r) any |= touched[r][row];
        ids[total] = row;
        total += any;
      }
    }
    const Range share{0, total};
    if (share.size() == 0) continue;
    const float** ptrs = mine.grad_ptrs.data();
    if (own) {
      for (Index k = share.begin; k < share.end; ++k)
        ptrs[k - share.begin] = grads[tid].row(ids[k]);
    } else {
      const MatView<float> merged = mine.merge_grad[t].mat();
      // The rows ascend through the thread's blocks: where they are dense, the hardware
      // prefetchers follow them (core/prefetch.h).
      constexpr Index kAhead = 8;
      const bool prefetch = !dense_rows(share.size(), static_cast<Index>(owned.size()));
      for (Index k = share.begin; k < share.end; ++k) {
        if (prefetch && k + kAhead < share.end) {
          const int32_t ahead = ids[k + kAhead];
          for (int r = 0; r < nt; ++r)
            if (touched[r][ahead]) prefetch_span(grads[r].row(ahead), d);
        }
        const int32_t row = ids[k];
        const float* single = nullptr;
        float* __restrict dst = nullptr;
        for (int r = 0; r < nt; ++r) {
          if (!touched[r][row]) continue;
          const float* __restrict g = grads[r].row(row);
          if (dst != nullptr) {
            add_row(dst, g, d);
          } else if (single == nullptr) {
            single = g;
          } else {
            dst = merged.row(k - share.begin);
            for (Index j = 0; j < d; ++j) dst[j] = single[j] + g[j];
          }
        }
        ptrs[k - share.begin] = dst != nullptr ? dst : single;
      }
    }
    const auto count = static_cast<size_t>(share.size());
    sparse_adam_.update_rows(src.arena, emb.p.weight,
                             std::span<const int32_t>(ids + share.begin, count),
                             std::span<const float* const>(ptrs, count));
  }
}

int NcfTrainer::table_index(int s, bool gmf) const {
  auto& model = replicas_[0]->model;
  const auto& table = gmf ? model.gmf_table(s) : model.mlp_table(s);
  return static_cast<int>(&table - model.tables().data());
}

// The handed-over rows of the sides several replicas touch (several threads: the side the
// shares are not cut by, or both for contiguous shares, less the side by owner). Each thread
// takes the rows it owns from every replica's
// compact lists, sums a row's gradients in replica order (a row one replica touched is read in
// place), and updates the MLP and GMF rows in one pass, in ascending order. The lists are only
// read; each replica overwrites its own at its next share. The sums are those update_tables
// forms from the tables' grad buffers, in the same order, so the weights are the same bits.
void NcfTrainer::update_shared_rows(int tid) {
  detail::NcfReplica& mine = *replicas_[static_cast<size_t>(tid)];
  auto& model = replicas_[0]->model;
  for (int s = 0; s < 2; ++s) {
    if (own_side(s) || !replicas_[0]->rows.hands_over(s) || s == owned_side_) continue;
    const std::vector<uint16_t>& owner = owner_[s];
    detail::NcfReplica::SharedRows& sr = mine.shared[s];
    if (sr.gen == std::numeric_limits<int32_t>::max()) {
      std::fill(sr.stamp.begin(), sr.stamp.end(), 0);
      sr.gen = 0;
    }
    const int32_t gen = ++sr.gen;
    const bool gmf = model.has_gmf();
    const auto& mlp_table = model.mlp_table(s).layer;
    const Index dm = mlp_table.cfg.embedding_dim,
                dg = gmf ? model.gmf_table(s).layer.cfg.embedding_dim : 0;
    const MatView<float> merged_mlp =
        mine.merge_grad[static_cast<size_t>(table_index(s, false))].mat();
    const MatView<float> merged_gmf =
        gmf ? mine.merge_grad[static_cast<size_t>(table_index(s, true))].mat() : MatView<float>{};
    int32_t summed = 0;
    for (const auto& rep : replicas_) {
      if (!rep->handed_valid) continue;
      const auto g = rep->rows.row_grads(s);
      for (size_t k = 0; k < g.rows.size(); ++k) {
        const auto row = static_cast<size_t>(g.rows[k]);
        if (owner[row] != tid) continue;
        const float* gm = g.grads.row(static_cast<Index>(k));
        const float* gg = gmf ? g.gmf_grads.row(static_cast<Index>(k)) : nullptr;
        if (sr.stamp[row] != gen) {
          sr.stamp[row] = gen;
          sr.mlp[row] = gm;
          sr.gmf[row] = gg;
          sr.merged[row] = -1;
          continue;
        }
        // Seen in an earlier replica: on the second sighting the first replica's gradients are
        // copied into this thread's scratch; every later replica's are added there, in order.
        if (sr.merged[row] < 0) {
          sr.merged[row] = summed++;
          float* dst = merged_mlp.row(sr.merged[row]);
          std::copy_n(sr.mlp[row], dm, dst);
          sr.mlp[row] = dst;
          if (gmf) {
            float* dst_gmf = merged_gmf.row(sr.merged[row]);
            std::copy_n(sr.gmf[row], dg, dst_gmf);
            sr.gmf[row] = dst_gmf;
          }
        }
        add_row(merged_mlp.row(sr.merged[row]), gm, dm);
        if (gmf) add_row(merged_gmf.row(sr.merged[row]), gg, dg);
      }
    }
    // The thread's rows in ascending order (a sweep of its blocks of the table).
    int32_t* ids = mine.merge_ids[static_cast<size_t>(table_index(s, false))].view.data;
    const float** pm = mine.grad_ptrs.data();
    const float** pg = mine.gmf_ptrs.data();
    Index count = 0;
    for (const int32_t row : owned_[s][static_cast<size_t>(tid)]) {
      const auto r = static_cast<size_t>(row);
      ids[count] = row;
      pm[count] = sr.mlp[r];
      pg[count] = sr.gmf[r];
      count += sr.stamp[r] == gen ? 1 : 0;
    }
    if (count == 0) continue;
    const auto n = static_cast<size_t>(count);
    using Rows = optim::SparseAdam<float>::TableRows;
    const Rows tables[] = {
        {.table = &mlp_table.p.weight, .row_ptrs = std::span<const float* const>(pm, n)},
        {.table = gmf ? &model.gmf_table(s).layer.p.weight : nullptr,
         .row_ptrs = std::span<const float* const>(pg, n)}};
    sparse_adam_.update_rows(replicas_[0]->arena, std::span<const int32_t>(ids, n),
                             std::span<const Rows>(tables, gmf ? 2 : 1));
  }
}

}  // namespace shoal::train
