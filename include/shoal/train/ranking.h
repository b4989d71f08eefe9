// Full-ranking top-K metrics of a recommender (every catalog item ranked, the user's training
// items excluded before ranking; see NcfTrainer::top_k), the standard since sampled protocols
// were shown to reorder models (Krichene & Rendle, KDD 2020). Per user u with relevant items
// T_u (its held-out positives) and ranked recommendations r_1..r_K (hit_j = [r_j ∈ T_u]):
//   HR@K        = [Σ_j hit_j > 0]
//   Precision@K = Σ_j hit_j / K
//   Recall@K    = Σ_j hit_j / |T_u|
//   NDCG@K      = Σ_j hit_j / log2(j + 1)  ÷  Σ_{j ≤ min(|T_u|, K)} 1 / log2(j + 1)
//   MAP@K       = Σ_j hit_j · (Σ_{i ≤ j} hit_i / j)  ÷  min(|T_u|, K)
// each averaged over the users with at least one relevant item (a user with no
// recommendations scores 0). A list longer than K is cut at K; a repeated item counts once.
// With one held-out item per user, HR@K and Recall@K agree and NDCG@K is the sampled protocol's
// ln 2 / ln(rank + 2) over the whole catalog.
#pragma once

#include <cstdint>
#include <span>

#include "shoal/core/tensor.h"

namespace shoal::train {

struct RankingMetrics {
  double hr = 0, ndcg = 0, precision = 0, recall = 0, map = 0;
  Index users = 0;  // users with at least one relevant item
};

// Users as rows of two CSR lists over the same user rows [0, n): user u's recommendations, best
// first, are rec_items[rec_offsets[u], rec_offsets[u + 1]), its relevant items
// truth_items[truth_offsets[u], truth_offsets[u + 1]). Offsets have n + 1 entries, ascending.
RankingMetrics ranking_metrics(std::span<const int64_t> rec_offsets,
                               std::span<const int32_t> rec_items,
                               std::span<const int64_t> truth_offsets,
                               std::span<const int32_t> truth_items, Index k);

}  // namespace shoal::train
