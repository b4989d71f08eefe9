#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/train/ranking.h"

namespace shoal {
namespace ranking_test {

using train::ranking_metrics;

// Four users at K = 3, worked by hand from the definitions in ranking.h:
//   u0: recs 5 1 7,   truth {1, 9}:    hit at 2.  HR 1, P 1/3, R 1/2,
//       NDCG (1/log2 3) / (1 + 1/log2 3), AP (1/2) / 2
//   u1: recs 2 3 4 8, truth {2, 4, 8}: cut to 2 3 4, hits at 1 and 3.  HR 1, P 2/3, R 2/3,
//       NDCG (1 + 1/2) / (1 + 1/log2 3 + 1/2), AP (1 + 2/3) / 3
//   u2: no truth: not counted.
//   u3: recs 6, truth {0}: all 0.
TEST(Ranking, MetricsMatchHandComputation) {
  const std::vector<int64_t> ro = {0, 3, 7, 7, 8};
  const std::vector<int32_t> ri = {5, 1, 7, 2, 3, 4, 8, 6};
  const std::vector<int64_t> to = {0, 2, 5, 5, 6};
  const std::vector<int32_t> ti = {1, 9, 2, 4, 8, 0};
  const train::RankingMetrics m = ranking_metrics(ro, ri, to, ti, 3);
  const double l3 = 1.0 / std::log2(3.0);
  EXPECT_EQ(m.users, 3);
  EXPECT_DOUBLE_EQ(m.hr, 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.precision, (1.0 / 3 + 2.0 / 3) / 3);
  EXPECT_DOUBLE_EQ(m.recall, (0.5 + 2.0 / 3) / 3);
  EXPECT_NEAR(m.ndcg, (l3 / (1 + l3) + 1.5 / (1 + l3 + 0.5)) / 3, 1e-15);
  EXPECT_NEAR(m.map, (0.25 + (1 + 2.0 / 3) / 3) / 3, 1e-15);
}

// One held-out item per user: HR = recall and NDCG = ln 2 / ln(rank + 2) (the sampled
// protocol's formula); a repeated item counts once; K = 1 takes the first item only.
TEST(Ranking, LeaveOneOutAndEdgeCases) {
  const std::vector<int64_t> ro = {0, 4, 8};
  const std::vector<int32_t> ri = {3, 3, 3, 7, 1, 2, 0, 5};
  const std::vector<int64_t> to = {0, 1, 2};
  const std::vector<int32_t> ti = {7, 9};
  const train::RankingMetrics m = ranking_metrics(ro, ri, to, ti, 10);
  EXPECT_DOUBLE_EQ(m.hr, 0.5);
  EXPECT_DOUBLE_EQ(m.recall, 0.5);
  EXPECT_NEAR(m.ndcg, 0.5 * std::log(2.0) / std::log(3.0 + 2), 1e-15);
  EXPECT_DOUBLE_EQ(m.precision, 0.5 * 0.1);
  EXPECT_NEAR(m.map, 0.5 * 0.25, 1e-15);
  const train::RankingMetrics m1 = ranking_metrics(ro, ri, to, ti, 1);
  EXPECT_EQ(m1.hr, 0.0);
  EXPECT_THROW(ranking_metrics(ro, ri, to, ti, 0), Error);
  const std::vector<int64_t> bad = {0, 5, 4};  // decreasing
  EXPECT_THROW(ranking_metrics(bad, ri, to, ti, 3), Error);
}

}  // namespace ranking_test
}  // namespace shoal
