#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/ncf_trainer.h"

namespace shoal {
namespace ncf_recommend_test {

using train::NcfTopK;
using train::NcfTopKRequest;

constexpr Index kUsers = 30, kItems = 50, kContext = 2;

data::NcfPositives positives() {
  data::NcfPositives p;
  p.num_users = kUsers;
  p.num_items = kItems;
  p.context_names = {"a", "b"};
  RngStream rng(7, 1);
  for (Index u = 0; u < kUsers; ++u)
    for (Index j = 0; j < 6; ++j) {
      p.users.push_back(static_cast<int32_t>(u));
      p.items.push_back(static_cast<int32_t>((u * 7 + j * 3) % kItems));
      p.context.push_back(rng.uniform(-1.f, 1.f));
      p.context.push_back(rng.uniform(-1.f, 1.f));
    }
  return p;
}

models::Ncf<float>::Config config() {
  return {.kind = models::NcfKind::kNeuMf,
          .num_users = kUsers,
          .num_items = kItems,
          .factors = 4,
          .layers = {8, 4},
          .context = kContext};
}

// Every item's logit for `user` with context row `c`, one forward per item on replica 0.
std::vector<float> brute(train::NcfTrainer& t, int32_t user, const float* c) {
  std::vector<float> s(static_cast<size_t>(kItems));
  const Ctx eval{.training = false};
  for (int32_t i = 0; i < kItems; ++i)
    s[static_cast<size_t>(i)] =
        t.model().forward(eval, {&user, 1}, {&i, 1}, ConstMat<float>(c, 1, kContext)).data[0];
  return s;
}

// The K best items of the whole catalog, seen items excluded, agree with scoring every item
// one at a time; an evaluator with the same weights on 1 and 3 threads gives the same bits;
// candidates restrict the ranking.
TEST(NcfRecommend, TopKMatchesBruteForceAndThreads) {
  const data::NcfPositives p = positives();
  for (int threads : {1, 2}) {
    // eval_rows 16 < 50 items: a user's catalog is scored over several chunks.
    train::NcfTrainer t(config(),
                        {.batch_size = 32, .seed = 3, .threads = threads, .eval_rows = 16}, p);
    t.train_epoch();
    std::vector<int32_t> users = {0, 5, 29, 5};
    std::vector<int64_t> off = {0, 2, 2, 3, 3};
    std::vector<int32_t> seen = {7, 10, 21};  // row 0 excludes 7, 10; row 2 excludes 21
    const NcfTopK r = t.top_k({.users = users, .seen_offsets = off, .seen_items = seen, .k = 5});
    ASSERT_EQ(r.counts, (std::vector<Index>{5, 5, 5, 5}));
    for (size_t row = 0; row < users.size(); ++row) {
      const float* c = t.user_context().data() + users[row] * kContext;
      const std::vector<float> s = brute(t, users[row], c);
      std::vector<int32_t> order;
      for (int32_t i = 0; i < kItems; ++i)
        if (std::find(seen.begin() + off[row], seen.begin() + off[row + 1], i) ==
            seen.begin() + off[row + 1])
          order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return s[static_cast<size_t>(a)] > s[static_cast<size_t>(b)];
      });
      for (size_t j = 0; j < 5; ++j) {
        const int32_t got = r.items[row * 5 + j];
        EXPECT_NEAR(r.logits[row * 5 + j], s[static_cast<size_t>(got)], 1e-5f);
        // Same items unless two scores are within rounding of each other.
        EXPECT_NEAR(s[static_cast<size_t>(got)], s[static_cast<size_t>(order[j])], 1e-5f)
            << "row " << row << " rank " << j;
        if (j > 0) {
          EXPECT_GE(r.logits[row * 5 + j - 1], r.logits[row * 5 + j]);
        }
      }
    }
    EXPECT_TRUE(std::find(r.items.begin(), r.items.begin() + 5, 7) == r.items.begin() + 5);
    // Rows 1 and 3 ask for the same user with nothing excluded.
    EXPECT_TRUE(std::equal(r.items.begin() + 5, r.items.begin() + 10, r.items.begin() + 15));
    // The same weights in an evaluator, the user context given per request row.
    const std::string w = train::encode_checkpoint(t.arena());
    std::vector<float> ctx_rows;
    for (int32_t u : users)
      ctx_rows.insert(ctx_rows.end(), t.user_context().begin() + u * kContext,
                      t.user_context().begin() + (u + 1) * kContext);
    for (int et : {1, 3}) {
      train::NcfEvaluator ev(config(), et, 16);
      train::load_checkpoint_bytes(ev.arena(), w, "weights");
      const NcfTopK e = ev.top_k({.users = users,
                                  .seen_offsets = off,
                                  .seen_items = seen,
                                  .context = ctx_rows.data(),
                                  .k = 5});
      EXPECT_EQ(e.items, r.items) << et << " threads";
      EXPECT_EQ(e.logits, r.logits) << et << " threads";
    }
    // Candidates: only those, fewer than K when excluded ones leave fewer.
    std::vector<int32_t> cands = {3, 9, 40};
    std::vector<int32_t> one = {9};
    std::vector<int64_t> off1 = {0, 1};
    const NcfTopK rc = t.top_k({.users = std::span<const int32_t>(users.data(), 1),
                                .candidates = cands,
                                .seen_offsets = off1,
                                .seen_items = one,
                                .k = 5});
    ASSERT_EQ(rc.counts[0], 2);
    EXPECT_TRUE((rc.items[0] == 3 && rc.items[1] == 40) || (rc.items[0] == 40 && rc.items[1] == 3));
    EXPECT_EQ(rc.items[2], -1);
    // Per-request context changes the scores.
    std::vector<float> ctx = {5.0f, -5.0f};
    const NcfTopK rx = t.top_k(
        {.users = std::span<const int32_t>(users.data(), 1), .context = ctx.data(), .k = 3});
    const std::vector<float> sx = brute(t, users[0], ctx.data());
    EXPECT_NEAR(rx.logits[0], *std::max_element(sx.begin(), sx.end()), 1e-5f);
    std::vector<int32_t> bad_user = {kUsers};
    EXPECT_THROW(t.top_k({.users = bad_user, .k = 3}), Error);
    EXPECT_THROW(t.top_k({.users = users, .k = 0}), Error);
  }
}

}  // namespace ncf_recommend_test
}  // namespace shoal
