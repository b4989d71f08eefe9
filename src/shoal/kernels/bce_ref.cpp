#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "bce_lanes.h"
#include "shoal/kernels/bce.h"

namespace shoal::kernels {

namespace {

// exp(x) for x ≤ 0 (see bce.h); the rounding to nearest of k by the 1.5·2^23 trick: no
// rounding call.
float exp_nonpositive(float x) {
  using namespace detail;
  x = std::max(x, kExpFloor);
  const float k = (x * kLog2e + kRound) - kRound;
  const float r = (x - k * kLn2Hi) - k * kLn2Lo;
  float p = kExpPoly[0];
  for (int i = 1; i < 6; ++i) p = p * r + kExpPoly[i];
  p = p * r * r + r + 1.0f;
  const auto scale = std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
  return p * scale;
}

// log1p(e) for e ∈ [0, 1]: accurate near 0 as log1p must be (the series' next term is below
// 1e-9 relative).
float log1p_unit(float e) {
  const float s = e / (2.0f + e);
  const float s2 = s * s;
  float p = 1.0f / 17;
  for (int d = 15; d >= 1; d -= 2) p = p * s2 + 1.0f / static_cast<float>(d);
  return 2.0f * s * p;
}

}  // namespace

// gcc does not vectorise this loop (the select and the max are control flow it may not
// if-convert under -ftrapping-math): bce.cpp writes the lanes out.
double bce_logits_ref(const float* z, const float* y, float* dz, Index n, float scale) {
  double sum = 0;
  for (Index i = 0; i < n; ++i) {
    const float e = exp_nonpositive(-std::abs(z[i]));
    const float inv = 1.0f / (1.0f + e);
    const float sig = z[i] >= 0.0f ? inv : e * inv;
    dz[i] = scale * (sig - y[i]);
    sum += static_cast<double>(std::max(z[i], 0.0f) - z[i] * y[i] + log1p_unit(e));
  }
  return sum;
}

}  // namespace shoal::kernels
