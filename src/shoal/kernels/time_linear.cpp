// The time-Linear weight gradient (time_linear.h): for float with AVX2 four rows of g against
// one row of x per step, the partial sums kept as 8-lane vectors across windows and reduced
// once at the end; otherwise 8 lanes of T per (o, i) row pair.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/time_linear.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/reduce.h"
#include "shoal/kernels/time_linear.h"

// The float kernel is AVX2 (ymm) code on the AVX2 and AVX-512 targets; SSE4 takes the loops
// below (returns false).
HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {

bool time_weight_grad_f32(Index no, Index ni, Index c, Index batch, const float* g, Index ldg,
                          const float* x, Index ldx, float* dw, float* acc) {
#if HWY_TARGET <= HWY_AVX2
  // Four rows of g against one row of x per step: 5 loads per 4 FMAs, the partial sums kept
  // as 8-lane vectors across windows and reduced once at the end.
  const Index cv = c / 8 * 8;
  std::fill(acc, acc + no * ni * 8, 0.0f);
  for (Index b = 0; b < batch; ++b) {
    const float* gb = g + b * no * ldg;
    const float* xb = x + b * ni * ldx;
    Index o = 0;
    for (; o + 4 <= no; o += 4)
      for (Index i = 0; i < ni; ++i) {
        const float* xr = xb + i * ldx;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (Index j = 0; j < cv; j += 8) {
          const __m256 xv = _mm256_loadu_ps(xr + j);
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + o * ldg + j), xv, a0);
          a1 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + (o + 1) * ldg + j), xv, a1);
          a2 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + (o + 2) * ldg + j), xv, a2);
          a3 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + (o + 3) * ldg + j), xv, a3);
        }
        float* p = acc + (o * ni + i) * 8;
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a0));
        p += ni * 8;
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a1));
        p += ni * 8;
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a2));
        p += ni * 8;
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a3));
        for (Index j = cv; j < c; ++j)
          for (Index q = 0; q < 4; ++q)
            acc[((o + q) * ni + i) * 8] += gb[(o + q) * ldg + j] * xr[j];
      }
    for (; o < no; ++o)
      for (Index i = 0; i < ni; ++i) {
        const float* xr = xb + i * ldx;
        const float* gr = gb + o * ldg;
        __m256 a0 = _mm256_setzero_ps();
        for (Index j = 0; j < cv; j += 8)
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(gr + j), _mm256_loadu_ps(xr + j), a0);
        float* p = acc + (o * ni + i) * 8;
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a0));
        for (Index j = cv; j < c; ++j) p[0] += gr[j] * xr[j];
      }
  }
  for (Index k = 0; k < no * ni; ++k) {
    const float* p = acc + k * 8;
    dw[k] += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  }
  return true;
#else
  static_cast<void>(no), static_cast<void>(ni), static_cast<void>(c), static_cast<void>(batch);
  static_cast<void>(g), static_cast<void>(ldg), static_cast<void>(x), static_cast<void>(ldx);
  static_cast<void>(dw), static_cast<void>(acc);
  return false;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(time_weight_grad_f32);

template <class T>
void time_weight_grad(Index no, Index ni, Index c, Index batch, const T* g, Index ldg, const T* x,
                      Index ldx, T* dw, T* acc) {
  if constexpr (std::is_same_v<T, float>) {
    if (SHOAL_DISPATCH(time_weight_grad_f32)(no, ni, c, batch, g, ldg, x, ldx, dw, acc)) return;
  }
  (void)acc;
  for (Index b = 0; b < batch; ++b)
    for (Index o = 0; o < no; ++o) {
      const T* gr = g + (b * no + o) * ldg;
      for (Index i = 0; i < ni; ++i) {
        const T* xr = x + (b * ni + i) * ldx;
        dw[o * ni + i] += row_lane_sum<T>(c, [&](Index j) { return gr[j] * xr[j]; });
      }
    }
}

template void time_weight_grad<float>(Index, Index, Index, Index, const float*, Index, const float*,
                                      Index, float*, float*);
template void time_weight_grad<double>(Index, Index, Index, Index, const double*, Index,
                                       const double*, Index, double*, double*);

}  // namespace shoal::kernels
#endif  // HWY_ONCE
