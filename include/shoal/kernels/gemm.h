// GEMM and the fused Linear kernels, row-major.
//
// Legend: N batch rows, I in features, O out features. A Linear weight is W[O, I] (PyTorch's
// layout), so the three products a Linear needs are
//   forward   y  = x · Wᵀ          gemm(kNo,  kYes)  [N,I]·[I,O]
//   input     dx = dz · W          gemm(kNo,  kNo)   [N,O]·[O,I]
//   weight    dW = dzᵀ · x         gemm(kYes, kNo)   [O,N]·[N,I]
// where dz is dy after the activation's derivative. Every fast kernel has a *_ref twin (plain
// loops, any T) that tests compare it against.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

enum class Trans : uint8_t { kNo, kYes };
enum class Act : uint8_t { kNone, kRelu, kGelu };  // GELU: exact erf form (PyTorch default)

// C[M,N] = alpha · op(A)[M,K] · op(B)[K,N] + beta · C. beta = 0 never reads C (NaN-safe).
template <class T>
void gemm(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda, const T* b,
          Index ldb, T beta, T* c, Index ldc);
// Which implementation gemm uses. kAuto picks per form and shape (see docs/kernels.md);
// the others force one, for tests and benchmarks. kXsmm falls back to kBlas where libxsmm has
// no kernel (alpha != 1, beta not in {0, 1}, TT form).
enum class GemmBackend : uint8_t { kAuto, kXsmm, kBlas };
template <class T>
void gemm(GemmBackend backend, Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a,
          Index lda, const T* b, Index ldb, T beta, T* c, Index ldc);
// The backend kAuto would use for this call.
GemmBackend gemm_auto_backend(Trans ta, Trans tb, Index m, Index n, Index k);

template <class T>
void gemm_ref(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda,
              const T* b, Index ldb, T beta, T* c, Index ldc);

// y = act(x · Wᵀ + b). b may be null. pre, if it has data, receives x · Wᵀ + b (GELU backward
// needs it; ReLU backward uses y).
template <class T>
void linear_forward(ConstMat<T> x, ConstMat<T> w, const T* b, Act act, MatView<T> y,
                    MatView<T> pre);
template <class T>
void linear_forward_ref(ConstMat<T> x, ConstMat<T> w, const T* b, Act act, MatView<T> y,
                        MatView<T> pre);

// Backward of linear_forward. act_saved is y for kRelu, pre for kGelu, unused for kNone.
// dz [N,O] is scratch (may alias dy's memory only if dy is not needed afterwards); its contents
// afterwards are unspecified (the float kernel keeps dz per row block in a per-thread buffer
// and never touches it; the double kernel writes it except for kNone).
// dx (if it has data) is overwritten; it may be narrower than x (dx.cols ≤ I): then only its
// columns are computed, dx = dz·W[:, :dx.cols] (NCF's first layer needs no gradient for its
// context inputs). dw [O,I] and db [O] (if non-null) are overwritten when accumulate is false
// and added to when true.
template <class T>
void linear_backward(ConstMat<T> x, ConstMat<T> w, ConstMat<T> act_saved, Act act, ConstMat<T> dy,
                     MatView<T> dz, MatView<T> dx, MatView<T> dw, T* db, bool accumulate);
template <class T>
void linear_backward_ref(ConstMat<T> x, ConstMat<T> w, ConstMat<T> act_saved, Act act,
                         ConstMat<T> dy, MatView<T> dz, MatView<T> dx, MatView<T> dw, T* db,
                         bool accumulate);

}  // namespace shoal::kernels
