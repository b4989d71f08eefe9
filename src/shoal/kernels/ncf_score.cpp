// The NCF scoring pass (ncf_score.h). The AVX2 and AVX-512 targets run the AVX2 (ymm) tiles
// below; SSE4 runs the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/ncf_score.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <immintrin.h>

#include "dispatch.h"
#include "shoal/kernels/ncf_score.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
#if HWY_TARGET <= HWY_AVX2
namespace {

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// L2 = 8·B2 outputs of the second layer, L3 = 8; R rows per tile: R·B2 accumulators stay in
// registers beside the B2 weight vectors being broadcast against (R·B2 ≤ 12 of the 16 ymm).
template <int B2, Index kRows>
void score_tiles(const NcfScoreRows& r) {
  const Index l1 = r.l1;
  const __m256 zero = _mm256_setzero_ps();
  alignas(32) float h1[kRows][64];
  alignas(32) float h2[kRows][8 * B2];
  const __m256 wp3 = _mm256_loadu_ps(r.wp3);
  const __m256 b3 = _mm256_loadu_ps(r.b3);
  for (Index n0 = 0; n0 < r.n; n0 += kRows) {
    const Index rows = r.n - n0 < kRows ? r.n - n0 : kRows;
    // h1 = relu(a + proj_i[item]), stored for the broadcasts.
    for (Index t = 0; t < kRows; ++t) {
      const float* p = r.proj_i + static_cast<Index>(r.items[n0 + (t < rows ? t : 0)]) * l1;
      for (Index j = 0; j < l1; j += 8)
        _mm256_store_ps(h1[t] + j, _mm256_max_ps(zero, _mm256_add_ps(_mm256_loadu_ps(r.a + j),
                                                                     _mm256_loadu_ps(p + j))));
    }
    // h2 = relu(h1·W2ᵀ + b2): per input k, one row of W2ᵀ against every tile row.
    __m256 acc[kRows][B2];
    for (int b = 0; b < B2; ++b) {
      const __m256 bias = _mm256_loadu_ps(r.b2 + 8 * b);
      for (Index t = 0; t < kRows; ++t) acc[t][b] = bias;
    }
    for (Index k = 0; k < l1; ++k) {
      __m256 w[B2];
      for (int b = 0; b < B2; ++b) w[b] = _mm256_loadu_ps(r.w2_t + k * 8 * B2 + 8 * b);
      for (Index t = 0; t < kRows; ++t) {
        const __m256 x = _mm256_broadcast_ss(h1[t] + k);
        for (int b = 0; b < B2; ++b) acc[t][b] = _mm256_fmadd_ps(x, w[b], acc[t][b]);
      }
    }
    for (Index t = 0; t < kRows; ++t)
      for (int b = 0; b < B2; ++b) _mm256_store_ps(h2[t] + 8 * b, _mm256_max_ps(zero, acc[t][b]));
    // h3 = relu(h2·W3ᵀ + b3), then the predict dot and the GMF side.
    __m256 h3[kRows];
    for (Index t = 0; t < kRows; ++t) h3[t] = b3;
    for (Index k = 0; k < 8 * B2; ++k) {
      const __m256 w = _mm256_loadu_ps(r.w3_t + k * 8);
      for (Index t = 0; t < kRows; ++t)
        h3[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(h2[t] + k), w, h3[t]);
    }
    for (Index t = 0; t < rows; ++t) {
      __m256 v = _mm256_mul_ps(_mm256_max_ps(zero, h3[t]), wp3);
      const float* q = r.qg + static_cast<Index>(r.items[n0 + t]) * r.f;
      float z = r.bp;
      if (r.f == 8) {
        v = _mm256_fmadd_ps(_mm256_loadu_ps(r.gu), _mm256_loadu_ps(q), v);
      } else {
        for (Index j = 0; j < r.f; ++j) z += r.gu[j] * q[j];
      }
      r.logits[n0 + t] = z + hsum(v);
    }
  }
}

}  // namespace

void ncf_score_impl(const NcfScoreRows& r) {
  switch (r.l2) {
    case 8:
      return score_tiles<1, 8>(r);
    case 16:
      return score_tiles<2, 6>(r);
    case 24:
      return score_tiles<3, 4>(r);
    default:
      return score_tiles<4, 3>(r);
  }
}
#else
void ncf_score_impl(const NcfScoreRows& r) {
  ncf_score_ref(r);
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(ncf_score_impl);

bool ncf_score_supported(Index l1, Index l2, Index l3) {
  return l1 % 8 == 0 && l1 <= 64 && l3 == 8 && (l2 == 8 || l2 == 16 || l2 == 24 || l2 == 32);
}

void ncf_score(const NcfScoreRows& r) {
  if (!ncf_score_supported(r.l1, r.l2, r.l3)) return ncf_score_ref(r);
  SHOAL_DISPATCH(ncf_score_impl)(r);
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
