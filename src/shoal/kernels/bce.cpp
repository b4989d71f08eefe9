// The BCE-with-logits column pass (bce.h). The AVX2 and AVX-512 targets run bce_lanes.h's 8-lane
// polynomials; SSE4 runs the reference loop.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/bce.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <algorithm>

#include "bce_lanes.h"
#include "dispatch.h"
#include "shoal/kernels/bce.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {

double bce_logits_impl(const float* z, const float* y, float* dz, Index n, float scale) {
#if HWY_TARGET <= HWY_AVX2
  double sum = 0;
  alignas(32) float loss[8];
  const __m256 sv = _mm256_set1_ps(scale);
  for (Index i = 0; i < n; i += 8) {
    const Index m = std::min<Index>(8, n - i);
    __m256 d;
    if (m == 8) {
      _mm256_store_ps(loss,
                      detail::bce_logit8(_mm256_loadu_ps(z + i), _mm256_loadu_ps(y + i), sv, d));
      _mm256_storeu_ps(dz + i, d);
    } else {  // the tail through the same lanes, the missing rows masked (read as 0)
      const __m256i live = detail::lanes_below(m);
      _mm256_store_ps(loss, detail::bce_logit8(_mm256_maskload_ps(z + i, live),
                                               _mm256_maskload_ps(y + i, live), sv, d));
      _mm256_maskstore_ps(dz + i, live, d);
    }
    for (Index l = 0; l < m; ++l) sum += static_cast<double>(loss[l]);
  }
  return sum;
#else
  return bce_logits_ref(z, y, dz, n, scale);
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(bce_logits_impl);

double bce_logits(const float* z, const float* y, float* dz, Index n, float scale) {
  return SHOAL_DISPATCH(bce_logits_impl)(z, y, dz, n, scale);
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
