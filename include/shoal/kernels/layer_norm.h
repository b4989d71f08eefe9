// LayerNorm kernels over windows of R consecutive rows (layers/layer_norm.h): for x [N·R, C]
// (any ld ≥ C), sample n is the R·C elements of rows n·R … n·R + R − 1, normalised with its
// own mean and biased variance, then scaled and shifted elementwise by w, b [R, C] (contiguous):
//   μ_n = mean(x_n),  r_n = 1 / √(var(x_n) + eps),  y = (x − μ_n) · r_n · w + b.
// R = 1 is PyTorch's LayerNorm over one row per sample; R = H with C features is TSMixerx's
// norm over (H, C) on a [B·H, C] activation whose windows may be column blocks of a wider one.
// w and b may be null (no affine, or no bias); dw and db are null exactly when w and b are.
//
// Numerics: two passes per sample (mean, then Σ(x − μ)²), so a large offset does not cancel
// the variance; each row is summed in T in 8 lanes (one vector) and the rows are joined in
// double. Backward: docs/derivations/layer_norm.md. The *_ref twins sum sequentially in double.
// Legend: N samples (windows), R rows per sample, C columns.
#pragma once

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// y = LayerNorm(x); mean, rstd [N] are written for the backward. y may alias x.
template <class T>
void layer_norm_forward(Index n, Index r, Index c, double eps, const T* w, const T* b,
                        ConstMat<T> x, MatView<T> y, T* mean, T* rstd);
template <class T>
void layer_norm_forward_ref(Index n, Index r, Index c, double eps, const T* w, const T* b,
                            ConstMat<T> x, MatView<T> y, T* mean, T* rstd);

// s = a + res (written, kept for the backward), then y = LayerNorm(s), the add fused into the
// first statistics pass. res may alias s (a residual already written there).
template <class T>
void layer_norm_residual_forward(Index n, Index r, Index c, double eps, const T* w, const T* b,
                                 ConstMat<T> a, ConstMat<T> res, MatView<T> s, MatView<T> y,
                                 T* mean, T* rstd);
template <class T>
void layer_norm_residual_forward_ref(Index n, Index r, Index c, double eps, const T* w, const T* b,
                                     ConstMat<T> a, ConstMat<T> res, MatView<T> s, MatView<T> y,
                                     T* mean, T* rstd);

// dx = r_n·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·w, overwritten (dx may alias dy);
// dw += Σ dy·x̂ and db += Σ dy over the samples.
template <class T>
void layer_norm_backward(Index n, Index r, Index c, const T* w, T* dw, T* db, const T* mean,
                         const T* rstd, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx);
template <class T>
void layer_norm_backward_ref(Index n, Index r, Index c, const T* w, T* dw, T* db, const T* mean,
                             const T* rstd, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx);

}  // namespace shoal::kernels
