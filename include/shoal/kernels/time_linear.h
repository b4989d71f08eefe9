// Kernels of a Linear along time (models/mixing.h TimeLinear): per window b the weight is on the
// left, y_b = W · x_b, so its weight gradient is a sum over windows of g_b · x_bᵀ.
// Legend: O out steps, I in steps, C columns (features) per step, B windows.
#pragma once

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// dW[o, i] += Σ_b Σ_c g_b[o, c] · x_b[i, c]  for dW [O, I] (contiguous), window b's g_b = g +
// b·O·ldg [O, C] and x_b = x + b·I·ldx [I, C]. libxsmm 1.17 transposes neither operand of this
// form, and packing x_b transposed per window costs a pass. `acc` is scratch of O·I·8 elements.
template <class T>
void time_weight_grad(Index no, Index ni, Index c, Index batch, const T* g, Index ldg, const T* x,
                      Index ldx, T* dw, T* acc);
template <class T>
void time_weight_grad_ref(Index no, Index ni, Index c, Index batch, const T* g, Index ldg,
                          const T* x, Index ldx, T* dw);

}  // namespace shoal::kernels
