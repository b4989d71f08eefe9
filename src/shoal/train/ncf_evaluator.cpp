#include <chrono>
#include <cmath>

#include "ncf_replica.h"

namespace shoal::train {

namespace detail {
namespace {
// Rank of candidate `pos` under the evaluate.py rule (see the header).
Index rank_of(const float* scores, Index count, Index pos) {
  const float s = scores[pos];
  Index rank = 0;
  for (Index c = 0; c < count; ++c) rank += (scores[c] > s || (scores[c] == s && c < pos)) ? 1 : 0;
  return rank;
}

}  // namespace

NcfMetrics evaluate_replicas(ThreadPool& pool, ReplicaList& reps, const data::NcfTestSet& test,
                             Index k, const float* user_context) {
  const auto t0 = std::chrono::steady_clock::now();
  const Index kneg = test.negatives_per_user;
  const Index cands = kneg + 1;
  const Index rows = reps[0]->users.view.numel();
  SHOAL_CHECK(rows >= cands, "evaluation needs {} rows per chunk, planned {}", cands, rows);
  SHOAL_CHECK(k > 0, "top-k must be > 0, got {}", k);
  const auto& cfg = reps[0]->model.config();
  SHOAL_CHECK(test.num_users <= cfg.num_users && test.num_items <= cfg.num_items,
              "test ids (users < {}, items < {}) exceed the model's {} users and {} items",
              test.num_users, test.num_items, cfg.num_users, cfg.num_items);
  const Index per_chunk = rows / cands;
  const int nt = pool.size();
  constexpr int kMaxThreads = 256;  // fixed arrays: evaluation allocates nothing
  SHOAL_CHECK(nt <= kMaxThreads, "at most {} threads, got {}", kMaxThreads, nt);
  double hr[kMaxThreads] = {}, ndcg[kMaxThreads] = {};
  pool.run([&](int tid) {
    NcfReplica& rep = *reps[static_cast<size_t>(tid)];
    const Range r = split_range(test.size(), tid, nt);
    Ctx ctx;
    ctx.training = false;
    ctx.thread = tid;
    ctx.n_threads = nt;
    Index pos_at[1024];  // per chunk user: the positive's candidate index
    Index count_at[1024];
    const Index chunk_users = std::min<Index>(per_chunk, 1024);
    for (Index u0 = r.begin; u0 < r.end; u0 += chunk_users) {
      const Index nu = std::min(chunk_users, r.end - u0);
      Index n = 0;
      for (Index j = 0; j < nu; ++j) {
        const auto row = static_cast<size_t>(u0 + j);
        const int32_t user = test.users[row], item = test.items[row];
        const int32_t* neg = test.negatives.data() + row * static_cast<size_t>(kneg);
        Index pos = -1;
        const Index start = n;
        for (Index c = 0; c < kneg; ++c) {
          if (neg[c] == item && pos < 0) pos = n - start;
          rep.users.view.data[n] = user;
          rep.items.view.data[n] = neg[c];
          ++n;
        }
        if (pos < 0) {
          pos = n - start;
          rep.users.view.data[n] = user;
          rep.items.view.data[n] = item;
          ++n;
        }
        pos_at[j] = pos;
        count_at[j] = n - start;
        if (cfg.context > 0)
          for (Index c = start; c < n; ++c)
            std::copy_n(user_context + static_cast<Index>(user) * cfg.context, cfg.context,
                        rep.context.view.data + c * cfg.context);
      }
      const MatView<float> out = rep.model.forward(
          ctx, std::span<const int32_t>(rep.users.view.data, static_cast<size_t>(n)),
          std::span<const int32_t>(rep.items.view.data, static_cast<size_t>(n)),
          ConstMat<float>(rep.context.view.data, n, cfg.context));
      Index off = 0;
      for (Index j = 0; j < nu; ++j) {
        const Index rank = rank_of(out.data + off, count_at[j], pos_at[j]);
        if (rank < k) {
          hr[static_cast<size_t>(tid)] += 1.0;
          ndcg[static_cast<size_t>(tid)] += std::log(2.0) / std::log(static_cast<double>(rank) + 2);
        }
        off += count_at[j];
      }
    }
  });
  NcfMetrics m;
  m.users = test.size();
  for (int t = 0; t < nt; ++t) {
    m.hr += hr[static_cast<size_t>(t)];
    m.ndcg += ndcg[static_cast<size_t>(t)];
  }
  if (m.users > 0) {
    m.hr /= static_cast<double>(m.users);
    m.ndcg /= static_cast<double>(m.users);
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace detail

// ---- NcfEvaluator ----

NcfEvaluator::NcfEvaluator(const models::Ncf<float>::Config& cfg, int threads, Index rows,
                           Pinning pinning)
    : pool_(threads, pinning) {
  for (int t = 0; t < pool_.size(); ++t)
    replicas_.push_back(std::make_unique<detail::NcfReplica>(
        cfg, rows, 0, 0, false, t == 0 ? nullptr : &replicas_[0]->arena));
}
NcfEvaluator::~NcfEvaluator() = default;
models::Ncf<float>& NcfEvaluator::model() {
  return replicas_[0]->model;
}
const Arena& NcfEvaluator::arena() const {
  return replicas_[0]->arena;
}
NcfMetrics NcfEvaluator::evaluate(const data::NcfTestSet& test, Index k,
                                  const float* user_context) {
  return detail::evaluate_replicas(pool_, replicas_, test, k, user_context);
}

}  // namespace shoal::train
