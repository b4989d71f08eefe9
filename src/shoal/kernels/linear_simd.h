// Internal to src/shoal/kernels: the SIMD pieces of the float Linear (linear_fused.cpp), written
// once over Highway and dispatched to the CPU's widest vectors (linear_simd.cpp).
//
//   C[m, n] (+)= A(m × k) · B[k, n]      A(r, p) = a[r·a_rs + p·a_ks], B and C row-major
//
// The broadcast GEMM reads A by scalar broadcasts with arbitrary strides, so a transposed A
// costs nothing:
//   dW = dzᵀ · x     A = dzᵀ (a_rs = 1, a_ks = ld), B = x block [rb, I],  k = rb
//   y  = x · Wᵀ      A = x, B = the packed Wᵀ, with the bias and ReLU applied in registers
// The vector dimension is n and B is streamed row by row. Per k step a tile of 12 accumulators
// (6 rows × 2 vectors, 4 × 3, or 12 × 1) does 12 FMAs against 2–3 loads and 4–12 broadcasts.
// Column tails use masked loads and stores (never touching memory past n).
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"
#include "shoal/kernels/gemm.h"

namespace shoal::kernels::detail {

// What the GEMM does with C: overwrite it, accumulate into it, or overwrite it with
// bias[j] + (A·B)[i, j], optionally through ReLU (max with +0: relu's x > 0 ? x : 0, -0 → +0).
enum class Epi : uint8_t { kStore, kAccumulate, kBias, kBiasRelu };

// C[m, n] (op)= A·B per `epi`; kStore never reads C, k = 0 with kStore writes zeros.
void bcast_gemm(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                Index ldb, float* c, Index ldc, Epi epi, const float* bias = nullptr);

// The common forms: C = A·B (load_c false) or C += A·B (load_c true).
inline void bcast_gemm(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks,
                       const float* b, Index ldb, float* c, Index ldc, bool load_c) {
  bcast_gemm(m, n, k, a, a_rs, a_ks, b, ldb, c, ldc, load_c ? Epi::kAccumulate : Epi::kStore);
}

// The backward's prologue on a row block: dz = dy ⊙ act'(saved) into a compact [rows, O] buffer
// (ReLU: dy where saved > 0, else +0, as PyTorch's threshold_backward; GELU per element; kNone
// writes nothing), and col_sum (+)= the column sums of dz (of dy for kNone) when not null.
void linear_backward_prologue(Act act, ConstMat<float> dy, ConstMat<float> saved, float* dz,
                              float* col_sum);

}  // namespace shoal::kernels::detail
