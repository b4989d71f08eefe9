// Per-epoch NCF training instances: each positive p contributes 1 + k instances, the positive
// (label 1) and k negatives (label 0) drawn uniformly from [0, V) with rejection of the user's
// training positives (NCF's get_train_instances). A negative's context row is its positive's.
//
// Determinism: the draws of instance c = p·(1 + k) + j (j ≥ 1) come from
// Philox(seed, kNegativeStream).block(epoch·2^32 + t, c) for t = 0, 1, ... (lanes in order),
// so an instance's item depends only on (seed, epoch, c), never on threads. The epoch's order
// is a Fisher-Yates shuffle driven by its own stream (seed, kShuffleStream + epoch).
// Legend: P positives, k negatives per positive, N = P·(1 + k) instances, V items.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "shoal/core/thread_pool.h"
#include "shoal/data/ncf.h"

namespace shoal::data {

class NcfSampler {
 public:
  static constexpr uint64_t kNegativeStream = 0x4e454700;  // "NEG"
  static constexpr uint64_t kShuffleStream = 0x53485546;   // "SHUF"

  // Builds the per-user sorted positive lists. Throws if some user has every item as a
  // positive (no negative could ever be drawn).
  NcfSampler(const NcfPositives& positives, int negatives, uint64_t seed);

  Index instances() const { return n_; }
  int negatives() const { return k_; }
  // Draws this epoch's instances (in parallel on `pool`, thread-count independent) and
  // shuffles them. No allocation after construction.
  void draw_epoch(int epoch, ThreadPool& pool);
  // The instances of the last draw_epoch, in training order. context_row indexes the
  // positives' context rows.
  std::span<const int32_t> users() const { return users_; }
  std::span<const int32_t> items() const { return items_; }
  std::span<const float> labels() const { return labels_; }
  std::span<const int32_t> context_rows() const { return ctx_rows_; }

  // True if item i is a training positive of user u (binary search in u's sorted list).
  bool is_positive(int32_t u, int32_t i) const;
  // The item of canonical instance c for this (seed, epoch): exposed for tests.
  int32_t canonical_item(int epoch, Index c) const;

 private:
  const NcfPositives& pos_;
  int k_;
  uint64_t seed_;
  Index n_ = 0;
  std::vector<int64_t> user_offsets_;  // [U + 1] into user_items_
  std::vector<int32_t> user_items_;    // sorted per user
  std::vector<uint32_t> order_;        // [N] shuffled canonical ids
  std::vector<int32_t> users_, items_, ctx_rows_;
  std::vector<float> labels_;
};

}  // namespace shoal::data
