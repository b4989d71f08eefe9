// Reductions. Every fast kernel has a *_ref twin (plain sequential loop in T); the fast ones
// sum in several independent lanes, so results differ from the reference by rounding only.
// Instantiated for float and double.
#pragma once

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// Σ_j f(j) over [0, n) in 8 independent double accumulators: vectorisable without
// -ffast-math, and deterministic (the summation order depends only on n).
template <class F>
double lane_sum(Index n, F&& f) {
  constexpr int kAccumulators = 8;
  double acc[kAccumulators] = {};
  Index j = 0;
  for (; j + kAccumulators <= n; j += kAccumulators)
    for (int k = 0; k < kAccumulators; ++k) acc[k] += f(j + k);
  double tail = 0;
  for (; j < n; ++j) tail += f(j);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// Σ_j f(j) over [0, n) in 8 independent lanes of T, joined in a fixed tree (vectorisable
// without -ffast-math; the order depends only on n). For short rows whose sums are joined in
// double by the caller (the LayerNorm and time-Linear kernels).
template <class T, class F>
T row_lane_sum(Index n, F&& f) {
  T acc[8] = {};
  Index j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += f(j + k);
  T tail = 0;
  for (; j < n; ++j) tail += f(j);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// s[f] = Σ_n x(n, f)  for x [N, F] (any ld ≥ F), s [F]; with accumulate, s[f] += that sum.
// Used for bias gradients.
template <class T>
void col_sums(ConstMat<T> x, T* s, bool accumulate);
template <class T>
void col_sums_ref(ConstMat<T> x, T* s, bool accumulate);

// For x [N, F]: mean[n] = (1/F) Σ_f x(n, f),  var[n] = (1/F) Σ_f (x(n, f) − mean[n])²
// (biased variance, as LayerNorm uses). Two passes over each row (stable). F = 0 gives 0, 0.
template <class T>
void row_mean_var(ConstMat<T> x, T* mean, T* var);
template <class T>
void row_mean_var_ref(ConstMat<T> x, T* mean, T* var);

// Σ_i x[i]
template <class T>
T sum(Index n, const T* x);
template <class T>
T sum_ref(Index n, const T* x);

// Σ_i a[i] · b[i]
template <class T>
T dot(Index n, const T* a, const T* b);
template <class T>
T dot_ref(Index n, const T* a, const T* b);

}  // namespace shoal::kernels
