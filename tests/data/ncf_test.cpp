#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/data/ncf.h"
#include "shoal/data/ncf_sampler.h"

namespace shoal {
namespace ncf_test {

using namespace shoal::data;

// Runs f, expects a shoal::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& p : parts) EXPECT_NE(what.find(p), std::string::npos) << what;
  }
}

TEST(NcfReader, RatingsFile) {
  // Tabs or spaces; every row has the first row's field count (a row with another is an error).
  const auto p = parse_ncf_ratings("0\t3\t5\t978\n0\t1\t4\t979\r\n2 7 3  980\n\n", "r.rating");
  EXPECT_EQ(p.users, (std::vector<int32_t>{0, 0, 2}));
  EXPECT_EQ(p.items, (std::vector<int32_t>{3, 1, 7}));
  EXPECT_EQ(p.num_users, 3);
  EXPECT_EQ(p.num_items, 8);
  EXPECT_EQ(p.context_cols(), 0);
}

TEST(NcfReader, RatingsErrorsNameTheLine) {
  expect_error([] { parse_ncf_ratings("0\t1\n1\t-4\n", "a.rating"); },
               {"a.rating:2", "negative item id"});
  expect_error([] { parse_ncf_ratings("0\t1\n7\n", "a.rating"); },
               {"a.rating:2", "wrong number of fields"});
  expect_error([] { parse_ncf_ratings("0\t1\nx\t2\n", "a.rating"); }, {"a.rating:2", "user"});
  expect_error([] { parse_ncf_ratings("0\t1\t5\t9\n1\t2\n", "a.rating"); },
               {"a.rating:2", "wrong number of fields", "4 fields (as on line 1)"});
  expect_error([] { parse_ncf_ratings("0\t1\n3\t2\n", "a.rating", {.num_users = 3}); },
               {"a.rating:2", "user id out of range", "< 3"});
  expect_error([] { parse_ncf_ratings("", "a.rating"); }, {"no ratings"});
}

TEST(NcfReader, TestFiles) {
  const auto t = parse_ncf_test("0\t5\t4\t1\n1\t2\t3\t1\n", "t.rating",
                                "(0,5)\t1\t2\t3\n(1,2)\t4\t5\t6\n", "t.negative");
  EXPECT_EQ(t.size(), 2);
  EXPECT_EQ(t.negatives_per_user, 3);
  EXPECT_EQ(t.negatives, (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.num_items, 7);
  expect_error(
      [] { parse_ncf_test("0\t5\n1\t2\n", "t.rating", "(0,5)\t1\t2\n(1,3)\t4\t5\n", "t.neg"); },
      {"t.neg:2", "header does not match"});
  expect_error(
      [] { parse_ncf_test("0\t5\n1\t2\n", "t.rating", "(0,5)\t1\t2\n(1,2)\t4\n", "t.neg"); },
      {"t.neg:2", "wrong number of negatives"});
  expect_error([] { parse_ncf_test("0\t5\n1\t2\n", "t.rating", "(0,5)\t1\t2\n", "t.neg"); },
               {"fewer negative lines"});
  expect_error(
      [] { parse_ncf_test("0\t5\n", "t.rating", "(0,5)\t1\t9\n", "t.neg", {.num_items = 8}); },
      {"t.neg:1", "item id out of range"});
}

TEST(NcfReader, CsvWithLabelAndContext) {
  const std::string text = "user,item,label,age,hour\n0,2,1,0.5,3\n1,4,0,1,1\n2,1.0,1,-2,7\n";
  const auto p = parse_ncf_csv(text, "x.csv", {});
  EXPECT_EQ(p.users, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(p.items, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(p.context_names, (std::vector<std::string>{"age", "hour"}));
  EXPECT_EQ(p.context, (HugePageVector<float>{0.5f, 3.f, -2.f, 7.f}));
  EXPECT_EQ(p.dropped_negatives, 1);
  const auto q = parse_ncf_csv(text, "x.csv", {"hour"});
  EXPECT_EQ(q.context, (HugePageVector<float>{3.f, 7.f}));
}

TEST(NcfReader, CsvErrors) {
  expect_error([] { parse_ncf_csv("user,item,a\n0,1,2\n0,1\n", "x.csv", {}); },
               {"x.csv:3", "wrong number of columns", "expected 3"});
  expect_error([] { parse_ncf_csv("user,item\n0,1\n-1,1\n", "x.csv", {}); },
               {"x.csv:3", "negative user id"});
  expect_error([] { parse_ncf_csv("user,item\n0,1.5\n", "x.csv", {}); },
               {"x.csv:2", "not an integer"});
  expect_error([] { parse_ncf_csv("u,item\n0,1\n", "x.csv", {}); }, {"'user' and 'item'"});
  expect_error([] { parse_ncf_csv("user,item,a\n0,1,nan\n", "x.csv", {}); }, {"x.csv:2", "finite"});
  expect_error([] { parse_ncf_csv("user,item,a\n0,1,2\n", "x.csv", {"b"}); },
               {"no such context column"});
  expect_error([] { parse_ncf_csv("user,item\n0,9\n", "x.csv", {}, {.num_items = 9}); },
               {"x.csv:2", "item id out of range"});
}

NcfPositives small_positives() {
  NcfPositives p;
  // user 0 likes items 0..3 of 6; user 1 likes 5; user 2 likes everything but item 4.
  p.users = {0, 0, 0, 0, 1, 2, 2, 2, 2, 2};
  p.items = {3, 1, 0, 2, 5, 0, 1, 2, 3, 5};
  p.num_users = 3;
  p.num_items = 6;
  p.source = "mem";
  return p;
}

TEST(NcfSampler, NegativesAvoidTrainingPositives) {
  const NcfPositives p = small_positives();
  NcfSampler s(p, 4, 17);
  ThreadPool pool(2);
  EXPECT_EQ(s.instances(), 50);
  for (int epoch = 1; epoch <= 20; ++epoch) {
    s.draw_epoch(epoch, pool);
    Index positives = 0;
    for (Index i = 0; i < s.instances(); ++i) {
      const auto k = static_cast<size_t>(i);
      const int32_t u = s.users()[k], it = s.items()[k];
      ASSERT_GE(it, 0);
      ASSERT_LT(it, 6);
      const Index row = s.context_rows()[k];
      EXPECT_EQ(p.users[static_cast<size_t>(row)], u);
      if (s.labels()[k] == 1.0f) {
        ++positives;
        EXPECT_EQ(p.items[static_cast<size_t>(row)], it);
      } else {
        EXPECT_FALSE(s.is_positive(u, it)) << "user " << u << " item " << it;
        if (u == 2) {
          EXPECT_EQ(it, 4);
        }
      }
    }
    EXPECT_EQ(positives, p.size());
  }
}

TEST(NcfSampler, DeterministicAcrossThreadCounts) {
  const NcfPositives p = small_positives();
  NcfSampler a(p, 3, 5), b(p, 3, 5), c(p, 3, 6);
  ThreadPool one(1), three(3);
  a.draw_epoch(2, one);
  b.draw_epoch(2, three);
  c.draw_epoch(2, one);
  EXPECT_TRUE(std::ranges::equal(a.items(), b.items()));
  EXPECT_TRUE(std::ranges::equal(a.users(), b.users()));
  EXPECT_TRUE(std::ranges::equal(a.labels(), b.labels()));
  EXPECT_FALSE(std::ranges::equal(a.items(), c.items()) &&
               std::ranges::equal(a.users(), c.users()));
  // Another epoch draws other negatives and another order.
  b.draw_epoch(3, three);
  EXPECT_FALSE(std::ranges::equal(a.users(), b.users()) &&
               std::ranges::equal(a.items(), b.items()));
}

TEST(NcfSampler, ParallelShuffleIsAPermutationIndependentOfThreads) {
  // 40000 positives x 5 = 200000 instances: 3 buckets, 4 scatter chunks.
  const NcfPositives p = synth_ncf_positives(40000, 300, 200, 0, 9);
  NcfSampler a(p, 4, 7), b(p, 4, 7);
  EXPECT_EQ(a.buckets(), 3);
  ThreadPool one(1), two(2);
  a.draw_epoch(1, one);
  b.draw_epoch(1, two);
  EXPECT_TRUE(std::ranges::equal(a.users(), b.users()));
  EXPECT_TRUE(std::ranges::equal(a.items(), b.items()));
  EXPECT_TRUE(std::ranges::equal(a.labels(), b.labels()));
  EXPECT_TRUE(std::ranges::equal(a.context_rows(), b.context_rows()));
  std::vector<int> seen(static_cast<size_t>(p.size()), 0), pos(static_cast<size_t>(p.size()), 0);
  Index first_half_positives = 0;
  for (Index i = 0; i < a.instances(); ++i) {
    const auto k = static_cast<size_t>(i);
    const auto row = static_cast<size_t>(a.context_rows()[k]);
    ++seen[row];
    if (a.labels()[k] == 1.0f) {
      ++pos[row];
      EXPECT_EQ(a.items()[k], p.items[row]);
      if (i < a.instances() / 2) ++first_half_positives;
    } else {
      EXPECT_FALSE(a.is_positive(a.users()[k], a.items()[k]));
    }
    EXPECT_EQ(a.users()[k], p.users[row]);
  }
  for (size_t r = 0; r < seen.size(); ++r) {
    ASSERT_EQ(seen[r], 5) << r;
    ASSERT_EQ(pos[r], 1) << r;
  }
  // Positives spread evenly over the order (20000 expected in each half; sd ≈ 80).
  EXPECT_NEAR(static_cast<double>(first_half_positives), 20000.0, 600.0);
}

TEST(NcfSampler, RejectsUserWithNoPossibleNegative) {
  NcfPositives p;
  p.users = {0, 0};
  p.items = {0, 1};
  p.num_users = 1;
  p.num_items = 2;
  EXPECT_THROW(NcfSampler(p, 4, 1), Error);
  EXPECT_NO_THROW(NcfSampler(p, 0, 1));
}

TEST(NcfSampler, UniformOverAllowedItems) {
  NcfPositives p;
  p.users = {0};
  p.items = {0};
  p.num_users = 1;
  p.num_items = 5;
  NcfSampler s(p, 4, 3);
  std::vector<int> counts(5, 0);
  for (int e = 0; e < 2000; ++e)
    for (Index c = 1; c < 5; ++c) ++counts[static_cast<size_t>(s.canonical_item(e, c))];
  EXPECT_EQ(counts[0], 0);
  for (int i = 1; i < 5; ++i) EXPECT_NEAR(counts[static_cast<size_t>(i)], 2000, 150) << i;
}

// A user with positives among half the items or more draws from the list of its other items:
// uniform over them, never a positive; a user below half still uses rejection.
TEST(NcfSampler, DenseUserDrawsUniformlyFromItsOtherItems) {
  NcfPositives p;
  // user 0: 5 of 9 items (from its list); user 1: 4 of 9 (rejection).
  p.users = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  p.items = {7, 0, 2, 4, 5, 2, 1, 3, 6, 8};
  p.num_users = 2;
  p.num_items = 9;
  NcfSampler s(p, 4, 5);
  EXPECT_TRUE(s.draws_from_complement(0));
  EXPECT_FALSE(s.draws_from_complement(1));
  std::vector<int> counts(9, 0);
  constexpr int kEpochs = 2000;
  for (int e = 0; e < kEpochs; ++e)
    for (Index c = 1; c < 5; ++c) ++counts[static_cast<size_t>(s.canonical_item(e, c))];
  // 4 allowed items, 8000 draws: 2000 each (sd ≈ 39).
  for (const int positive : {0, 2, 4, 5, 7}) EXPECT_EQ(counts[static_cast<size_t>(positive)], 0);
  for (const int other : {1, 3, 6, 8}) EXPECT_NEAR(counts[static_cast<size_t>(other)], 2000, 200);
  // A drawn epoch's negatives avoid the positives too (that they are the canonical items:
  // DrawnNegativesAreTheCanonicalItems).
  ThreadPool pool(2);
  s.draw_epoch(7, pool);
  for (Index i = 0; i < s.instances(); ++i) {
    const auto k = static_cast<size_t>(i);
    if (s.labels()[k] == 0.0f) {
      EXPECT_FALSE(s.is_positive(s.users()[k], s.items()[k]));
    }
  }
}

// The many-lane Philox (AVX2 when built for it) against the scalar blocks, on counters and
// keys whose words exercise every bit.
TEST(NcfSampler, PhiloxLanesMatchScalarBlocks) {
  constexpr size_t kLanes = data::detail::kPhiloxLanes;
  RngStream rng(11, 1);
  for (int rep = 0; rep < 64; ++rep) {
    const uint64_t seed = (static_cast<uint64_t>(rng.next_u32()) << 32) | rng.next_u32();
    uint32_t ctr[4][kLanes], out[4][kLanes];
    for (auto& word : ctr)
      for (auto& x : word) x = rng.next_u32();
    data::detail::philox4x32_lanes(seed, ctr, out);
    for (size_t l = 0; l < kLanes; ++l) {
      const auto b = Philox(seed, ctr[3][l])
                         .block(ctr[0][l] | (static_cast<uint64_t>(ctr[1][l]) << 32), ctr[2][l]);
      for (size_t w = 0; w < 4; ++w) EXPECT_EQ(out[w][l], b[w]) << rep << " lane " << l;
    }
  }
}

// Each positive's negatives in a drawn epoch are exactly its canonical instances' items
// (instances p·(1 + k) + j, j = 1..k) as a multiset: the batched draws of draw_epoch
// (kPhiloxLanes instances per call, a scalar fallback after 4 rejections, the complement
// lists of the users with positives among half the items or more) give the documented
// (seed, epoch, instance) → item map.
TEST(NcfSampler, DrawnNegativesAreTheCanonicalItems) {
  // User u has each of the 200 items as a positive with probability 0.9·u / 300 (at least
  // one): from none to 90% of the items.
  NcfPositives p;
  p.num_users = 300;
  p.num_items = 200;
  RngStream pick(9, 0);
  for (int32_t u = 0; u < 300; ++u)
    for (int32_t item = 0; item < 200; ++item)
      if (item == u % 200 || pick.next_u32() < static_cast<uint32_t>(0.9 * u / 300 * 0x1p32)) {
        p.users.push_back(u);
        p.items.push_back(item);
      }
  NcfSampler s(p, 4, 21);
  int from_lists = 0;
  for (int32_t u = 0; u < 300; ++u) from_lists += s.draws_from_complement(u) ? 1 : 0;
  EXPECT_GT(from_lists, 0);
  EXPECT_LT(from_lists, 300);
  ThreadPool two(2);
  s.draw_epoch(3, two);
  std::vector<std::vector<int32_t>> drawn(static_cast<size_t>(p.size()));
  for (Index i = 0; i < s.instances(); ++i) {
    const auto k = static_cast<size_t>(i);
    if (s.labels()[k] == 0.0f)
      drawn[static_cast<size_t>(s.context_rows()[k])].push_back(s.items()[k]);
  }
  Index beyond_first_block = 0;
  for (Index q = 0; q < p.size(); ++q) {
    std::vector<int32_t> want;
    for (Index j = 1; j <= 4; ++j) want.push_back(s.canonical_item(3, q * 5 + j));
    std::vector<int32_t> got = drawn[static_cast<size_t>(q)];
    std::ranges::sort(want);
    std::ranges::sort(got);
    ASSERT_EQ(got, want) << "positive " << q;
    // Count negatives whose first block's 4 candidates were all the user's positives.
    const Philox rng(21, NcfSampler::kNegativeStream);
    for (Index j = 1; j <= 4 && !s.draws_from_complement(p.users[static_cast<size_t>(q)]); ++j) {
      const auto block = rng.block(uint64_t{3} << 32, static_cast<uint64_t>(q * 5 + j));
      bool all_positive = true;
      for (uint32_t w : block)
        all_positive = all_positive &&
                       s.is_positive(p.users[static_cast<size_t>(q)],
                                     static_cast<int32_t>((static_cast<uint64_t>(w) * 200) >> 32));
      beyond_first_block += all_positive ? 1 : 0;
    }
  }
  EXPECT_GT(beyond_first_block, 0) << "the fallback path was not exercised";
}

}  // namespace ncf_test
}  // namespace shoal
