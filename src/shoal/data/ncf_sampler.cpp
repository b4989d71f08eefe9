#include "shoal/data/ncf_sampler.h"

#include <algorithm>
#include <bit>

#include "shoal/core/rng.h"
#include "shoal/kernels/philox.h"

namespace shoal::data {

namespace detail {

// The shared vector Philox (kernels/philox.h): one generator for dropout and the sampler.
static_assert(kPhiloxLanes == kernels::kPhiloxLanes);
void philox4x32_lanes(uint64_t seed, const uint32_t (&ctr)[4][kPhiloxLanes],
                      uint32_t (&out)[4][kPhiloxLanes]) {
  kernels::philox4x32_lanes(seed, ctr, out);
}

}  // namespace detail

namespace {

// RngStream(seed, stream)'s sequence of 32-bit draws (blocks (0, 0), (1, 0), ... of
// Philox(seed, stream), words in order), generated kPhiloxLanes blocks at a time, and its
// below().
class BlockStream {
 public:
  BlockStream(uint64_t seed, uint64_t stream)
      : seed_(seed), stream_(static_cast<uint32_t>(stream)) {}
  uint32_t next_u32() {
    if (used_ == kWords) refill();
    return buf_[used_++];
  }
  // RngStream::below, draw for draw.
  uint32_t below(uint32_t n) {
    return uniform_below(n, [this] { return next_u32(); });
  }

 private:
  static constexpr size_t kWords = 4 * detail::kPhiloxLanes;
  void refill() {
    uint32_t ctr[4][detail::kPhiloxLanes], out[4][detail::kPhiloxLanes];
    for (size_t l = 0; l < detail::kPhiloxLanes; ++l) {
      const uint64_t k = counter_ + l;
      ctr[0][l] = static_cast<uint32_t>(k);
      ctr[1][l] = static_cast<uint32_t>(k >> 32);
      ctr[2][l] = 0;
      ctr[3][l] = stream_;
    }
    detail::philox4x32_lanes(seed_, ctr, out);
    for (size_t l = 0; l < detail::kPhiloxLanes; ++l)
      for (size_t w = 0; w < 4; ++w) buf_[4 * l + w] = out[w][l];
    counter_ += detail::kPhiloxLanes;
    used_ = 0;
  }

  uint64_t seed_;
  uint32_t stream_;
  uint64_t counter_ = 0;
  uint32_t buf_[kWords] = {};
  size_t used_ = kWords;
};

}  // namespace

NcfSampler::NcfSampler(const NcfPositives& positives, int negatives, uint64_t seed)
    : pos_(positives), k_(negatives), seed_(seed) {
  SHOAL_CHECK(negatives >= 0, "negatives per positive must be >= 0, got {}", negatives);
  const Index p = positives.size();
  n_ = p * (1 + k_);
  SHOAL_CHECK(n_ < (Index{1} << 32), "{} instances per epoch exceed 2^32", n_);
  SHOAL_CHECK(positives.num_items > 0 && positives.num_items < (Index{1} << 31),
              "bad item count {}", positives.num_items);
  const auto nu = static_cast<size_t>(positives.num_users);
  user_offsets_.assign(nu + 1, 0);
  for (int32_t u : positives.users) ++user_offsets_[static_cast<size_t>(u) + 1];
  for (size_t u = 0; u < nu; ++u) user_offsets_[u + 1] += user_offsets_[u];
  user_items_.resize(static_cast<size_t>(p));
  std::vector<int64_t> fill(user_offsets_.begin(), user_offsets_.end() - 1);
  complement_offsets_.assign(nu + 1, 0);
  for (Index i = 0; i < p; ++i) {
    const auto u = static_cast<size_t>(positives.users[static_cast<size_t>(i)]);
    user_items_[static_cast<size_t>(fill[u]++)] = positives.items[static_cast<size_t>(i)];
  }
  for (size_t u = 0; u < nu; ++u) {
    auto b = user_items_.begin() + user_offsets_[u], e = user_items_.begin() + user_offsets_[u + 1];
    std::sort(b, e);
    const auto last = std::unique(b, e);
    // The list keeps its length (the offsets are fixed): pad with the largest id so that it
    // stays sorted for the binary search (unique leaves the tail unspecified).
    if (last != b) std::fill(last, e, *(last - 1));
    const auto distinct = last - b;
    SHOAL_CHECK(k_ == 0 || distinct < positives.num_items,
                "{}: user {} has every one of the {} items as a positive; no negative can be "
                "sampled",
                positives.source, u, positives.num_items);
    // A user with positives among half the items or more draws from the list of the others
    // (no more entries than the user's positives, so the lists hold at most P ids).
    if (2 * distinct >= positives.num_items) {
      auto next = b;
      for (int32_t item = 0; item < positives.num_items; ++item) {
        if (next != last && *next == item) {
          ++next;
          continue;
        }
        complement_.push_back(item);
      }
    }
    complement_offsets_[u + 1] = static_cast<int64_t>(complement_.size());
  }
  const auto nv = static_cast<size_t>(positives.num_items);
  words_ = (nv + 63) / 64;
  if (nu * words_ * sizeof(uint64_t) <= kMaxBitsetBytes) {
    bits_.assign(nu * words_, 0);
    for (Index i = 0; i < p; ++i) {
      const auto u = static_cast<size_t>(positives.users[static_cast<size_t>(i)]);
      const auto it = static_cast<size_t>(positives.items[static_cast<size_t>(i)]);
      bits_[u * words_ + it / 64] |= uint64_t{1} << (it % 64);
    }
  }
  buckets_ = std::clamp<Index>(n_ >> 16, 1, 4096);
  const Index chunks = (n_ + kChunk - 1) / kChunk;
  bucket_of_.resize(static_cast<size_t>(n_));
  chunk_counts_.resize(static_cast<size_t>(chunks * buckets_));
  bucket_start_.resize(static_cast<size_t>(buckets_ + 1));
  order_.resize(static_cast<size_t>(n_));
  users_.resize(static_cast<size_t>(n_));
  items_.resize(static_cast<size_t>(n_));
  ctx_rows_.resize(static_cast<size_t>(n_));
  labels_.resize(static_cast<size_t>(n_));
}

size_t NcfSampler::planned_bytes(const NcfPositives& positives, int negatives) {
  const auto p = static_cast<size_t>(positives.size());
  const size_t n = p * static_cast<size_t>(1 + std::max(negatives, 0));
  const auto nu = static_cast<size_t>(positives.num_users);
  const size_t words = (static_cast<size_t>(positives.num_items) + 63) / 64;
  const size_t bits = nu * words * sizeof(uint64_t);
  const auto buckets = static_cast<size_t>(std::clamp<Index>(Index(n >> 16), 1, 4096));
  const size_t chunks = (n + size_t(kChunk) - 1) / size_t(kChunk);
  const size_t per_instance =
      sizeof(uint16_t) + sizeof(uint32_t) + 3 * sizeof(int32_t) +
      sizeof(float);  // bucket_of_, order_, users_/items_/ctx_rows_, labels_
  // user_items_ and its offsets, the complements (at most P ids, see the constructor) and
  // theirs.
  return n * per_instance + 2 * p * sizeof(int32_t) + 2 * (nu + 1) * sizeof(int64_t) +
         (bits <= kMaxBitsetBytes ? bits : 0) + (chunks * buckets + buckets + 1) * sizeof(int64_t);
}

bool NcfSampler::is_positive_sorted(int32_t u, int32_t i) const {
  const auto b = user_items_.begin() + user_offsets_[static_cast<size_t>(u)];
  const auto e = user_items_.begin() + user_offsets_[static_cast<size_t>(u) + 1];
  return std::binary_search(b, e, i);
}

int32_t NcfSampler::canonical_item(int epoch, Index c) const {
  const Index p = c / (1 + k_);
  if (c % (1 + k_) == 0) return pos_.items[static_cast<size_t>(p)];
  return negative_item(epoch, c, pos_.users[static_cast<size_t>(p)]);
}

int32_t NcfSampler::negative_item(int epoch, Index c, int32_t u, uint64_t first_block) const {
  const Philox rng(seed_, kNegativeStream);
  const auto cu = static_cast<size_t>(u);
  const int64_t c0 = complement_offsets_[cu], cn = complement_offsets_[cu + 1] - c0;
  if (cn > 0) {
    const uint32_t w = rng.block(static_cast<uint64_t>(epoch) << 32, static_cast<uint64_t>(c))[0];
    return complement_[static_cast<size_t>(c0 + ((static_cast<int64_t>(w) * cn) >> 32))];
  }
  const auto v = static_cast<uint64_t>(pos_.num_items);
  for (uint64_t t = first_block;; ++t) {
    const auto block =
        rng.block((static_cast<uint64_t>(epoch) << 32) | t, static_cast<uint64_t>(c));
    for (uint32_t w : block) {
      // Multiply-shift maps 32 random bits to [0, V); the bias is below V / 2^32.
      const auto item = static_cast<int32_t>((static_cast<uint64_t>(w) * v) >> 32);
      if (!is_positive(u, item)) return item;
    }
  }
}

void NcfSampler::draw_epoch(int epoch, ThreadPool& pool) {
  const int nt = pool.size();
  const Index nb = buckets_;
  const Index chunks = (n_ + kChunk - 1) / kChunk;
  const Philox bucket_rng(seed_, kBucketStream);
  const auto nb64 = static_cast<uint64_t>(nb);
  // 1. Bucket of every instance, counted per chunk.
  pool.run([&](int tid) {
    const Range cr = split_range(chunks, tid, nt);
    for (Index ch = cr.begin; ch < cr.end; ++ch) {
      int64_t* counts = chunk_counts_.data() + ch * nb;
      std::fill(counts, counts + nb, 0);
      const Index b0 = ch * kChunk, b1 = std::min(n_, b0 + kChunk);
      // kPhiloxLanes blocks (4 instances each) at a time, then the chunk's tail block by block.
      constexpr auto kLanes = detail::kPhiloxLanes;
      Index q = b0;
      uint32_t ctr[4][kLanes], out[4][kLanes];
      for (size_t l = 0; l < kLanes; ++l) {
        ctr[0][l] = static_cast<uint32_t>(epoch);
        ctr[1][l] = static_cast<uint32_t>(static_cast<uint64_t>(epoch) >> 32);
        ctr[3][l] = static_cast<uint32_t>(kBucketStream);
      }
      for (; q + 4 * static_cast<Index>(kLanes) <= b1; q += 4 * static_cast<Index>(kLanes)) {
        for (size_t l = 0; l < kLanes; ++l)
          ctr[2][l] = static_cast<uint32_t>(q / 4 + static_cast<Index>(l));
        detail::philox4x32_lanes(seed_, ctr, out);
        for (size_t l = 0; l < kLanes; ++l)
          for (size_t w = 0; w < 4; ++w) {
            const auto b = static_cast<uint16_t>((static_cast<uint64_t>(out[w][l]) * nb64) >> 32);
            bucket_of_[static_cast<size_t>(q) + 4 * l + w] = b;
            ++counts[b];
          }
      }
      for (; q < b1; q += 4) {  // kChunk is a multiple of 4
        const auto w = bucket_rng.block(static_cast<uint64_t>(epoch), static_cast<uint64_t>(q / 4));
        for (Index l = 0; l < 4 && q + l < b1; ++l) {
          const auto b = static_cast<uint16_t>(
              (static_cast<uint64_t>(w[static_cast<size_t>(l)]) * nb64) >> 32);
          bucket_of_[static_cast<size_t>(q + l)] = b;
          ++counts[b];
        }
      }
    }
  });
  // 2. Start offsets: bucket-major, chunk-minor (a stable scatter).
  int64_t off = 0;
  for (Index b = 0; b < nb; ++b) {
    bucket_start_[static_cast<size_t>(b)] = off;
    for (Index ch = 0; ch < chunks; ++ch) {
      int64_t& c = chunk_counts_[static_cast<size_t>(ch * nb + b)];
      const int64_t cnt = c;
      c = off;
      off += cnt;
    }
  }
  bucket_start_[static_cast<size_t>(nb)] = off;
  // The scatter carries each instance's user and its positive's item along: read here in
  // canonical order (each positive's pair five times in a row), they are streamed, where
  // step 3's shuffled order made them two random lines of the P-sized arrays per instance.
  const auto group = static_cast<Index>(1 + k_);
  pool.run([&](int tid) {
    const Range cr = split_range(chunks, tid, nt);
    for (Index ch = cr.begin; ch < cr.end; ++ch) {
      int64_t* pos = chunk_counts_.data() + ch * nb;
      const Index b0 = ch * kChunk, b1 = std::min(n_, b0 + kChunk);
      Index p = b0 / group, r = b0 % group;
      for (Index c = b0; c < b1; ++c) {
        const auto dst = static_cast<size_t>(pos[bucket_of_[static_cast<size_t>(c)]]++);
        order_[dst] = static_cast<uint32_t>(c);
        users_[dst] = pos_.users[static_cast<size_t>(p)];
        items_[dst] = pos_.items[static_cast<size_t>(p)];  // a negative's is drawn in step 3
        if (++r == group) {
          r = 0;
          ++p;
        }
      }
    }
  });
  // 3. Shuffle each bucket on its own stream, then materialise its instances.
  const auto group32 = static_cast<uint32_t>(1 + k_);
  const auto v = static_cast<uint64_t>(pos_.num_items);
  const Philox stream_rng(seed_, kShuffleStream);
  pool.run([&](int tid) {
    const Range br = split_range(nb, tid, nt);
    for (Index b = br.begin; b < br.end; ++b) {
      const auto key = stream_rng.block(static_cast<uint64_t>(epoch), static_cast<uint64_t>(b));
      BlockStream rng((static_cast<uint64_t>(key[0]) << 32) | key[1], kShuffleStream);
      const auto s0 = static_cast<size_t>(bucket_start_[static_cast<size_t>(b)]);
      const auto s1 = static_cast<size_t>(bucket_start_[static_cast<size_t>(b) + 1]);
      uint32_t* ord = order_.data() + s0;
      int32_t* us = users_.data() + s0;
      int32_t* its = items_.data() + s0;
      for (size_t i = s1 - s0; i > 1; --i) {
        const uint32_t j = rng.below(static_cast<uint32_t>(i));
        std::swap(ord[i - 1], ord[j]);
        std::swap(us[i - 1], us[j]);
        std::swap(its[i - 1], its[j]);
      }
      // The first block of candidates of kPhiloxLanes instances at a time (a positive's lane
      // is wasted); a negative whose 4 candidates are all positives goes on with the scalar
      // blocks t = 1, 2, ...
      constexpr auto kLanes = detail::kPhiloxLanes;
      uint32_t ctr[4][kLanes], out[4][kLanes];
      for (size_t l = 0; l < kLanes; ++l) {
        ctr[0][l] = 0;
        ctr[1][l] = static_cast<uint32_t>(epoch);
        ctr[3][l] = static_cast<uint32_t>(kNegativeStream);
      }
      for (size_t i0 = s0; i0 < s1; i0 += kLanes) {
        const size_t lanes = std::min<size_t>(kLanes, s1 - i0);
        for (size_t l = 0; l < kLanes; ++l) ctr[2][l] = l < lanes ? order_[i0 + l] : 0;
        detail::philox4x32_lanes(seed_, ctr, out);
        for (size_t l = 0; l < lanes; ++l) {
          const size_t i = i0 + l;
          // The positive and whether c is it from one 32-bit division (N < 2^32, checked).
          const uint32_t c = order_[i];
          const uint32_t p = c / group32;
          const bool positive = c - p * group32 == 0;
          const int32_t u = users_[i];
          int32_t item = -1;
          const auto pu = static_cast<size_t>(u);
          const int64_t c0 = complement_offsets_[pu], cn = complement_offsets_[pu + 1] - c0;
          if (positive) {
            item = items_[i];
          } else if (cn > 0) {
            // negative_item's pick from the user's complement: block t = 0's first word.
            item = complement_[static_cast<size_t>(c0 +
                                                   ((static_cast<int64_t>(out[0][l]) * cn) >> 32))];
          } else if (!bits_.empty()) {
            // negative_item's multiply-shift on block t = 0's words; the first candidate that
            // is not a positive, found without a branch per candidate (about 2 in 3 are
            // rejected on dense data, at random).
            int32_t cand[4];
            unsigned ok = 0;
            for (size_t w = 0; w < 4; ++w) {
              cand[w] = static_cast<int32_t>((static_cast<uint64_t>(out[w][l]) * v) >> 32);
              ok |= (is_positive(u, cand[w]) ? 0u : 1u) << w;
            }
            item = ok != 0 ? cand[std::countr_zero(ok)] : negative_item(epoch, c, u, 1);
          } else {
            for (size_t w = 0; w < 4 && item < 0; ++w) {
              const auto cand = static_cast<int32_t>((static_cast<uint64_t>(out[w][l]) * v) >> 32);
              if (!is_positive(u, cand)) item = cand;
            }
            if (item < 0) item = negative_item(epoch, c, u, 1);
          }
          items_[i] = item;
          ctx_rows_[i] = static_cast<int32_t>(p);
          labels_[i] = positive ? 1.0f : 0.0f;
        }
      }
    }
  });
}

}  // namespace shoal::data
