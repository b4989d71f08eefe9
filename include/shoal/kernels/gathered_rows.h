// The two products of a linear layer over table rows gathered through a list, X = table[list]:
// proj = X·Wᵀ and dW += dZᵀ·X, each row read in place. NCF's factored first layer runs them
// over a set of distinct table rows.
//
// The first layer's embedding columns are applied once per distinct row of a set (see
// models/ncf.h, Ncf::project_rows and rows_backward): proj = X·W_partᵀ forward and dW_part +=
// dZᵀ·X backward, X the rows table[list[k]]. The kernels broadcast or load each row's elements
// straight from the table: no compact copy of X (≈ 1,330 rows of 128 bytes per one-thread step
// of the user's model) and no buffer for it.
// Legend: M listed rows, E row elements read (the table's row stride ld ≥ E), L1 outputs.
//
// The float kernels are register-blocked loops over 8-float groups, compiled for every SIMD
// target (widths multiples of 8); the _ref twins are plain loops for any T, which the double
// model runs, and which the tests compare the float kernels against.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// Whether project_rows / rows_weight_grad have a vector kernel for e inputs, l1 outputs.
bool rows_kernels_supported(Index e, Index l1);

// proj[k, :] = table[list[k], 0:e] · wt for k < m; wt = W_partᵀ [e, l1] row-major, proj
// [m, l1] row-major. With `prefetch` the rows a few ahead are prefetched (rows in random order
// of a large table; a sweep in ascending order is left to the hardware prefetchers).
void project_rows(const float* table, Index ld, const int32_t* list, Index m, Index e,
                  const float* wt, Index l1, float* proj, bool prefetch);
template <class T>
void project_rows_ref(const T* table, Index ld, const int32_t* list, Index m, Index e, const T* wt,
                      Index l1, T* proj);

// dw[j, p] += Σ_{k<m} dz[k, j] · table[list[k], p] for j < l1, p < e; dz [m, l1] row-major,
// dw row stride ldw. The sums run over k in ascending order for every element.
void rows_weight_grad(const float* table, Index ld, const int32_t* list, Index m, Index e,
                      const float* dz, Index l1, float* dw, Index ldw, bool prefetch);
template <class T>
void rows_weight_grad_ref(const T* table, Index ld, const int32_t* list, Index m, Index e,
                          const T* dz, Index l1, T* dw, Index ldw);

}  // namespace shoal::kernels
