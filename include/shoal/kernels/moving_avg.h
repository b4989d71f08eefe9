// Series decomposition by a centred moving average with replicate padding (DLinear's
// SeriesDecomp: AvgPool1d(k, stride 1) over the row with (k − 1)/2 copies of its first value
// before it and of its last value after it):
//   trend[t]  = (1/k) Σ_{j=0}^{k−1} x[clamp(t + j − p, 0, L − 1)],  p = (k − 1)/2
//   season[t] = x[t] − trend[t]
// per row of x [B, L] (k odd, any k ≥ 1, also k > L). Every output sums its k terms in order
// j = 0 … k − 1 and divides by k, as the reference does, so the fast kernel (vectorised over t)
// and its _ref twin agree bit for bit. Instantiated for float and double.
#pragma once

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// trend and season [B, L] (any ld ≥ L; either may alias neither x nor each other).
template <class T>
void series_decomp(ConstMat<T> x, Index k, MatView<T> trend, MatView<T> season);
template <class T>
void series_decomp_ref(ConstMat<T> x, Index k, MatView<T> trend, MatView<T> season);

}  // namespace shoal::kernels
