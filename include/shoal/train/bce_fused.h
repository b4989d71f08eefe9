// BCE-with-logits forward and backward in one vectorisable pass over a column of logits, for
// the NCF trainer (one logit per instance). layers::BceWithLogitsLoss is its reference twin:
// it calls libm's exp and log1p per element in two passes (≈ 40 ns per instance, several
// percent of an NCF step); here exp and log1p are short polynomials that gcc vectorises.
//   loss_n = max(z, 0) − z·y + log1p(e),   e = exp(−|z|) ∈ (0, 1]
//   σ(z)   = 1 / (1 + e) for z ≥ 0, e / (1 + e) otherwise (no overflow for any z)
//   dz_n   = scale · (σ(z_n) − y_n)
// Accuracy (tests/train/ncf_trainer_test.cpp): a few float ulps against the reference.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::train {

// exp(x) for x ≤ 0: 2^k · p(r) with x = k·ln2 + r, |r| ≤ ln2/2 (Cephes' expf polynomial);
// arguments below −87 return exp(−87) ≈ 1.6e-38 (the loss adds it to 1, the sigmoid to 1).
inline float exp_nonpositive(float x) {
  x = std::max(x, -87.0f);
  // Round to nearest by the 1.5·2^23 trick: no rounding call, so the loop vectorises.
  const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const auto scale = std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
  return p * scale;
}

// log1p(e) for e ∈ [0, 1]: 2·atanh(s), s = e / (2 + e) ∈ [0, 1/3], by its odd series to
// s^17 (the next term is below 1e-9 relative): accurate near 0 as log1p must be.
inline float log1p_unit(float e) {
  const float s = e / (2.0f + e);
  const float s2 = s * s;
  float p = 1.0f / 17;
  p = p * s2 + 1.0f / 15;
  p = p * s2 + 1.0f / 13;
  p = p * s2 + 1.0f / 11;
  p = p * s2 + 1.0f / 9;
  p = p * s2 + 1.0f / 7;
  p = p * s2 + 1.0f / 5;
  p = p * s2 + 1.0f / 3;
  p = p * s2 + 1.0f;
  return 2.0f * s * p;
}

// Returns Σ_n loss_n (summed in double, in order) and writes dz. z, y, dz: [n] contiguous.
inline double bce_logits_fused(const float* z, const float* y, float* dz, Index n, float scale) {
  constexpr Index kBlock = 64;
  float loss[kBlock];
  double sum = 0;
  for (Index b = 0; b < n; b += kBlock) {
    const Index m = std::min(kBlock, n - b);
    const float* __restrict zb = z + b;
    const float* __restrict yb = y + b;
    float* __restrict db = dz + b;
    for (Index i = 0; i < m; ++i) {
      const float zi = zb[i], yi = yb[i];
      const float e = exp_nonpositive(-std::abs(zi));
      loss[i] = std::max(zi, 0.0f) - zi * yi + log1p_unit(e);
      const float inv = 1.0f / (1.0f + e);
      const float sig = zi >= 0.0f ? inv : e * inv;
      db[i] = scale * (sig - yi);
    }
    for (Index i = 0; i < m; ++i) sum += static_cast<double>(loss[i]);
  }
  return sum;
}

}  // namespace shoal::train
