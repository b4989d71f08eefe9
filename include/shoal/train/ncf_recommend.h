// Top-K recommendation with a trained NCF (NcfTrainer::top_k, NcfEvaluator::top_k): for each
// request row, every candidate item (the whole catalog, or a given list) is scored by the
// model's forward in chunks of the replicas' evaluation rows, the row's excluded items (its
// training positives, to recommend only new ones) skipped, and the K best kept. Request rows
// are split between the pool's threads, each on its own replica (shared weights), so a
// request uses every core. The order is by logit, descending, ties to the smaller item row:
// deterministic for any thread count. Contextual models take one context row per request row
// (the caller's per-user or per-request features; the trainer's default is each user's mean
// training context).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::train {

struct NcfTopKRequest {
  std::span<const int32_t> users;         // [n] user rows
  std::span<const int32_t> candidates;    // item rows to rank; empty: 0..num_items-1
  std::span<const int64_t> seen_offsets;  // [n + 1], or empty: nothing excluded
  std::span<const int32_t> seen_items;    // row r excludes [seen_offsets[r], seen_offsets[r+1])
  const float* context = nullptr;         // [n, C] (C = the model's context columns)
  Index k = 10;
};

struct NcfTopK {
  Index k = 0;                 // slots per request row
  std::vector<int32_t> items;  // [n, k] best first; -1 past the row's count
  std::vector<float> logits;   // [n, k]
  std::vector<Index> counts;   // [n]: min(k, candidates not excluded)
};

}  // namespace shoal::train
