// Scaled dot-product attention over every (batch, head) pair in one call, forward and backward:
//   S = scale · Q·Kᵀ   (causal: S[i, j] = −∞ for j > i + lk − lq, the mask aligned at the end)
//   P = softmax over each row of S           (saved for the backward; a fully masked row is 0)
//   O = (P ⊙ M) · V                           (M: an optional dropout mask, 0 or 1/(1 − p))
// Per pair, the three steps run back to back on that pair's rows while they are in cache: two
// GEMMs through kernels/gemm.h (libxsmm's JIT kernels for these small shapes) and one pass of
// the row softmax between them (Highway vectors for float, every SIMD target), so a layer makes
// one call for all its heads rather than a product, a softmax and a product per head. The
// sequences attention sees in forecasting models are short (tens to hundreds of patches or
// variates) and the head widths small (8–64), where a call per small kernel costs more than
// the arithmetic.
//
// Operands are strided views, so the layouts the models keep need no transposes: row r of the
// (b, h) pair's matrix starts at data + b·batch_stride + h·head_stride + r·ld. neuralforecast's
// attention inputs are [B, L, H, E]: batch_stride L·H·E, head_stride E, ld H·E.
//
// Backward, from P (and M) saved by the forward and dO:
//   dV = (P ⊙ M)ᵀ·dO,  dP = (dO·Vᵀ) ⊙ M,  dS = P ⊙ (dP − rowsum(dP ⊙ P)),
//   dQ = scale · dS·K,  dK = scale · dSᵀ·Q
// dQ, dK and dV are overwritten. The _ref twins run the same maths in plain loops, for any T.
// Legend: B batch, H heads, lq queries, lk keys, d the query/key width, dv the value width.
#pragma once

#include <cstddef>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

struct AttentionShape {
  Index batch = 1, heads = 1, lq = 1, lk = 1, d = 1, dv = 1;
  bool causal = false;
  double scale = 1.0;  // usually 1/√d
};

template <class T>
struct AttentionOperand {
  T* data = nullptr;
  Index ld = 0;            // between rows
  Index batch_stride = 0;  // between batch entries
  Index head_stride = 0;   // between heads
  T* at(Index b, Index h) const { return data + b * batch_stride + h * head_stride; }
};
template <class T>
using AttentionInput = AttentionOperand<const T>;

// Scratch elements the calls need: lq·lk (forward, with a dropout mask) or 2·lq·lk (backward).
size_t attention_scratch(const AttentionShape& s);
// FLOPs of the two (forward) or four (backward) products over all pairs, as the profiler
// counts a layer's work; the softmax's few operations per score are not counted.
double attention_flops(const AttentionShape& s, bool backward);

// probs: [B, H, lq, lk] contiguous, written. drop: null, or [B, H, lq, lk] of 0 or 1/(1 − p).
template <class T>
void attention_forward(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                       AttentionInput<T> v, AttentionOperand<T> out, T* probs, const T* drop,
                       T* scratch);
template <class T>
void attention_backward(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                        AttentionInput<T> v, const T* probs, const T* drop, AttentionInput<T> dout,
                        AttentionOperand<T> dq, AttentionOperand<T> dk, AttentionOperand<T> dv,
                        T* scratch);

template <class T>
void attention_forward_ref(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                           AttentionInput<T> v, AttentionOperand<T> out, T* probs, const T* drop);
template <class T>
void attention_backward_ref(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                            AttentionInput<T> v, const T* probs, const T* drop,
                            AttentionInput<T> dout, AttentionOperand<T> dq, AttentionOperand<T> dk,
                            AttentionOperand<T> dv);

}  // namespace shoal::kernels
