#include "shoal/data/interaction_split.h"

#include <gtest/gtest.h>

#include <map>

namespace shoal::data {
namespace {

// User 0: times 1, 3, 3 (tie at the latest, items 4 and 9); user 1: one interaction; user 2:
// five interactions.
const std::vector<int32_t> kUsers = {0, 0, 0, 1, 2, 2, 2, 2, 2};
const std::vector<int32_t> kItems = {1, 9, 4, 0, 5, 6, 7, 8, 2};
const std::vector<double> kTimes = {1, 3, 3, 0, 5, 4, 3, 2, 1};

TEST(InteractionSplit, LeaveLastOutByTimeThenItem) {
  const auto t = split_interactions(kUsers, kItems, kTimes, {.kind = SplitKind::kLeaveLastOut});
  EXPECT_EQ(t, (std::vector<uint8_t>{0, 1, 0, 0, 1, 0, 0, 0, 0}));
}

TEST(InteractionSplit, RandomTiesAndRandomOnePerUser) {
  std::map<size_t, int> picked;  // which of user 0's tied rows is held out, over seeds
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const auto t =
        split_interactions(kUsers, kItems, kTimes,
                           {.kind = SplitKind::kLeaveLastOut, .seed = seed, .random_ties = true});
    EXPECT_EQ(t[0] + t[1] + t[2], 1);
    EXPECT_EQ(t[0], 0);  // never the earlier one
    picked[t[1] ? 1 : 2]++;
    const auto r =
        split_interactions(kUsers, kItems, {}, {.kind = SplitKind::kRandom, .seed = seed});
    int u0 = 0, u2 = 0;
    for (size_t i = 0; i < r.size(); ++i) (kUsers[i] == 0 ? u0 : kUsers[i] == 2 ? u2 : u0) += r[i];
    EXPECT_EQ(u0, 1);
    EXPECT_EQ(u2, 1);
    EXPECT_EQ(r[3], 0);  // a user with one interaction keeps it
    EXPECT_EQ(r,
              split_interactions(kUsers, kItems, {}, {.kind = SplitKind::kRandom, .seed = seed}));
  }
  EXPECT_GT(picked[1], 60);
  EXPECT_GT(picked[2], 60);
}

TEST(InteractionSplit, ChronoKeepsTheEarliestShare) {
  const auto t =
      split_interactions(kUsers, kItems, kTimes, {.kind = SplitKind::kChrono, .ratio = 0.6});
  // user 0: floor(1.8) = 1 kept (time 1); user 2: floor(3) = 3 kept (times 1, 2, 3).
  EXPECT_EQ(t, (std::vector<uint8_t>{0, 1, 1, 0, 1, 1, 0, 0, 0}));
  EXPECT_THROW(split_interactions(kUsers, kItems, kTimes, {.kind = SplitKind::kChrono, .ratio = 1}),
               Error);
  EXPECT_THROW(split_kind("sideways"), Error);
}

}  // namespace
}  // namespace shoal::data
