// Top-K recommendation over the replicas (train/ncf_recommend.h).
#include "shoal/train/ncf_recommend.h"

#include <algorithm>
#include <vector>

#include "ncf_replica.h"

namespace shoal::train {

namespace detail {
namespace {

struct Scored {
  float logit;
  int32_t item;
};
// The ranking order: higher logit first, ties to the smaller item row.
bool better(const Scored& a, const Scored& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.item < b.item);
}

NcfTopK top_k_replicas(ThreadPool& pool, ReplicaList& reps, const NcfTopKRequest& req,
                       const float* user_context) {
  const auto& cfg = reps[0]->model.config();
  const Index n = static_cast<Index>(req.users.size());
  const Index rows = reps[0]->users.view.numel();
  const Index c = cfg.context;
  SHOAL_CHECK(req.k > 0, "top-k must be > 0, got {}", req.k);
  for (Index r = 0; r < n; ++r) {
    const int32_t u = req.users[static_cast<size_t>(r)];
    SHOAL_CHECK(u >= 0 && u < cfg.num_users, "request row {}: user row {} is outside 0..{}", r, u,
                cfg.num_users - 1);
  }
  for (size_t j = 0; j < req.candidates.size(); ++j)
    SHOAL_CHECK(req.candidates[j] >= 0 && req.candidates[j] < cfg.num_items,
                "candidate {}: item row {} is outside 0..{}", j, req.candidates[j],
                cfg.num_items - 1);
  if (!req.seen_offsets.empty()) {
    SHOAL_CHECK(static_cast<Index>(req.seen_offsets.size()) == n + 1 &&
                    req.seen_offsets.front() == 0 &&
                    static_cast<size_t>(req.seen_offsets.back()) == req.seen_items.size(),
                "seen offsets: {} entries ending at {} for {} rows and {} items",
                req.seen_offsets.size(), req.seen_offsets.back(), n, req.seen_items.size());
    for (size_t r = 1; r < req.seen_offsets.size(); ++r)
      SHOAL_CHECK(req.seen_offsets[r] >= req.seen_offsets[r - 1], "seen offsets decrease at {}", r);
  }
  const float* context = req.context != nullptr ? req.context : user_context;
  SHOAL_CHECK(c == 0 || context != nullptr, "the model takes {} context columns: pass them", c);
  const bool per_request = req.context != nullptr;
  const Index num_cands =
      req.candidates.empty() ? cfg.num_items : static_cast<Index>(req.candidates.size());

  NcfTopK out;
  out.k = req.k;
  const auto slots = static_cast<size_t>(n * req.k);
  out.items.assign(slots, -1);
  out.logits.assign(slots, 0.0f);
  out.counts.assign(static_cast<size_t>(n), 0);
  // Every item's part of the first layer, once for the request (models/ncf.h, score_user).
  const auto tables = reps[0]->model.scoring_tables();
  const int nt = pool.size();
  pool.run([&](int tid) {
    NcfReplica& rep = *reps[static_cast<size_t>(tid)];
    const Range range = split_range(n, tid, nt);
    if (range.begin >= range.end) return;
    Ctx ctx;
    ctx.training = false;
    ctx.thread = tid;
    ctx.n_threads = nt;
    std::vector<uint8_t> excluded(static_cast<size_t>(cfg.num_items), 0);
    std::vector<Scored> heap;
    heap.reserve(static_cast<size_t>(req.k) + 1);
    for (Index r = range.begin; r < range.end; ++r) {
      const int32_t user = req.users[static_cast<size_t>(r)];
      std::span<const int32_t> seen;
      if (!req.seen_offsets.empty())
        seen = req.seen_items.subspan(
            static_cast<size_t>(req.seen_offsets[static_cast<size_t>(r)]),
            static_cast<size_t>(req.seen_offsets[static_cast<size_t>(r) + 1] -
                                req.seen_offsets[static_cast<size_t>(r)]));
      for (int32_t i : seen)
        if (i >= 0 && i < cfg.num_items) excluded[static_cast<size_t>(i)] = 1;
      const float* context_row =
          c > 0 ? context + (per_request ? r : static_cast<Index>(user)) * c : nullptr;
      heap.clear();
      for (Index b = 0; b < num_cands; b += rows) {
        Index m = 0;
        for (Index j = b; j < std::min(num_cands, b + rows); ++j) {
          const int32_t item = req.candidates.empty() ? static_cast<int32_t>(j)
                                                      : req.candidates[static_cast<size_t>(j)];
          if (excluded[static_cast<size_t>(item)] == 0) rep.items.view.data[m++] = item;
        }
        if (m == 0) continue;
        const MatView<float> z = rep.model.score_user(
            ctx, user, context_row,
            std::span<const int32_t>(rep.items.view.data, static_cast<size_t>(m)), tables);
        for (Index j = 0; j < m; ++j) {
          const Scored s{z.data[j], rep.items.view.data[j]};
          if (static_cast<Index>(heap.size()) < req.k) {
            heap.push_back(s);
            std::push_heap(heap.begin(), heap.end(), better);
          } else if (better(s, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), better);
            heap.back() = s;
            std::push_heap(heap.begin(), heap.end(), better);
          }
        }
      }
      for (int32_t i : seen)
        if (i >= 0 && i < cfg.num_items) excluded[static_cast<size_t>(i)] = 0;
      // A candidate listed twice is scored twice: keep its first (equal) entry.
      std::sort_heap(heap.begin(), heap.end(), better);
      heap.erase(std::unique(heap.begin(), heap.end(),
                             [](const Scored& a, const Scored& b) { return a.item == b.item; }),
                 heap.end());
      const auto base = static_cast<size_t>(r * req.k);
      for (size_t j = 0; j < heap.size(); ++j) {
        out.items[base + j] = heap[j].item;
        out.logits[base + j] = heap[j].logit;
      }
      out.counts[static_cast<size_t>(r)] = static_cast<Index>(heap.size());
    }
  });
  return out;
}

}  // namespace
}  // namespace detail

NcfTopK NcfTrainer::top_k(const NcfTopKRequest& request) {
  profile::Zone zone(prof_, zones_.eval, static_cast<Index>(request.users.size()));
  return detail::top_k_replicas(pool_, replicas_, request,
                                user_context_.empty() ? nullptr : user_context_.data());
}

NcfTopK NcfEvaluator::top_k(const NcfTopKRequest& request) {
  return detail::top_k_replicas(pool_, replicas_, request, nullptr);
}

}  // namespace shoal::train
