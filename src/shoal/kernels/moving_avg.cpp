// Series decomposition, vectorised over the outputs t of a row: the trend row is the
// accumulator, and term j adds x[t + j − p] to every t at once. The terms that fall into the
// padding are the row's first or last value (a broadcast); the rest is a contiguous slice of x,
// so the inner loops are unit-stride adds that gcc vectorises. Each t still adds its terms in
// order j = 0 … k − 1, starting from 0: the reference's sum, bit for bit. Compiled once per
// SIMD target (the loops are vectorised at that target's width; adds only, so every target
// gives the same bits).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/moving_avg.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <algorithm>
#include <type_traits>
#include <vector>

#include "dispatch.h"
#include "shoal/kernels/moving_avg.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {

namespace {

// Rows per block of the row-vectorised path, and outputs summed at once (their sums are
// independent chains: one add's latency each would otherwise bound the loop).
constexpr Index kBlockRows = 8;
constexpr Index kTs = 4;

// kBlockRows rows at once: the block transposed into [L + 2p, kBlockRows] with the padding
// written out (row r's first value p times before it, its last value p times after), so term
// j of output t is one unit-stride vector add across the rows, with no clamps. Each t still
// sums j = 0 … k − 1 in order from 0: the reference's sum, bit for bit.
template <class T>
void decomp_block(ConstMat<T> x, Index r0, Index k, MatView<T> trend, MatView<T> season,
                  std::vector<T>& buf) {
  const Index l = x.cols, p = (k - 1) / 2, q = l + 2 * p;
  // kTs extra rows of the last value: a group of outputs past the row's end reads them (its
  // sums are not stored).
  buf.resize(static_cast<size_t>((q + kTs) * kBlockRows));
  T* __restrict xt = buf.data();
  for (Index r = 0; r < kBlockRows; ++r) {
    const T* xr = x.row(r0 + r);
    for (Index i = 0; i < q + kTs; ++i)
      xt[i * kBlockRows + r] = xr[std::clamp<Index>(i - p, 0, l - 1)];
  }
  const T kf = static_cast<T>(k);
  for (Index t0 = 0; t0 < l; t0 += kTs) {
    const Index ts = std::min(kTs, l - t0);
    T acc[kTs][kBlockRows] = {};
    for (Index j = 0; j < k; ++j)
      for (Index i = 0; i < kTs; ++i) {
        const T* __restrict v = xt + (t0 + i + j) * kBlockRows;
        for (Index r = 0; r < kBlockRows; ++r) acc[i][r] += v[r];
      }
    for (Index i = 0; i < ts; ++i)
      for (Index r = 0; r < kBlockRows; ++r) {
        const T m = acc[i][r] / kf;
        trend(r0 + r, t0 + i) = m;
        season(r0 + r, t0 + i) = x(r0 + r, t0 + i) - m;
      }
  }
}

}  // namespace

template <class T>
void series_decomp_t(ConstMat<T> x, Index k, MatView<T> trend, MatView<T> season) {
  SHOAL_DCHECK(k >= 1 && k % 2 == 1 && trend.rows == x.rows && season.rows == x.rows);
  const Index l = x.cols, p = (k - 1) / 2;
  const T kf = static_cast<T>(k);
  Index r = 0;
  if (l > 0) {
    std::vector<T> buf;
    for (; r + kBlockRows <= x.rows; r += kBlockRows) decomp_block(x, r, k, trend, season, buf);
  }
  for (; r < x.rows; ++r) {
    const T* __restrict xr = x.row(r);
    T* __restrict tr = trend.row(r);
    T* __restrict se = season.row(r);
    std::fill(tr, tr + l, T(0));
    const T first = xr[0], last = xr[l - 1];
    for (Index j = 0; j < k; ++j) {
      const Index d = j - p;  // term j of output t reads x[t + d]
      // t < lo reads x[0]; t ≥ hi reads x[l − 1]; [lo, hi) reads x[t + d].
      const Index lo = std::clamp<Index>(-d, 0, l), hi = std::clamp<Index>(l - d, lo, l);
      for (Index t = 0; t < lo; ++t) tr[t] += first;
      for (Index t = lo; t < hi; ++t) tr[t] += xr[t + d];
      for (Index t = hi; t < l; ++t) tr[t] += last;
    }
    for (Index t = 0; t < l; ++t) {
      tr[t] = tr[t] / kf;
      se[t] = xr[t] - tr[t];
    }
  }
}

void series_decomp_f32(ConstMat<float> x, Index k, MatView<float> trend, MatView<float> season) {
  series_decomp_t<float>(x, k, trend, season);
}

void series_decomp_f64(ConstMat<double> x, Index k, MatView<double> trend, MatView<double> season) {
  series_decomp_t<double>(x, k, trend, season);
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(series_decomp_f32);
HWY_EXPORT(series_decomp_f64);

template <class T>
void series_decomp(ConstMat<T> x, Index k, MatView<T> trend, MatView<T> season) {
#if HWY_TARGETS & HWY_AVX2
  // gcc's AVX-512 code for these loops (8-row blocks) ran DLinear's decomposition 1.6× slower
  // than its AVX2 code on an AMD Zen 4: the AVX-512 path runs the AVX2 build of this kernel.
  if (active_isa() == Isa::kAvx512) {
    if constexpr (std::is_same_v<T, float>)
      return N_AVX2::series_decomp_f32(x, k, trend, season);
    else
      return N_AVX2::series_decomp_f64(x, k, trend, season);
  }
#endif
  if constexpr (std::is_same_v<T, float>)
    SHOAL_DISPATCH(series_decomp_f32)(x, k, trend, season);
  else
    SHOAL_DISPATCH(series_decomp_f64)(x, k, trend, season);
}

template void series_decomp<float>(ConstMat<float>, Index, MatView<float>, MatView<float>);
template void series_decomp<double>(ConstMat<double>, Index, MatView<double>, MatView<double>);

}  // namespace shoal::kernels
#endif  // HWY_ONCE
