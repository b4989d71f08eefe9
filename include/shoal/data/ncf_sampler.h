// Per-epoch NCF training instances: each positive p contributes 1 + k instances, the positive
// (label 1) and k negatives (label 0) drawn uniformly from the items that are not the user's
// training positives (NCF's get_train_instances: uniform over [0, V) with rejection, the same
// distribution). A negative's context row is its positive's.
//
// Determinism: the draws of instance c = p·(1 + k) + j (j ≥ 1) come from
// Philox(seed, kNegativeStream).block(epoch·2^32 + t, c), so an instance's item depends only
// on (seed, epoch, c), never on threads. Two ways, by user:
//   - most users: rejection. Candidates ⌊w·V / 2^32⌋ for the words w of blocks t = 0, 1, ...
//     (lanes in order), the first that is not a positive; positives looked up in a per-user
//     bitset when U·V bits fit in kMaxBitsetBytes (binary search otherwise);
//   - a user with positives among half the items or more (draws_from_complement): the sorted
//     list of the n other items, entry ⌊w·n / 2^32⌋ for block t = 0's first word w. On data of
//     the contextual user's shape every user has 63–72% of the items as positives: rejection
//     tried 3.1 candidates per negative, a fifth of the negatives needed a second block, and
//     an epoch's sampling took 0.8 s on one core, against 0.53 s with the lists.
//
// The epoch's order is a uniform random permutation drawn in parallel, identical for every
// thread count (a two-level "scatter, then shuffle each bucket" permutation, Rao/Sandelius):
//   1. instance c goes to bucket b(c) ∈ [0, B), uniform and independent, from
//      Philox(seed, kBucketStream).block(epoch, c / 4) lane c % 4 (B = clamp(N / 2^16, 1, 4096));
//   2. the buckets are laid out in order, each keeping its instances in ascending c (a stable
//      scatter: per fixed 2^16-instance chunk counts, then prefix sums);
//   3. each bucket is Fisher-Yates shuffled by its own stream (seed, epoch, bucket).
// A uniform bucket assignment followed by independent uniform shuffles within the buckets is
// an exactly uniform permutation of [0, N): for any target permutation π, the probability is
// Σ over bucket sizes of P(sizes) · multinomial-count⁻¹ · Π 1/n_b! = 1/N!. The steps split
// over chunks and buckets, never over threads, so the result does not depend on them.
// Legend: P positives, k negatives per positive, N = P·(1 + k) instances, V items, B buckets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "shoal/core/huge_pages.h"
#include "shoal/core/thread_pool.h"
#include "shoal/data/ncf.h"

namespace shoal::data {

namespace detail {
// Philox-4x32-10 (Random123's, as shoal::Philox::block) of kPhiloxLanes counters at once:
// ctr[w][l] is word w of lane l's counter, out[w][l] word w of lane l's block; key = (seed low,
// seed high) as Philox. With AVX2 the lanes run in vector registers (the sampler's negatives,
// buckets and shuffles draw tens of millions of blocks per epoch); bitwise equal to the
// scalar blocks.
inline constexpr size_t kPhiloxLanes = 32;
void philox4x32_lanes(uint64_t seed, const uint32_t (&ctr)[4][kPhiloxLanes],
                      uint32_t (&out)[4][kPhiloxLanes]);
}  // namespace detail

class NcfSampler {
 public:
  static constexpr uint64_t kNegativeStream = 0x4e454700;  // "NEG"
  static constexpr uint64_t kShuffleStream = 0x53485546;   // "SHUF"
  static constexpr uint64_t kBucketStream = 0x42554b54;    // "BUKT"
  static constexpr size_t kMaxBitsetBytes = size_t{64} << 20;
  static constexpr Index kChunk = Index{1} << 16;  // scatter chunk (instances)

  // Builds the per-user sorted positive lists. Throws if some user has every item as a
  // positive (no negative could ever be drawn).
  NcfSampler(const NcfPositives& positives, int negatives, uint64_t seed);

  Index instances() const { return n_; }
  // Bytes the sampler holds for `positives` with `negatives` per positive (its per-epoch
  // instance arrays dominate: 22 bytes per instance), without building it.
  static size_t planned_bytes(const NcfPositives& positives, int negatives);
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

  // True if item i is a training positive of user u (bitset, or binary search in u's list).
  bool is_positive(int32_t u, int32_t i) const {
    if (!bits_.empty()) {
      const uint64_t w = bits_[static_cast<size_t>(u) * words_ + static_cast<size_t>(i >> 6)];
      return (w >> (i & 63)) & 1u;
    }
    return is_positive_sorted(u, i);
  }
  // Whether user u's negatives are drawn from the list of its non-positive items (see above).
  bool draws_from_complement(int32_t u) const {
    const auto cu = static_cast<size_t>(u);
    return complement_offsets_[cu + 1] > complement_offsets_[cu];
  }
  Index buckets() const { return buckets_; }
  // The item of canonical instance c for this (seed, epoch): exposed for tests.
  int32_t canonical_item(int epoch, Index c) const;

 private:
  bool is_positive_sorted(int32_t u, int32_t i) const;
  // The item of negative instance c of user u (canonical_item without the lookups), trying
  // the candidates of blocks t = first_block, first_block + 1, ... (a user drawing from its
  // list of other items: block t = 0's first word, whatever first_block).
  int32_t negative_item(int epoch, Index c, int32_t u, uint64_t first_block = 0) const;

  const NcfPositives& pos_;
  int k_;
  uint64_t seed_;
  Index n_ = 0;
  std::vector<int64_t> user_offsets_;  // [U + 1] into user_items_
  std::vector<int32_t> user_items_;    // sorted per user
  std::vector<uint64_t> bits_;         // [U, words_] positives bitset (empty: too large)
  // The non-positive items of the users with positives among half the items or more, sorted
  // per user; [U + 1] offsets into it (an empty range: the user's negatives use rejection).
  std::vector<int32_t> complement_;
  std::vector<int64_t> complement_offsets_;
  size_t words_ = 0;
  Index buckets_ = 1;
  // The epoch's arrays (N = 18.2M instances at the user's scale) are written and read at
  // random positions while drawing: huge pages (core/huge_pages.h).
  HugePageVector<uint16_t> bucket_of_;  // [N] b(c) of this epoch
  std::vector<int64_t> chunk_counts_;   // [chunks, B] counts, then start offsets
  std::vector<int64_t> bucket_start_;   // [B + 1]
  HugePageVector<uint32_t> order_;      // [N] shuffled canonical ids
  HugePageVector<int32_t> users_, items_, ctx_rows_;
  HugePageVector<float> labels_;
};

}  // namespace shoal::data
