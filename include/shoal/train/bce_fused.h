// BCE-with-logits forward and backward in one pass over a column of logits, for the NCF
// trainer (one logit per instance). layers::BceWithLogitsLoss is its reference twin: it calls
// libm's exp and log1p per element in two passes (≈ 40 ns per instance, several percent of an
// NCF step); here exp and log1p are short polynomials, eight lanes at a time in AVX2.
//   loss_n = max(z, 0) − z·y + log1p(e),   e = exp(−|z|) ∈ (0, 1]
//   σ(z)   = 1 / (1 + e) for z ≥ 0, e / (1 + e) otherwise (no overflow for any z)
//   dz_n   = scale · (σ(z_n) − y_n)
// gcc does not vectorise the scalar form (the select and the max are control flow it may not
// if-convert under -ftrapping-math), so the lanes are written out; every row, a column's tail
// included (masked loads and stores), goes through them, so a row's loss and dz do not depend on
// where it sits in the column (tested). The scalar form is the build's path without AVX2. Accuracy
// (tests/train/ncf_trainer_test.cpp): a few float ulps against the reference.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "shoal/core/tensor.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SHOAL_BCE_LANES 1
#endif

namespace shoal::train {

namespace bce_detail {
// Cephes' expf polynomial, highest degree first.
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
inline constexpr float kRound = 12582912.0f;  // 1.5·2^23
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kExpFloor = -87.0f;
}  // namespace bce_detail

// exp(x) for x ≤ 0: 2^k · p(r) with x = k·ln2 + r, |r| ≤ ln2/2 (Cephes' expf polynomial);
// arguments below −87 return exp(−87) ≈ 1.6e-38 (the loss adds it to 1, the sigmoid to 1).
inline float exp_nonpositive(float x) {
  using namespace bce_detail;
  x = std::max(x, kExpFloor);
  // Round to nearest by the 1.5·2^23 trick: no rounding call.
  const float k = (x * kLog2e + kRound) - kRound;
  const float r = (x - k * kLn2Hi) - k * kLn2Lo;
  float p = kExpPoly[0];
  for (int i = 1; i < 6; ++i) p = p * r + kExpPoly[i];
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
  for (int d = 15; d >= 1; d -= 2) p = p * s2 + 1.0f / static_cast<float>(d);
  return 2.0f * s * p;
}

// One instance: returns loss_n and writes dz_n.
inline float bce_logit(float z, float y, float scale, float& dz) {
  const float e = exp_nonpositive(-std::abs(z));
  const float inv = 1.0f / (1.0f + e);
  const float sig = z >= 0.0f ? inv : e * inv;
  dz = scale * (sig - y);
  return std::max(z, 0.0f) - z * y + log1p_unit(e);
}

#if SHOAL_BCE_LANES
// Lanes [0, n) set (n ≤ 8): the mask of a column's tail, or of a tile's valid rows.
inline __m256i lanes_below(Index n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// bce_logit on eight lanes: returns the losses and writes dz. The same operations; where the
// scalar form leaves a product and an add to the compiler's contraction, the lanes may round
// once less or more (a few ulps at most, within the tested accuracy).
inline __m256 bce_logit8(__m256 z, __m256 y, __m256 scale, __m256& dz) {
  using namespace bce_detail;
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  const __m256 sign = _mm256_set1_ps(-0.0f);
  // exp_nonpositive(−|z|). max(a, b) = a > b ? a : b, so max(floor, x) is std::max(x, floor)
  // (x itself when x is NaN).
  const __m256 x = _mm256_max_ps(_mm256_set1_ps(kExpFloor), _mm256_or_ps(z, sign));
  const __m256 round = _mm256_set1_ps(kRound);
  const __m256 k = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), round), round);
  const __m256 nk = _mm256_xor_ps(k, sign);
  const __m256 r =
      _mm256_fmadd_ps(nk, _mm256_set1_ps(kLn2Lo), _mm256_fmadd_ps(nk, _mm256_set1_ps(kLn2Hi), x));
  __m256 p = _mm256_set1_ps(kExpPoly[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[i]));
  p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), one);
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(k), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  // σ(z) and dz.
  const __m256 inv = _mm256_div_ps(one, _mm256_add_ps(one, e));
  const __m256 sig =
      _mm256_blendv_ps(_mm256_mul_ps(e, inv), inv, _mm256_cmp_ps(z, zero, _CMP_GE_OQ));
  dz = _mm256_mul_ps(scale, _mm256_sub_ps(sig, y));
  // log1p_unit(e).
  const __m256 s = _mm256_div_ps(e, _mm256_add_ps(_mm256_set1_ps(2.0f), e));
  const __m256 s2 = _mm256_mul_ps(s, s);
  __m256 q = _mm256_set1_ps(1.0f / 17);
  for (int d = 15; d >= 1; d -= 2)
    q = _mm256_fmadd_ps(q, s2, _mm256_set1_ps(1.0f / static_cast<float>(d)));
  const __m256 log1p = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f), s), q);
  // max(0, z) is std::max(z, 0.0f), −0 and NaN included.
  return _mm256_add_ps(_mm256_fmadd_ps(_mm256_xor_ps(z, sign), y, _mm256_max_ps(zero, z)), log1p);
}
#endif

// Returns Σ_n loss_n (summed in double, in order) and writes dz. z, y, dz: [n] contiguous.
inline double bce_logits_fused(const float* z, const float* y, float* dz, Index n, float scale) {
  double sum = 0;
#if SHOAL_BCE_LANES
  alignas(32) float loss[8];
  const __m256 sv = _mm256_set1_ps(scale);
  for (Index i = 0; i < n; i += 8) {
    const Index m = std::min<Index>(8, n - i);
    __m256 d;
    if (m == 8) {
      _mm256_store_ps(loss, bce_logit8(_mm256_loadu_ps(z + i), _mm256_loadu_ps(y + i), sv, d));
      _mm256_storeu_ps(dz + i, d);
    } else {  // the tail through the same lanes, the missing rows masked (read as 0)
      const __m256i live = lanes_below(m);
      _mm256_store_ps(loss, bce_logit8(_mm256_maskload_ps(z + i, live),
                                       _mm256_maskload_ps(y + i, live), sv, d));
      _mm256_maskstore_ps(dz + i, live, d);
    }
    for (Index l = 0; l < m; ++l) sum += static_cast<double>(loss[l]);
  }
#else
  for (Index i = 0; i < n; ++i) sum += static_cast<double>(bce_logit(z[i], y[i], scale, dz[i]));
#endif
  return sum;
}

}  // namespace shoal::train
