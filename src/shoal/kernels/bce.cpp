// The BCE-with-logits column pass (bce.h): vec8.h's bce_logit on full vectors of the target
// (16 floats on AVX-512), the tail through the same lanes from a zero-padded copy.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/bce.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h
#include "vec8.h"  // per target

#include "dispatch.h"
#include "shoal/kernels/bce.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

double bce_logits_impl(const float* z, const float* y, float* dz, Index n, float scale) {
  const hn::ScalableTag<float> d;
  constexpr Index kW = static_cast<Index>(hn::MaxLanes(hn::ScalableTag<float>()));
  using VF = hn::Vec<decltype(d)>;
  double sum = 0;
  alignas(64) float loss[kW];
  const VF sv = hn::Set(d, scale);
  Index i = 0;
  for (; i + kW <= n; i += kW) {
    VF dv;
    hn::Store(v8::bce_logit(d, hn::LoadU(d, z + i), hn::LoadU(d, y + i), sv, dv), d, loss);
    hn::StoreU(dv, d, dz + i);
    for (Index l = 0; l < kW; ++l) sum += static_cast<double>(loss[l]);
  }
  if (i < n) {  // the tail through the same lanes, the missing rows read as 0
    const Index m = n - i;
    alignas(64) float zt[kW] = {}, yt[kW] = {}, dt[kW];
    for (Index l = 0; l < m; ++l) zt[l] = z[i + l], yt[l] = y[i + l];
    VF dv;
    hn::Store(v8::bce_logit(d, hn::Load(d, zt), hn::Load(d, yt), sv, dv), d, loss);
    hn::Store(dv, d, dt);
    for (Index l = 0; l < m; ++l) {
      dz[i + l] = dt[l];
      sum += static_cast<double>(loss[l]);
    }
  }
  return sum;
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
