// Internal to src/shoal/kernels: the BCE-with-logits polynomials (bce.h) and their AVX2 lanes,
// shared by the column pass (bce.cpp) and the fused NCF tower (ncf_tower.cpp), which runs the
// loss on a tile's logits in a register. Not a public header.
#pragma once

#include "shoal/core/tensor.h"

#include <immintrin.h>

namespace shoal::kernels::detail {

// Cephes' expf polynomial, highest degree first.
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
inline constexpr float kRound = 12582912.0f;  // 1.5·2^23
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kExpFloor = -87.0f;

// AVX2 code, for the AVX2 and AVX-512 targets of the files that include it (their target
// options are a superset, so these inline into them).
#pragma GCC push_options
#pragma GCC target("avx2,fma")
// Lanes [0, n) set (n ≤ 8): the mask of a column's tail, or of a tile's valid rows.
inline __m256i lanes_below(Index n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// One instance per lane: returns the losses and writes dz. The scalar form's operations (see
// bce_ref.cpp); where it leaves a product and an add to the compiler's contraction, the lanes
// may round once less or more (a few ulps at most, within the tested accuracy).
inline __m256 bce_logit8(__m256 z, __m256 y, __m256 scale, __m256& dz) {
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
#pragma GCC pop_options

}  // namespace shoal::kernels::detail
