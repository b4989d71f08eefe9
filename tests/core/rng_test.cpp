#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "shoal/core/rng.h"

namespace shoal {
namespace rng_test {

TEST(Philox, IsAPureFunctionOfSeedStreamAndCounter) {
  Philox a(42, 7), b(42, 7), c(43, 7), d(42, 8);
  EXPECT_EQ(a.block(3, 9), b.block(3, 9));
  EXPECT_NE(a.block(3, 9), c.block(3, 9));
  EXPECT_NE(a.block(3, 9), d.block(3, 9));
  EXPECT_NE(a.block(3, 9), a.block(4, 9));
  EXPECT_NE(a.block(3, 9), a.block(3, 10));
}

TEST(RngStream, UniformMomentsAndRange) {
  RngStream rng(1, 2);
  const int n = 200000;
  double sum = 0, sumsq = 0;
  for (int i = 0; i < n; ++i) {
    const float u = rng.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sumsq += u * u;
  }
  const double mean = sum / n, var = sumsq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(var, 1.0 / 12, 0.002);
}

TEST(RngStream, NormalMoments) {
  RngStream rng(3, 4);
  const int n = 200000;
  double sum = 0, sumsq = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    sum += z;
    sumsq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(sumsq / n, 1.0, 0.02);
}

TEST(RngStream, BelowCoversRangeUniformly) {
  RngStream rng(5, 6);
  int counts[7] = {};
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    const uint32_t v = rng.below(7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, n / 7, 5 * std::sqrt(n / 7.0));
}

TEST(RngStream, SameSeedSameSequence) {
  RngStream a(9, 1), b(9, 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u32(), b.next_u32());
}

// torch.manual_seed(1); torch.empty(8).uniform_(-0.3, 0.3) (torch 2.15, CPU), printed as doubles:
// the torch generator must give these floats exactly, and a seed > 2^32 keeps its low word.
TEST(RngStream, TorchCpuGeneratorDrawsTorchsUniform) {
  const double torch_values[] = {0.15457896888256073,   -0.13241347670555115, -0.05815844610333443,
                                 0.14081068336963654,   -0.28243106603622437, 0.179915189743042,
                                 -0.061717595905065536, 0.15262317657470703};
  for (const uint64_t seed : {uint64_t{1}, (uint64_t{7} << 32) | 1}) {
    RngStream rng(seed, /*stream, ignored=*/99, Generator::kTorchCpu);
    for (const double want : torch_values)
      EXPECT_EQ(rng.uniform(-0.3f, 0.3f), static_cast<float>(want)) << "seed " << seed;
  }
  RngStream philox(1, 99);
  EXPECT_NE(philox.uniform(-0.3f, 0.3f), static_cast<float>(torch_values[0]));
}

}  // namespace rng_test
}  // namespace shoal
