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
//
// Residual attention (RealFormer; PatchTST's res_attention), when the call passes an
// AttentionResidual: the scores carry from layer to layer,
//   S = scale · Q·Kᵀ + S_prev   (S_prev the previous layer's S, or absent in the first layer)
//   P = softmax over each row of S, S written out for the next layer.
// Its backward takes dS_next, the gradient reaching S through the next layer (absent in the
// last), and writes dS_prev = dS = P ⊙ (dP − rowsum(dP ⊙ P)) + dS_next for the previous layer;
// dQ = scale · dS·K and dK = scale · dSᵀ·Q as before.
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

// Residual attention's score arrays, each [B, H, lq, lk] contiguous (see above).
template <class T>
struct AttentionResidual {
  bool on = false;
  const T* prior = nullptr;  // S_prev, added (null: the first layer)
  T* scores = nullptr;       // S, written
};
template <class T>
struct AttentionResidualGrad {
  bool on = false;
  const T* dscores = nullptr;  // dS_next (null: the last layer)
  T* dprior = nullptr;         // dS_prev, written (null: not wanted)
};

// Scratch elements the calls need: lq·lk (forward, with a dropout mask) or 2·lq·lk (backward).
size_t attention_scratch(const AttentionShape& s);
// FLOPs of the two (forward) or four (backward) products over all pairs, as the profiler
// counts a layer's work; the softmax's few operations per score are not counted.
double attention_flops(const AttentionShape& s, bool backward);

// probs: [B, H, lq, lk] contiguous, written. drop: null, or [B, H, lq, lk] of 0 or 1/(1 − p).
template <class T>
void attention_forward(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                       AttentionInput<T> v, AttentionOperand<T> out, T* probs, const T* drop,
                       T* scratch, AttentionResidual<T> res = {});
template <class T>
void attention_backward(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                        AttentionInput<T> v, const T* probs, const T* drop, AttentionInput<T> dout,
                        AttentionOperand<T> dq, AttentionOperand<T> dk, AttentionOperand<T> dv,
                        T* scratch, AttentionResidualGrad<T> res = {});

template <class T>
void attention_forward_ref(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                           AttentionInput<T> v, AttentionOperand<T> out, T* probs, const T* drop,
                           AttentionResidual<T> res = {});
template <class T>
void attention_backward_ref(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                            AttentionInput<T> v, const T* probs, const T* drop,
                            AttentionInput<T> dout, AttentionOperand<T> dq, AttentionOperand<T> dk,
                            AttentionOperand<T> dv, AttentionResidualGrad<T> res = {});

}  // namespace shoal::kernels
