// Internal to src/shoal/kernels: libxsmm kernel dispatch with a per-thread cache, grow-once
// scratch buffers, and the OpenBLAS fallback. Not a public header.
//
// libxsmm is column-major. A row-major matrix [R, C] with leading dim ld is, in memory, the
// column-major matrix [C, R] with the same ld, so row-major C = op(A)·op(B) is computed as
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap and m, n swap. libxsmm 1.17's JIT supports
// a transposed B operand but not a transposed A (dispatch returns null), so of the row-major
// forms NN and TN map directly and NT needs B packed transposed first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels::detail {

// Column-major libxsmm kernel: C[m,n] = A[m,k] · op(B)[k,n] (+ C when beta_one).
template <class T>
using XsmmFn = void (*)(const T* a, const T* b, T* c, ...);

struct XsmmKey {
  int32_t m, n, k, lda, ldb, ldc;
  uint8_t trans_b;
  uint8_t beta_one;
  bool operator==(const XsmmKey&) const = default;
};

// The JIT kernel for key, or null when libxsmm cannot make it. Cached per thread: after the
// first call for a key the hot path is one hash probe, no locks and no allocation.
template <class T>
XsmmFn<T> xsmm_kernel(const XsmmKey& key);

// Calls the kernel for key, handling k = 0 (C = 0 or unchanged) and empty m, n. Returns false
// (having done nothing) when libxsmm has no kernel for it.
template <class T>
bool xsmm_run(const XsmmKey& key, const T* a, const T* b, T* c);

// Row-major C = alpha·op(A)·op(B) + beta·C through cblas (single-threaded OpenBLAS, loaded on
// first use by blas_loader.h).
template <class T>
void blas_gemm(bool ta, bool tb, Index m, Index n, Index k, T alpha, const T* a, Index lda,
               const T* b, Index ldb, T beta, T* c, Index ldc);

// A per-thread, 64-byte aligned buffer of at least `bytes`, grown (never shrunk) on demand, so
// steady-state calls allocate nothing. Slots are independent buffers.
enum class ScratchSlot : uint8_t { kPack, kColSum, kGradT, kCount };
void* scratch(ScratchSlot slot, size_t bytes);

template <class T>
T* scratch_as(ScratchSlot slot, Index count) {
  return static_cast<T*>(scratch(slot, static_cast<size_t>(count) * sizeof(T)));
}

// dst[c, r] = src[r, c] for src [rows, cols] (ld src_ld), dst ld dst_ld. Blocked for cache.
template <class T>
void transpose(const T* src, Index rows, Index cols, Index src_ld, T* dst, Index dst_ld);

// Initialises libxsmm, once per process.
void backend_init();

}  // namespace shoal::kernels::detail
