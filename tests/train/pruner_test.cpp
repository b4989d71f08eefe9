// Successive halving: rungs at min_checks · factor^k, the best 1/factor of a rung go on.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "shoal/train/pruner.h"

namespace shoal::pruner_test {

TEST(SuccessiveHalving, RungsAreGeometric) {
  const train::SuccessiveHalving sh(2, 3);
  EXPECT_EQ(sh.rung_of(1), -1);
  EXPECT_EQ(sh.rung_of(2), 0);
  EXPECT_EQ(sh.rung_of(3), -1);
  EXPECT_EQ(sh.rung_of(6), 1);
  EXPECT_EQ(sh.rung_of(18), 2);
  EXPECT_EQ(sh.rung_of(17), -1);
}

TEST(SuccessiveHalving, KeepsTheBestFractionOfEachRung) {
  train::SuccessiveHalving sh(1, 4);
  EXPECT_TRUE(sh.keep(1, 5.0));   // the first at a rung is the best so far
  EXPECT_FALSE(sh.keep(1, 6.0));  // 2 losses: only the best goes on
  EXPECT_TRUE(sh.keep(1, 4.0));
  EXPECT_FALSE(sh.keep(1, 4.5));
  // 8 losses at rung 0: 5, 6, 4, 4.5, then 7, 8, 3 and 4.2; the best 2 go on.
  EXPECT_FALSE(sh.keep(1, 7.0));
  EXPECT_FALSE(sh.keep(1, 8.0));
  EXPECT_TRUE(sh.keep(1, 3.0));
  EXPECT_TRUE(sh.keep(1, 4.0));    // the second best of 8 (3, 4, 4, ...)
  EXPECT_TRUE(sh.keep(2, 100.0));  // between rungs: nothing is decided
  EXPECT_TRUE(sh.keep(4, 1.0));    // rung 1 is its own competition
  EXPECT_FALSE(sh.keep(4, std::numeric_limits<double>::quiet_NaN()));
}

TEST(SuccessiveHalving, TrialsSideBySide) {
  train::SuccessiveHalving sh(1, 2);
  std::atomic<int> kept{0};
  std::vector<std::thread> trials;
  for (int t = 0; t < 8; ++t)
    trials.emplace_back([&, t] { kept += sh.keep(1, double(t)) ? 1 : 0; });
  for (auto& t : trials) t.join();
  // Whatever the order, the first report goes on; every report is recorded, so a ninth loss of
  // 3.5 is not among the best 4 of the 9 (0, 1, 2, 3).
  EXPECT_GE(kept.load(), 1);
  EXPECT_FALSE(sh.keep(1, 3.5));
  EXPECT_TRUE(sh.keep(1, 2.5));
}

}  // namespace shoal::pruner_test
