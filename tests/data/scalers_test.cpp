#include <gtest/gtest.h>

#include <vector>

#include "data/ts_test_util.h"
#include "shoal/data/scalers.h"

namespace shoal::data {
namespace scalers_test {

// Golden values from neuralforecast's TemporalNorm (tools/ts_scaler_golden.py): a window of
// 10 steps whose last 2 (the horizon) are masked out of the statistics.
struct Golden {
  ScalerType type;
  float shift, scale;
  std::vector<float> z;
};

TEST(Scalers, MatchNeuralforecastTemporalNorm) {
  const std::vector<float> x = {3, 1, 4, 1, 5, 9, 2, 6, 100, -7};
  const std::vector<float> mask = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  const std::vector<Golden> golden = {
      {ScalerType::kStandard,
       3.875f,
       2.57087135f,
       {-0.340351522f, -1.11829793f, 0.0486216471f, -1.11829793f, 0.437594831f, 1.99348748f,
        -0.729324698f, 0.826568007f, 37.3900452f, -4.23008347f}},
      {ScalerType::kRobust,
       3.0f,
       2.00000095f,
       {0, -0.999999523f, 0.499999762f, -0.999999523f, 0.999999523f, 2.99999857f, -0.499999762f,
        1.49999928f, 48.4999771f, -4.99999762f}},
      {ScalerType::kMinmax,
       1.0f,
       8.00000095f,
       {0.24999997f, 0, 0.37499997f, 0, 0.49999994f, 0.999999881f, 0.124999985f, 0.62499994f,
        12.3749981f, -0.999999881f}},
      {ScalerType::kMinmax1,
       1.0f,
       8.00000095f,
       {-0.50000006f, -1, -0.25000006f, -1, -1.1920929e-07f, 0.999999762f, -0.75f, 0.249999881f,
        23.7499962f, -2.99999976f}},
      {ScalerType::kInvariant,
       3.0f,
       2.00000095f,
       {0, -0.881373227f, 0.481211603f, -0.881373227f, 0.881373227f, 1.81844604f, -0.481211603f,
        1.19476283f, 4.5748167f, -2.31243801f}},
  };
  std::vector<float> scratch(x.size());
  for (const auto& g : golden) {
    SCOPED_TRACE(scaler_name(g.type));
    const ScaleStats s = scaler_statistics(g.type, x.data(), 1, mask.data(), 1, 10, scratch.data());
    EXPECT_FLOAT_EQ(s.shift, g.shift);
    EXPECT_NEAR(s.scale, g.scale, 1e-6f);
    std::vector<float> z = x;
    scale_strided(g.type, z.data(), 1, 10, s);
    for (size_t i = 0; i < z.size(); ++i)
      EXPECT_NEAR(z[i], g.z[i], 2e-6f * (1 + std::fabs(g.z[i])));
    unscale_strided(g.type, z.data(), 1, 10, s);
    for (size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(z[i], x[i], 2e-4f * (1 + std::fabs(x[i])));
  }
}

TEST(Scalers, RobustFallsBackToScaledStdAndStridesWork) {
  // Strided (stride 2) over 5, 5, 5, 9: the MAD is 0, so 0.6745·std (neuralforecast: 1.1682514).
  const std::vector<float> x = {5, -1, 5, -1, 5, -1, 9, -1};
  const std::vector<float> mask = {1, 1, 1, 1};
  std::vector<float> scratch(4);
  const ScaleStats s =
      scaler_statistics(ScalerType::kRobust, x.data(), 2, mask.data(), 1, 4, scratch.data());
  EXPECT_FLOAT_EQ(s.shift, 5.0f);
  EXPECT_NEAR(s.scale, 1.1682514f, 1e-6f);
}

TEST(Scalers, EmptyMaskAndIdentityAndNames) {
  const std::vector<float> x = {1, 2, 3};
  const std::vector<float> none = {0, 0, 0};
  std::vector<float> scratch(3);
  for (ScalerType t : {ScalerType::kStandard, ScalerType::kRobust, ScalerType::kMinmax}) {
    const ScaleStats s = scaler_statistics(t, x.data(), 1, none.data(), 1, 3, scratch.data());
    EXPECT_EQ(s.shift, 0.0f);
    EXPECT_FLOAT_EQ(s.scale, 1.0f + 1e-6f);
  }
  const ScaleStats id =
      scaler_statistics(ScalerType::kIdentity, x.data(), 1, none.data(), 1, 3, scratch.data());
  EXPECT_EQ(id.shift, 0.0f);
  EXPECT_EQ(id.scale, 1.0f);
  EXPECT_EQ(parse_scaler_type("minmax1"), ScalerType::kMinmax1);
  EXPECT_EQ(testing::error_of([] { parse_scaler_type("zscore"); }),
            "field 'scaler_type': unknown scaler type 'zscore' (expected identity, standard, "
            "robust, minmax, minmax1, invariant or revin, got zscore)");
}

}  // namespace scalers_test
}  // namespace shoal::data
