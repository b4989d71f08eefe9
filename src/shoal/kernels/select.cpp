// Selection by a key range (select.h), compiled once per target: per vector of keys, the
// selected lanes of every field compressed to the front and stored whole (the lanes past the
// count are overwritten by the next store).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/select.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include "dispatch.h"
#include "shoal/kernels/select.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

Index select_range_impl(Index n, int32_t lo, int32_t hi, const int32_t* keys, const int32_t* others,
                        const int32_t* ctx_rows, const float* labels, int32_t* out_keys,
                        int32_t* out_others, int32_t* out_ctx_rows, float* out_labels) {
  const hn::ScalableTag<int32_t> d;
  const hn::RebindToFloat<decltype(d)> df;
  constexpr Index kL = HWY_LANES(int32_t);
  Index m = 0, k = 0;
  const auto below = hn::Set(d, lo - 1), last = hn::Set(d, hi - 1);
  for (; k + kL <= n; k += kL) {
    const auto u = hn::LoadU(d, keys + k);
    // Compress in registers, then a whole store: AVX-512's compress-to-memory form is
    // microcoded on some cores.
    const auto in = hn::AndNot(hn::Gt(u, last), hn::Gt(u, below));
    hn::StoreU(hn::Compress(u, in), d, out_keys + m);
    hn::StoreU(hn::Compress(hn::LoadU(d, others + k), in), d, out_others + m);
    if (ctx_rows != nullptr)
      hn::StoreU(hn::Compress(hn::LoadU(d, ctx_rows + k), in), d, out_ctx_rows + m);
    hn::StoreU(hn::Compress(hn::LoadU(df, labels + k), hn::RebindMask(df, in)), df, out_labels + m);
    m += static_cast<Index>(hn::CountTrue(d, in));
  }
  for (; k < n; ++k) {
    const int32_t u = keys[k];
    out_keys[m] = u;
    out_others[m] = others[k];
    if (ctx_rows != nullptr) out_ctx_rows[m] = ctx_rows[k];
    out_labels[m] = labels[k];
    m += u >= lo && u < hi ? 1 : 0;
  }
  return m;
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(select_range_impl);

Index select_range(Index n, int32_t lo, int32_t hi, const int32_t* keys, const int32_t* others,
                   const int32_t* ctx_rows, const float* labels, int32_t* out_keys,
                   int32_t* out_others, int32_t* out_ctx_rows, float* out_labels) {
  return SHOAL_DISPATCH(select_range_impl)(n, lo, hi, keys, others, ctx_rows, labels, out_keys,
                                           out_others, out_ctx_rows, out_labels);
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
