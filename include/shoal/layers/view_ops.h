// Elementwise helpers on matrix views, for any layer or model: copies and sums row by row
// (any ld), and the per-window transpose of batch-major activations.
#pragma once

#include "shoal/core/tensor.h"

namespace shoal::layers {

template <class T>
void copy_view(ConstMat<T> x, MatView<T> y);
template <class T>
void add_into(ConstMat<T> x, MatView<T> y);  // y += x
// y[c, r] = x[r, c] for each of `batch` [R, C] windows: x [B·R, C] → y [B·C, R].
template <class T>
void transpose_windows(ConstMat<T> x, MatView<T> y, Index batch, bool accumulate);

}  // namespace shoal::layers
