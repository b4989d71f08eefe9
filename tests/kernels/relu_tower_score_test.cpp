// The scoring kernel (relu_tower_score.h) against its plain twin: every supported second-layer
// width and first-layer widths, with and without the GMF side, row counts of whole and partial
// tiles, repeated items, inputs one float off 32-byte alignment. A width without a vector kernel
// runs the twin (same results exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/relu_tower_score.h"

namespace shoal::kernels {
namespace {

std::vector<float> random(Index n, RngStream& rng) {
  std::vector<float> v(static_cast<size_t>(n + 1));
  for (float& x : v) x = rng.uniform(-1.0f, 1.0f);
  return v;
}

void check(Index l1, Index l2, Index l3, Index f, Index n, RngStream& rng) {
  SCOPED_TRACE(::testing::Message() << l1 << "," << l2 << "," << l3 << " f " << f << " n " << n);
  const Index items = 23;
  auto a = random(l1, rng), proj = random(items * l1, rng), w2 = random(l1 * l2, rng),
       b2 = random(l2, rng), w3 = random(l2 * l3, rng), b3 = random(l3, rng), gu = random(f, rng),
       qg = random(items * f, rng), wp = random(l3, rng);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& i : ids) i = static_cast<int32_t>(rng.below(items));
  std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
  // +1: every input one float past its allocation's alignment.
  ReluTowerScoreRows r{.n = n,
                       .items = ids.data(),
                       .l1 = l1,
                       .l2 = l2,
                       .l3 = l3,
                       .f = f,
                       .a = a.data() + 1,
                       .proj_i = proj.data() + 1,
                       .w2_t = w2.data() + 1,
                       .b2 = b2.data() + 1,
                       .w3_t = w3.data() + 1,
                       .b3 = b3.data() + 1,
                       .gu = gu.data() + 1,
                       .qg = qg.data() + 1,
                       .wp3 = wp.data() + 1,
                       .bp = 0.25f,
                       .logits = got.data()};
  relu_tower_score(r);
  r.logits = want.data();
  relu_tower_score_ref(r);
  for (Index i = 0; i < n; ++i)
    EXPECT_NEAR(got[size_t(i)], want[size_t(i)], 1e-5f * (1 + std::fabs(want[size_t(i)]))) << i;
}

TEST(ReluTowerScore, MatchesTwin) {
  RngStream rng(3, 1);
  for (Index l2 : {8, 16, 24, 32})
    for (Index l1 : {8, 32, 64})
      for (Index f : {0, 3, 8})
        for (Index n : {1, 3, 4, 5, 17, 64}) check(l1, l2, 8, f, n, rng);
  EXPECT_FALSE(relu_tower_score_supported(12, 16, 8));
  check(12, 10, 4, 2, 9, rng);  // the twin
}

}  // namespace
}  // namespace shoal::kernels
