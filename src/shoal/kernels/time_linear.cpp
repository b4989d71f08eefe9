// The time-Linear weight gradient (time_linear.h): four rows of g against one row of x per
// step, full vectors of the target (16 floats on AVX-512), the partial sums folded to 8 lanes
// and kept across windows in `acc`, reduced once at the end.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/time_linear.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h
#include "vec8.h"  // per target

#include <algorithm>
#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/reduce.h"
#include "shoal/kernels/time_linear.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr Index kN = static_cast<Index>(hn::MaxLanes(DF()));

// acc[q·ni·8 ..] += Σ_j g_q[j]·x[j] for the R rows g_q, lanes kept apart: full vectors, then
// one 8-lane step where the vectors are wider, the last elements into lane 0.
template <int R>
HWY_INLINE void dot_rows(const float* const (&g)[R], const float* x, Index c, float* acc,
                         Index stride) {
  const DF d;
  const v8::D d8;
  VF a[R];
  for (int q = 0; q < R; ++q) a[q] = hn::Zero(d);
  Index j = 0;
  for (; j + kN <= c; j += kN) {
    const VF xv = hn::LoadU(d, x + j);
    for (int q = 0; q < R; ++q) a[q] = hn::MulAdd(hn::LoadU(d, g[q] + j), xv, a[q]);
  }
  v8::V f[R];
  for (int q = 0; q < R; ++q) f[q] = v8::fold8(d, a[q]);
  if constexpr (kN > 8) {
    if (j + 8 <= c) {
      const v8::V xv = hn::LoadU(d8, x + j);
      for (int q = 0; q < R; ++q) f[q] = hn::MulAdd(hn::LoadU(d8, g[q] + j), xv, f[q]);
      j += 8;
    }
  }
  for (int q = 0; q < R; ++q) {
    float* p = acc + q * stride;
    hn::StoreU(hn::Add(hn::LoadU(d8, p), f[q]), d8, p);
    for (Index t = j; t < c; ++t) p[0] += g[q][t] * x[t];
  }
}

}  // namespace

bool time_weight_grad_f32(Index no, Index ni, Index c, Index batch, const float* g, Index ldg,
                          const float* x, Index ldx, float* dw, float* acc) {
  // Four rows of g against one row of x per step: 5 loads per 4 FMAs.
  std::fill(acc, acc + no * ni * 8, 0.0f);
  for (Index b = 0; b < batch; ++b) {
    const float* gb = g + b * no * ldg;
    const float* xb = x + b * ni * ldx;
    Index o = 0;
    for (; o + 4 <= no; o += 4)
      for (Index i = 0; i < ni; ++i) {
        const float* rows[4] = {gb + o * ldg, gb + (o + 1) * ldg, gb + (o + 2) * ldg,
                                gb + (o + 3) * ldg};
        dot_rows<4>(rows, xb + i * ldx, c, acc + (o * ni + i) * 8, ni * 8);
      }
    for (; o < no; ++o)
      for (Index i = 0; i < ni; ++i) {
        const float* rows[1] = {gb + o * ldg};
        dot_rows<1>(rows, xb + i * ldx, c, acc + (o * ni + i) * 8, ni * 8);
      }
  }
  for (Index k = 0; k < no * ni; ++k) {
    const float* p = acc + k * 8;
    dw[k] += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  }
  return true;
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
