#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "shoal/kernels/bce.h"
#include "shoal/kernels/isa.h"
#include "shoal/layers/losses.h"
#include "shoal/train/ncf_trainer.h"
#include "support/alloc_counter.h"

namespace shoal {
namespace ncf_trainer_test {

using models::NcfKind;
using train::NcfTrainConfig;
using train::NcfTrainer;

// Planted structure: users and items fall into 4 groups; a user's positives are mostly
// items of its own group. The held-out positive is one more in-group item.
struct Planted {
  data::NcfPositives train;
  data::NcfTestSet test;
};

Planted planted(Index users, Index items, Index per_user, Index context, uint64_t seed) {
  Planted p;
  RngStream rng(seed, 3);
  const Index groups = 4;
  p.train.num_users = p.test.num_users = users;
  p.train.num_items = p.test.num_items = items;
  p.test.negatives_per_user = 20;
  for (Index c = 0; c < context; ++c) p.train.context_names.push_back("c" + std::to_string(c));
  for (Index u = 0; u < users; ++u) {
    std::vector<bool> liked(static_cast<size_t>(items), false);
    const Index g = u % groups;
    auto in_group = [&] {
      return static_cast<int32_t>(g + groups * rng.below(static_cast<uint32_t>(items / groups)));
    };
    for (Index j = 0; j <= per_user; ++j) {
      int32_t it = in_group();
      while (liked[static_cast<size_t>(it)]) it = in_group();
      liked[static_cast<size_t>(it)] = true;
      if (j == per_user) {
        p.test.users.push_back(static_cast<int32_t>(u));
        p.test.items.push_back(it);
      } else {
        p.train.users.push_back(static_cast<int32_t>(u));
        p.train.items.push_back(it);
        for (Index c = 0; c < context; ++c) p.train.context.push_back(rng.uniform(-1.f, 1.f));
      }
    }
    for (Index k = 0; k < p.test.negatives_per_user;) {
      const auto it = static_cast<int32_t>(rng.below(static_cast<uint32_t>(items)));
      if (liked[static_cast<size_t>(it)]) continue;
      liked[static_cast<size_t>(it)] = true;
      p.test.negatives.push_back(it);
      ++k;
    }
  }
  return p;
}

models::Ncf<float>::Config model_config(const Planted& p, NcfKind kind, Index context) {
  return {.kind = kind,
          .num_users = p.train.num_users,
          .num_items = p.train.num_items,
          .factors = 8,
          .layers = {16, 8, 4},
          .context = context};
}

std::vector<float> params(const NcfTrainer& t) {
  const Arena& a = t.arena();
  const float* p = a.params<float>();
  return {p, p + a.param_elems()};
}

// The fused BCE pass against its reference twin (libm exp/log1p, two passes), over logits
// from tiny to saturated, hard and soft labels.
TEST(NcfTrainer, FusedBceMatchesReference) {
  std::vector<float> z, y;
  for (float v = -100.0f; v <= 100.0f; v += 0.0371f) {
    for (float label : {0.0f, 1.0f}) {
      z.push_back(v);
      y.push_back(label);
    }
  }
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 1e-3f, -1e-3f, 87.5f, -87.5f, 300.0f, -300.0f})
    for (float label : {0.0f, 1.0f}) {
      z.push_back(v);
      y.push_back(label);
    }
  // Small logits (e near 1), where the polynomials' last roundings show most in the loss, and
  // where the lanes and the scalar form differ in the last bit for some rows.
  for (float v = 1e-8f; v < 1.0f; v *= 1.07f)
    for (float sign : {1.0f, -1.0f})
      for (float label : {0.0f, 1.0f, 0.5f}) {
        z.push_back(sign * v);
        y.push_back(label);
      }
  const auto n = static_cast<Index>(z.size());
  std::vector<float> d(z.size()), d_ref(z.size());
  const float scale = 0.37f / static_cast<float>(n);
  const double sum = kernels::bce_logits(z.data(), y.data(), d.data(), n, scale);
  const layers::BceWithLogitsLoss<float> ref;
  const ConstMat<float> zm(z.data(), n, 1), ym(y.data(), n, 1);
  const double mean_ref = ref.forward(zm, ym);
  ref.backward(zm, ym, MatView<float>(d_ref.data(), n, 1), {}, 0.37);
  EXPECT_NEAR(sum / static_cast<double>(n), mean_ref, 1e-6 * mean_ref);
  for (size_t i = 0; i < z.size(); ++i) {
    // σ(z) − y cancels for saturated z: a rounding of 1 + e is an ulp of 1, times scale.
    EXPECT_NEAR(d[i], d_ref[i], 4e-7f * std::abs(d_ref[i]) + 2.5e-7f * scale) << "z " << z[i];
    // Each element's loss too: the sum alone could hide compensating errors.
    std::vector<float> one(1);
    const double li = kernels::bce_logits(&z[i], &y[i], one.data(), 1, scale);
    const double li_ref = ref.forward(ConstMat<float>(&z[i], 1, 1), ConstMat<float>(&y[i], 1, 1));
    EXPECT_NEAR(li, li_ref, 4e-7 * li_ref + 1e-30) << "z " << z[i] << " y " << y[i];
    // A row alone (a column's tail) gets the bits it got inside the column.
    EXPECT_EQ(std::memcmp(&one[0], &d[i], sizeof(float)), 0) << "z " << z[i] << " y " << y[i];
    // The scalar form (the path of a build without AVX2) to the same accuracy.
    float d_scalar = 0;
    const double li_scalar = kernels::bce_logits_ref(&z[i], &y[i], &d_scalar, 1, scale);
    EXPECT_NEAR(li_scalar, li_ref, 4e-7 * li_ref + 1e-30) << "z " << z[i] << " y " << y[i];
    EXPECT_NEAR(d_scalar, d_ref[i], 4e-7f * std::abs(d_ref[i]) + 2.5e-7f * scale) << "z " << z[i];
  }
}

TEST(NcfTrainer, SameSeedAndThreadsGiveBitwiseSameWeights) {
  const Planted p = planted(40, 64, 6, 3, 1);
  for (int threads : {1, 2, 3}) {
    NcfTrainConfig cfg{.batch_size = 37, .seed = 9, .threads = threads};
    NcfTrainer a(model_config(p, NcfKind::kNeuMf, 3), cfg, p.train);
    NcfTrainer b(model_config(p, NcfKind::kNeuMf, 3), cfg, p.train);
    for (int e = 0; e < 2; ++e) {
      a.train_epoch();
      b.train_epoch();
    }
    const auto wa = params(a), wb = params(b);
    ASSERT_EQ(wa.size(), wb.size());
    EXPECT_EQ(std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)), 0) << threads;
  }
}

// The merged sparse updates, and the rows projected and back-propagated by their owners, must
// equal the single-thread ones up to float summation order, with shares cut by item (a batch
// has more distinct items than users; its users are then by owner), by user (an item too
// popular for the cuts between items: the items by owner) and contiguous shares (one user and
// one item hold most of the positives), through the layer-by-layer path (model_config's
// towers) and the fused pass.
void expect_thread_counts_agree(const data::NcfPositives& train, int threads, int split,
                                const models::Ncf<float>::Config& model) {
  NcfTrainConfig cfg{.batch_size = 64, .seed = 3, .threads = 1};
  NcfTrainer one(model, cfg, train);
  cfg.threads = threads;
  NcfTrainer many(model, cfg, train);
  EXPECT_EQ(many.split_side(), split);
  EXPECT_EQ(many.owned_side(), split == 1 ? 0 : 1);
  EXPECT_EQ(one.split_side(), -1);
  EXPECT_EQ(one.owned_side(), -1);
  one.draw_epoch(1);
  many.draw_epoch(1);
  for (Index b = 0; b < 4 * 64; b += 64) {
    one.step(b, b + 64);
    many.step(b, b + 64);
  }
  const auto w1 = params(one), wn = params(many);
  double max_diff = 0;
  for (size_t i = 0; i < w1.size(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::abs(w1[i] - wn[i])));
  EXPECT_LT(max_diff, 2e-6) << threads << " threads";
  EXPECT_NE(std::memcmp(w1.data(), params(NcfTrainer(model, {.seed = 3}, train)).data(),
                        w1.size() * sizeof(float)),
            0)
      << "training did not change the weights";
}

TEST(NcfTrainer, ThreadCountsAgreeUpToRounding) {
  const Planted p = planted(30, 48, 5, 2, 2);  // 5 positives per user
  const models::Ncf<float>::Config neumf = model_config(p, NcfKind::kNeuMf, 2);
  constexpr int kByUser = 0, kByItem = 1, kContiguous = -1;
  expect_thread_counts_agree(p.train, 3, kByItem, neumf);
  expect_thread_counts_agree(p.train, 2, kByItem, neumf);
  expect_thread_counts_agree(p.train, 2, kByItem, model_config(p, NcfKind::kMlp, 2));
  // The user's widths: train_chunk's fused pass.
  models::Ncf<float>::Config fused = neumf;
  fused.layers = {64, 32, 16, 8};
  // (fused on every path)
  ASSERT_TRUE(models::Ncf<float>(fused).fused());
  expect_thread_counts_agree(p.train, 2, kByItem, fused);
  expect_thread_counts_agree(p.train, 3, kByItem, fused);
  data::NcfPositives popular = p.train;
  for (int32_t u = 0; u < 30; ++u) {  // item 0: 60 more positives, 2 of every user's 7
    for (int k = 0; k < 2; ++k) {
      popular.users.push_back(u);
      popular.items.push_back(0);
      popular.context.insert(popular.context.end(), {0.25f, -0.25f});
    }
  }
  expect_thread_counts_agree(popular, 2, kByUser, neumf);
  expect_thread_counts_agree(popular, 3, kByUser, fused);
  data::NcfPositives skewed = popular;
  for (int k = 0; k < 200; ++k) {  // user 0: 207 of 410 positives, item 0: 260
    skewed.users.push_back(0);
    skewed.items.push_back(0);
    skewed.context.insert(skewed.context.end(), {0.5f, -0.5f});
  }
  expect_thread_counts_agree(skewed, 2, kContiguous, neumf);
  expect_thread_counts_agree(skewed, 2, kContiguous, fused);
}

// A thread whose share of a batch is empty opens no share, so its replica's handed-over lists
// are still the last step's: the owners' merge (update_shared_rows) must skip them. Batches of
// 2 instances on 3 threads with shares cut by id leave at least one share empty (the middle
// one, when the two ids differ); the weights must still agree with one thread's.
TEST(NcfTrainer, EmptySharesAddNothing) {
  const Planted p = planted(30, 48, 5, 2, 2);
  constexpr Index kBatch = 2, kSteps = 200;
  constexpr int kThreads = 3;
  NcfTrainConfig cfg{.batch_size = kBatch, .seed = 4, .threads = 1};
  NcfTrainer one(model_config(p, NcfKind::kNeuMf, 2), cfg, p.train);
  cfg.threads = kThreads;
  NcfTrainer many(model_config(p, NcfKind::kNeuMf, 2), cfg, p.train);
  ASSERT_EQ(many.split_side(), 1);  // by item: 2 instances repeat a user more often than an item
  one.draw_epoch(1);
  many.draw_epoch(1);
  // The trainer's cuts (one item per bin here), to count the steps with an empty share.
  ASSERT_EQ(train::detail::bin_shift(48, kBatch), 0);
  Index with_empty = 0;
  for (Index b = 0; b < kSteps * kBatch; b += kBatch) {
    std::vector<int32_t> counts(48, 0);
    for (Index i = b; i < b + kBatch; ++i)
      ++counts[static_cast<size_t>(many.sampler().items()[static_cast<size_t>(i)])];
    bool empty = false;
    for (int t = 0; t < kThreads; ++t) {
      const Range r = train::detail::share_bins(counts, kBatch, t, kThreads);
      Index n = 0;
      for (Index u = r.begin; u < r.end; ++u) n += counts[static_cast<size_t>(u)];
      empty = empty || n == 0;
    }
    with_empty += empty ? 1 : 0;
    one.step(b, b + kBatch);
    many.step(b, b + kBatch);
  }
  EXPECT_GE(with_empty, kSteps / 2);  // the case this test is for happened
  const auto w1 = params(one), wn = params(many);
  double max_diff = 0;
  for (size_t i = 0; i < w1.size(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::abs(w1[i] - wn[i])));
  EXPECT_LT(max_diff, 2e-6);
}

// The cuts of a batch split by id: in order, covering every bin once, each the cut nearest
// its target t·n/T among all positions (so the shares differ by at most about a bin's count).
TEST(NcfTrainer, ShareBinsCutNearestEqualCounts) {
  RngStream rng(7, 1);
  for (const Index bins : {1, 2, 7, 64, 654}) {
    for (const int shares : {1, 2, 3, 5, 8}) {
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<int32_t> counts(static_cast<size_t>(bins));
        Index n = 0;
        for (auto& c : counts) {
          // Mostly small counts, some empty bins, now and then a heavy one.
          c = static_cast<int32_t>(rng.below(4) == 0 ? 0 : rng.below(rng.below(10) == 0 ? 60 : 5));
          n += c;
        }
        if (n == 0) continue;
        std::vector<Index> running(static_cast<size_t>(bins) + 1, 0);  // count before bin b
        for (Index b = 0; b < bins; ++b)
          running[static_cast<size_t>(b) + 1] =
              running[static_cast<size_t>(b)] + counts[static_cast<size_t>(b)];
        Index covered = 0;
        for (int t = 0; t < shares; ++t) {
          SCOPED_TRACE(::testing::Message() << bins << " bins, share " << t << " of " << shares);
          const Range r = train::detail::share_bins(counts, n, t, shares);
          EXPECT_EQ(r.begin, covered);
          EXPECT_LE(r.begin, r.end);
          covered = r.end;
          if (t == 0) continue;
          // Cut t is as near t·n/T as any position (distances scaled by T).
          const auto dist = [&](Index at) {
            return std::abs(running[static_cast<size_t>(at)] * shares - t * n);
          };
          for (Index at = 0; at <= bins; ++at) EXPECT_LE(dist(r.begin), dist(at)) << at;
        }
        EXPECT_EQ(covered, bins);
      }
    }
  }
  // Bins of ids: as few consecutive ids per bin as leave at most max(batch, 64) bins.
  EXPECT_EQ(train::detail::bin_shift(654, 1280), 0);
  EXPECT_EQ(train::detail::bin_shift(654, 256), 2);  // 164 bins; 2 ids per bin: 327
  EXPECT_EQ(train::detail::bin_shift(6040, 256), 5);
  EXPECT_EQ(train::detail::bin_shift(30, 2), 0);
  EXPECT_EQ(train::detail::bin_shift(1, 1), 0);
}

// Owners of rows `weights` on `threads` threads: each thread's weight within its blocks'
// rounding of an equal part. Returns the lengths of the runs of rows with the same owner.
std::vector<Index> expect_block_owners(const std::vector<double>& weights, int threads) {
  const std::vector<uint16_t> owner = train::detail::block_owners(weights, threads);
  EXPECT_EQ(owner.size(), weights.size());
  std::vector<Index> runs;
  std::vector<double> per_thread(static_cast<size_t>(threads), 0.0);
  double total = 0, heaviest = 0;
  for (size_t r = 0; r < owner.size(); ++r) {
    EXPECT_LT(owner[r], threads);
    if (r == 0 || owner[r] != owner[r - 1]) runs.push_back(0);
    ++runs.back();
    per_thread[owner[r]] += weights[r];
    total += weights[r];
    heaviest = std::max(heaviest, weights[r]);
  }
  // Each block overshoots its cut by less than one row's weight.
  const auto blocks_per_thread =
      static_cast<double>((owner.size() + train::detail::kOwnerBlock * threads - 1) /
                          static_cast<size_t>(train::detail::kOwnerBlock * threads));
  for (const double w : per_thread)
    EXPECT_LE(std::abs(w - total / threads), blocks_per_thread * heaviest + 1e-9 * total);
  return runs;
}

TEST(NcfTrainer, BlockOwnersDealEvenBlocks) {
  using train::detail::kOwnerBlock;
  for (const Index rows : {1, 5, 7, 30, 64, 129, 654, 1127, 6040, 100000}) {
    for (const int threads : {1, 2, 3, 4, 8}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows, " << threads << " threads");
      const std::vector<Index> runs =
          expect_block_owners(std::vector<double>(static_cast<size_t>(rows), 1.0), threads);
      if (threads == 1) {
        EXPECT_EQ(runs, std::vector<Index>{rows});
        continue;
      }
      // Equal weights: blocks of at most kOwnerBlock rows, and at least half of that when
      // there are rows enough, all of them within one row of each other.
      const auto [shortest, longest] = std::minmax_element(runs.begin(), runs.end());
      EXPECT_LE(*longest, kOwnerBlock);
      EXPECT_LE(*longest - *shortest, 1);
      if (rows >= threads * kOwnerBlock) {
        EXPECT_GE(*shortest, kOwnerBlock / 2);
      }
    }
  }
  // Uneven weights (positives per user): blocks cut by weight, not by rows. Weights growing
  // with the id would give blocks of equal rows many times the allowed imbalance.
  std::vector<double> growing(654);
  for (size_t r = 0; r < growing.size(); ++r) growing[r] = 1.0 + static_cast<double>(r);
  for (const int threads : {2, 3, 4}) expect_block_owners(growing, threads);
  growing[3] = 1e5;  // a user heavier than a block
  for (const int threads : {2, 3, 4}) expect_block_owners(growing, threads);
}

TEST(NcfTrainer, LazyAdamLeavesUntouchedRowsAlone) {
  // A user row touched at step 1 but not at step 2: lazy Adam leaves it alone at step 2,
  // dense Adam (torch.optim.Adam on the table) moves it with its decaying moments.
  const Planted p = planted(30, 48, 5, 0, 4);
  for (bool dense : {false, true}) {
    NcfTrainConfig cfg{.batch_size = 10, .seed = 5, .threads = 2, .dense_embedding_adam = dense};
    NcfTrainer t(model_config(p, NcfKind::kGmf, 0), cfg, p.train);
    t.draw_epoch(1);
    const TensorView<float> w = t.arena().find<float>("embed_user_gmf.weight");
    const std::vector<float> w0(w.begin(), w.end());
    t.step(0, 10);
    const std::vector<float> w1(w.begin(), w.end());
    t.step(10, 20);
    std::vector<bool> in_step2(30, false);
    for (Index i = 10; i < 20; ++i)
      in_step2[static_cast<size_t>(t.sampler().users()[static_cast<size_t>(i)])] = true;
    const Index d = 8;
    Index checked = 0;
    for (Index u = 0; u < 30; ++u) {
      const auto row = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin() + u * d, v.begin() + (u + 1) * d);
      };
      const std::vector<float> now(w.begin() + u * d, w.begin() + (u + 1) * d);
      if (row(w1) == row(w0)) {
        if (!in_step2[static_cast<size_t>(u)]) {
          EXPECT_EQ(now, row(w0)) << "user " << u << " untouched at steps 1 and 2 moved";
        }
        continue;
      }
      if (in_step2[static_cast<size_t>(u)]) continue;
      ++checked;
      if (dense) {
        EXPECT_NE(now, row(w1)) << "user " << u;
      } else {
        EXPECT_EQ(now, row(w1)) << "user " << u;
      }
    }
    EXPECT_GT(checked, 0);
  }
}

TEST(NcfTrainer, LearnsPlantedStructure) {
  const Planted p = planted(64, 96, 10, 0, 6);
  for (auto kind : {NcfKind::kGmf, NcfKind::kMlp, NcfKind::kNeuMf}) {
    NcfTrainer t(model_config(p, kind, 0), {.batch_size = 64, .lr = 1e-2, .seed = 2, .threads = 2},
                 p.train);
    const auto before = t.evaluate(p.test, 5);
    for (int e = 0; e < 15; ++e) t.train_epoch();
    const auto after = t.evaluate(p.test, 5);
    // Random ranking of 21 candidates: HR@5 = 5/21 ≈ 0.24. In-group items are 1 in 4.
    EXPECT_GT(after.hr, 0.6) << models::ncf_kind_name(kind) << " before " << before.hr;
    EXPECT_GT(after.ndcg, 0.3) << models::ncf_kind_name(kind);
  }
}

TEST(NcfTrainer, NoAllocationAfterWarmUp) {
  const Planted p = planted(40, 64, 6, 3, 7);
  NcfTrainer t(model_config(p, NcfKind::kNeuMf, 3), {.batch_size = 32, .seed = 1, .threads = 2},
               p.train);
  t.train_epoch();
  t.evaluate(p.test);
  testing::AllocCounter counter;
  t.train_epoch();
  t.evaluate(p.test);
  EXPECT_EQ(counter.count(), 0);
}

// With a recorder the trainer marks one profiler step per optimizer step and records every
// layer's zones on every thread; profiling allocates nothing after warm-up either, and it
// does not change the weights.
TEST(NcfTrainer, ProfilerZones) {
  const Planted p = planted(40, 64, 6, 3, 7);
  const NcfTrainConfig cfg{.batch_size = 32, .seed = 1, .threads = 2};
  NcfTrainer plain(model_config(p, NcfKind::kNeuMf, 3), cfg, p.train);
  NcfTrainer t(model_config(p, NcfKind::kNeuMf, 3), cfg, p.train);
  profile::Recorder rec({.mode = profile::Mode::kStats});
  t.set_profiler(&rec);
  rec.start();
  t.train_epoch();
  t.evaluate(p.test);
  testing::AllocCounter counter;
  t.train_epoch();
  t.evaluate(p.test);
  EXPECT_EQ(counter.count(), 0);
  rec.stop();
  plain.train_epoch();
  plain.train_epoch();
  EXPECT_EQ(params(plain), params(t));
  // Every optimizer step closes a profiler step; stop() closes the last (the final eval).
  EXPECT_EQ(rec.steps_recorded(), t.steps() + 1);
  auto calls = [&](const char* name) {
    uint64_t c = 0;
    for (size_t z = 0; z < rec.zones().size(); ++z)
      if (rec.zones()[z].name == name)
        for (int th = 0; th < rec.threads_seen(); ++th)
          c += rec.stats(th, static_cast<profile::ZoneId>(z)).calls;
    return c;
  };
  const auto steps = static_cast<uint64_t>(t.steps());
  for (const char* z :
       {"mlp.0.forward", "mlp.1.backward", "predict.forward", "embed.backward", "gmf.forward",
        "loss.forward", "data.batch", "optimizer.dense", "optimizer.tables", "mlp.0.rows.index",
        "mlp.0.rows.forward", "mlp.0.rows.backward"})
    EXPECT_EQ(calls(z), 2 * steps) << z;  // both threads, every step
  // The split side's tables are updated before the step's barrier (here the items: a batch of
  // 32 is expected to have ≈ 25 of the 64 items and ≈ 22 of the 40 users).
  EXPECT_EQ(t.split_side(), 1);
  EXPECT_EQ(calls("optimizer.split_tables"), 2 * steps);
  EXPECT_EQ(calls("optimizer.own_rows"), 2 * steps);  // the item rows, at the share's end
  // Users by owner: each thread lists, projects and back-propagates the users it owns, with
  // two barriers per step (the users projected, the step's) and a wait for the replicas'
  // owned sums before the owners' backward, all idle in pool.barrier.
  for (const char* z :
       {"mlp.0.user_rows.index", "mlp.0.user_rows.forward", "mlp.0.user_rows.backward"})
    EXPECT_EQ(calls(z), 2 * steps) << z;
  EXPECT_EQ(calls("pool.barrier"), 6 * steps);
  EXPECT_EQ(calls("data.sample"), 2u);
  EXPECT_EQ(calls("eval"), 2u);
}

// The profiler's entry point: a synthetic run of the user's shape, scaled down.
TEST(NcfTrainer, ProfileSyntheticSteps) {
  train::NcfSyntheticRun run({.positives = 3000, .users = 40, .items = 64, .threads = 1});
  profile::Recorder rec({.mode = profile::Mode::kStats});
  const double s = train::profile_ncf_steps(rec, run, 5);
  EXPECT_GT(s, 0);
  EXPECT_EQ(rec.steps_recorded(), 5 + 1);  // stop() closes an empty last step
  EXPECT_EQ(run.trainer().steps(), 5);
  // 0 steps: to the end of the epoch (3000 · 5 instances in batches of 1280 → 12 steps).
  EXPECT_EQ(run.run(), 7);
  EXPECT_EQ(run.run(), 12);
}

TEST(NcfTrainer, EvaluationRankRule) {
  // A model whose score is the item id (GMF with 1 factor, all user rows 1, predict w=1, b=0)
  // ranks items by id: check HR/NDCG and the duplicate-positive rule on hand-made lines.
  data::NcfPositives tr;
  tr.users = {0, 1};
  tr.items = {0, 0};
  tr.num_users = 2;
  tr.num_items = 30;
  train::NcfEvaluator ev({.kind = NcfKind::kGmf, .num_users = 2, .num_items = 30, .factors = 1}, 2,
                         64);
  const Arena& a = ev.arena();
  for (float& x : a.find<float>("embed_user_gmf.weight")) x = 1.0f;
  TensorView<float> items = a.find<float>("embed_item_gmf.weight");
  for (Index i = 0; i < 30; ++i) items.data[i] = static_cast<float>(i);
  a.find<float>("predict.weight").data[0] = 1.0f;
  a.find<float>("predict.bias").data[0] = 0.0f;
  data::NcfTestSet t;
  t.num_users = 2;
  t.num_items = 30;
  t.negatives_per_user = 12;
  // user 0: positive 25, negatives 0..11 → rank 0. user 1: positive 5, negatives 6..17 →
  // rank 12 (miss at k = 10).
  t.users = {0, 1};
  t.items = {25, 5};
  for (int i = 0; i < 12; ++i) t.negatives.push_back(i);
  for (int i = 6; i < 18; ++i) t.negatives.push_back(i);
  auto m = ev.evaluate(t, 10);
  EXPECT_DOUBLE_EQ(m.hr, 0.5);
  EXPECT_DOUBLE_EQ(m.ndcg, 0.5);
  // Positive 11 repeated among negatives 0..11 (a candidate once): rank 0.
  t.items = {11, 5};
  t.negatives[6] = 11;  // now 0..5, 11, 7..11: ties with itself are not counted twice
  m = ev.evaluate(t, 10);
  EXPECT_DOUBLE_EQ(m.hr, 0.5);
  EXPECT_DOUBLE_EQ(m.ndcg, 0.5);
  // Positive 3 with negatives 6..17 for user 1 → rank 12; user 0 positive 8 → 3 above (9,10,11).
  t.items = {8, 17};
  t.negatives[6] = 6;
  m = ev.evaluate(t, 10);
  EXPECT_DOUBLE_EQ(m.hr, 1.0);
  EXPECT_NEAR(m.ndcg, 0.5 * (std::log(2.0) / std::log(5.0) + 1.0), 1e-12);
}

}  // namespace ncf_trainer_test
}  // namespace shoal
