#include "shoal/data/ncf_sampler.h"

#include <algorithm>

#include "shoal/core/rng.h"

namespace shoal::data {

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
  for (Index i = 0; i < p; ++i) {
    const auto u = static_cast<size_t>(positives.users[static_cast<size_t>(i)]);
    user_items_[static_cast<size_t>(fill[u]++)] = positives.items[static_cast<size_t>(i)];
  }
  for (size_t u = 0; u < nu; ++u) {
    auto b = user_items_.begin() + user_offsets_[u], e = user_items_.begin() + user_offsets_[u + 1];
    std::sort(b, e);
    const auto distinct = std::unique(b, e) - b;
    SHOAL_CHECK(k_ == 0 || distinct < positives.num_items,
                "{}: user {} has every one of the {} items as a positive; no negative can be "
                "sampled",
                positives.source, u, positives.num_items);
  }
  order_.resize(static_cast<size_t>(n_));
  users_.resize(static_cast<size_t>(n_));
  items_.resize(static_cast<size_t>(n_));
  ctx_rows_.resize(static_cast<size_t>(n_));
  labels_.resize(static_cast<size_t>(n_));
}

bool NcfSampler::is_positive(int32_t u, int32_t i) const {
  const auto b = user_items_.begin() + user_offsets_[static_cast<size_t>(u)];
  const auto e = user_items_.begin() + user_offsets_[static_cast<size_t>(u) + 1];
  return std::binary_search(b, e, i);
}

int32_t NcfSampler::canonical_item(int epoch, Index c) const {
  const Index p = c / (1 + k_);
  const int32_t u = pos_.users[static_cast<size_t>(p)];
  if (c % (1 + k_) == 0) return pos_.items[static_cast<size_t>(p)];
  const Philox rng(seed_, kNegativeStream);
  const auto v = static_cast<uint64_t>(pos_.num_items);
  for (uint64_t t = 0;; ++t) {
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
  const auto n = static_cast<size_t>(n_);
  for (size_t i = 0; i < n; ++i) order_[i] = static_cast<uint32_t>(i);
  RngStream rng(seed_, kShuffleStream + static_cast<uint64_t>(epoch));
  for (size_t i = n; i > 1; --i)
    std::swap(order_[i - 1], order_[rng.below(static_cast<uint32_t>(i))]);
  const Index group = 1 + k_;
  pool.run([&](int tid) {
    const Range r = split_range(n_, tid, pool.size(), 256);
    for (Index i = r.begin; i < r.end; ++i) {
      const Index c = order_[static_cast<size_t>(i)];
      const Index p = c / group;
      users_[static_cast<size_t>(i)] = pos_.users[static_cast<size_t>(p)];
      items_[static_cast<size_t>(i)] = canonical_item(epoch, c);
      ctx_rows_[static_cast<size_t>(i)] = static_cast<int32_t>(p);
      labels_[static_cast<size_t>(i)] = c % group == 0 ? 1.0f : 0.0f;
    }
  });
}

}  // namespace shoal::data
