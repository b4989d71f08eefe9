// Fast reductions. gcc does not vectorise a floating-point sum without -ffast-math (it would
// reorder the additions), so the kernels keep kLanes independent partial sums explicitly: the
// inner loop over lanes vectorises, and several vectors of lanes hide the add latency. Compiled
// once per SIMD target; the lanes and their tree are fixed, so only the contraction of dot's
// multiply-add into an FMA differs between targets.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/reduce.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <algorithm>
#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/reduce.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace {

constexpr Index kLanes = 32;  // 4 ymm of float, 8 of double

template <class T>
T lane_sum(Index n, const T* x) {
  T acc[kLanes] = {};
  Index i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (Index l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  T tail = 0;
  for (; i < n; ++i) tail += x[i];
  for (Index w = kLanes / 2; w > 0; w /= 2)
    for (Index l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0] + tail;
}

}  // namespace

template <class T>
T sum_t(Index n, const T* x) {
  return lane_sum<T>(n, x);
}

template <class T>
T dot_t(Index n, const T* a, const T* b) {
  T acc[kLanes] = {};
  Index i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (Index l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  T tail = 0;
  for (; i < n; ++i) tail += a[i] * b[i];
  for (Index w = kLanes / 2; w > 0; w /= 2)
    for (Index l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0] + tail;
}

template <class T>
void col_sums_t(ConstMat<T> x, T* s, bool accumulate) {
  if (!accumulate) std::fill(s, s + x.cols, T(0));
  // Row after row into s: unit-stride and vectorised over columns; s stays in L1 for the widths
  // this is used for (bias gradients).
  for (Index r = 0; r < x.rows; ++r) {
    const T* __restrict xr = x.row(r);
    T* __restrict sr = s;
    for (Index c = 0; c < x.cols; ++c) sr[c] += xr[c];
  }
}

template <class T>
void row_mean_var_t(ConstMat<T> x, T* mean, T* var) {
  for (Index r = 0; r < x.rows; ++r) {
    if (x.cols == 0) {
      mean[r] = var[r] = T(0);
      continue;
    }
    const T* xr = x.row(r);
    const T inv = T(1) / static_cast<T>(x.cols);
    const T mu = lane_sum<T>(x.cols, xr) * inv;
    T acc[kLanes] = {};
    Index i = 0;
    for (; i + kLanes <= x.cols; i += kLanes)
      for (Index l = 0; l < kLanes; ++l) {
        const T d = xr[i + l] - mu;
        acc[l] += d * d;
      }
    T tail = 0;
    for (; i < x.cols; ++i) tail += (xr[i] - mu) * (xr[i] - mu);
    for (Index w = kLanes / 2; w > 0; w /= 2)
      for (Index l = 0; l < w; ++l) acc[l] += acc[l + w];
    mean[r] = mu;
    var[r] = (acc[0] + tail) * inv;
  }
}

#define SHOAL_PER_TYPE(T, S)                                \
  T sum_##S(Index n, const T* x) {                          \
    return sum_t<T>(n, x);                                  \
  }                                                         \
  T dot_##S(Index n, const T* a, const T* b) {              \
    return dot_t<T>(n, a, b);                               \
  }                                                         \
  void col_sums_##S(ConstMat<T> x, T* s, bool accumulate) { \
    col_sums_t<T>(x, s, accumulate);                        \
  }                                                         \
  void row_mean_var_##S(ConstMat<T> x, T* mean, T* var) {   \
    row_mean_var_t<T>(x, mean, var);                        \
  }
SHOAL_PER_TYPE(float, f32)
SHOAL_PER_TYPE(double, f64)
#undef SHOAL_PER_TYPE

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

SHOAL_EXPORT_BOTH(sum)
SHOAL_EXPORT_BOTH(dot)
SHOAL_EXPORT_BOTH(col_sums)
SHOAL_EXPORT_BOTH(row_mean_var)

template <class T>
T sum(Index n, const T* x) {
  SHOAL_BY_TYPE(sum, n, x);
}

template <class T>
T dot(Index n, const T* a, const T* b) {
  SHOAL_BY_TYPE(dot, n, a, b);
}

template <class T>
void col_sums(ConstMat<T> x, T* s, bool accumulate) {
  SHOAL_BY_TYPE(col_sums, x, s, accumulate);
}

template <class T>
void row_mean_var(ConstMat<T> x, T* mean, T* var) {
  SHOAL_BY_TYPE(row_mean_var, x, mean, var);
}

#define SHOAL_INSTANTIATE(T)                        \
  template T sum<T>(Index, const T*);               \
  template T dot<T>(Index, const T*, const T*);     \
  template void col_sums<T>(ConstMat<T>, T*, bool); \
  template void row_mean_var<T>(ConstMat<T>, T*, T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
#endif  // HWY_ONCE
