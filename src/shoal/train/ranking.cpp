#include "shoal/train/ranking.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "shoal/core/error.h"

namespace shoal::train {

namespace {
void check_offsets(std::span<const int64_t> off, size_t items, const char* what) {
  SHOAL_CHECK(!off.empty() && off.front() == 0, "{} offsets must start at 0", what);
  for (size_t u = 1; u < off.size(); ++u)
    SHOAL_CHECK(off[u] >= off[u - 1], "{} offsets decrease at row {}", what, u);
  SHOAL_CHECK(static_cast<size_t>(off.back()) == items, "{} offsets end at {}, {} items", what,
              off.back(), items);
}
}  // namespace

RankingMetrics ranking_metrics(std::span<const int64_t> rec_offsets,
                               std::span<const int32_t> rec_items,
                               std::span<const int64_t> truth_offsets,
                               std::span<const int32_t> truth_items, Index k) {
  SHOAL_CHECK(k > 0, "top-k must be > 0, got {}", k);
  SHOAL_CHECK(rec_offsets.size() == truth_offsets.size(),
              "{} recommendation rows but {} truth rows", rec_offsets.size() - 1,
              truth_offsets.size() - 1);
  check_offsets(rec_offsets, rec_items.size(), "recommendation");
  check_offsets(truth_offsets, truth_items.size(), "truth");
  RankingMetrics m;
  std::vector<int32_t> truth, seen;
  for (size_t u = 0; u + 1 < truth_offsets.size(); ++u) {
    truth.assign(truth_items.begin() + truth_offsets[u],
                 truth_items.begin() + truth_offsets[u + 1]);
    std::sort(truth.begin(), truth.end());
    truth.erase(std::unique(truth.begin(), truth.end()), truth.end());
    if (truth.empty()) continue;
    ++m.users;
    const int64_t b = rec_offsets[u];
    const int64_t n = std::min<int64_t>(rec_offsets[u + 1] - b, k);
    double hits = 0, dcg = 0, ap = 0;
    seen.clear();
    for (int64_t j = 0; j < n; ++j) {
      const int32_t item = rec_items[static_cast<size_t>(b + j)];
      if (std::find(seen.begin(), seen.end(), item) != seen.end()) continue;
      seen.push_back(item);
      if (!std::binary_search(truth.begin(), truth.end(), item)) continue;
      hits += 1;
      dcg += 1.0 / std::log2(static_cast<double>(j) + 2);
      ap += hits / static_cast<double>(j + 1);
    }
    const Index ideal = std::min<Index>(static_cast<Index>(truth.size()), k);
    double idcg = 0;
    for (Index j = 0; j < ideal; ++j) idcg += 1.0 / std::log2(static_cast<double>(j) + 2);
    m.hr += hits > 0 ? 1.0 : 0.0;
    m.precision += hits / static_cast<double>(k);
    m.recall += hits / static_cast<double>(truth.size());
    m.ndcg += dcg / idcg;
    m.map += ap / static_cast<double>(ideal);
  }
  if (m.users > 0) {
    const auto n = static_cast<double>(m.users);
    m.hr /= n;
    m.precision /= n;
    m.recall /= n;
    m.ndcg /= n;
    m.map /= n;
  }
  return m;
}

}  // namespace shoal::train
