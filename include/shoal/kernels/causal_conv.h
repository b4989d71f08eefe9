// A dilated causal 1-D convolution over sequences stored time-major (row t·B + b of x [T·B, I]
// and y [T·B, O] is step t of sequence b), PyTorch's nn.Conv1d(I, O, K, dilation=d,
// padding=(K−1)·d) with the right padding cut off (neuralforecast's CausalConv1d), then an
// activation:
//   y_t = act(b + Σ_k W[:, :, k] · x_{t − (K−1−k)·d})        x_s = 0 for s < 0
// or, anti-causal (the padding on the right, neuralforecast's BiTCN "forward" mode), each step
// reading the steps from itself on:
//   y_t = act(b + Σ_k W[:, :, k] · x_{t + k·d})              x_s = 0 for s ≥ T
// W [O, I, K] (torch's layout), b [O]. A tap k shifts the input by s_k = (K−1−k)·d steps, which
// time-major is s_k·B rows: its product is one GEMM of the (T − s_k)·B rows it reaches,
// y[s_k·B ..] += x[0 .. (T − s_k)·B] · W_kᵀ, with W_k = W[:, :, k] packed [O, I]. A forward is
// K GEMMs and one fused pass of bias and activation; a backward one fused pass of the
// activation's derivative and the bias gradient, then 2·K GEMMs (dW_k and dx per tap).
// Legend: T steps, B sequences, I input channels, O output channels, K kernel size, d dilation.
// Derivation: docs/derivations/causal_conv.md.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// The activations a causal convolution runs (neuralforecast's names ReLU, Tanh; Identity: none).
// Each derivative is taken from the output y.
enum class ConvAct : uint8_t { kRelu, kTanh, kIdentity };

// Which steps a convolution reads: the past (causal, the padding on the left) or the future
// (anti-causal, the padding on the right).
enum class ConvDir : uint8_t { kCausal, kAnticausal };

template <class T>
struct CausalConv {
  Index steps = 0, batch = 0, in = 0, out = 0, kernel = 1, dilation = 1;
  ConvAct act = ConvAct::kRelu;
  ConvDir dir = ConvDir::kCausal;
  const T* w = nullptr;  // [O, I, K]
  const T* b = nullptr;  // [O], null: no bias
};

// Scratch elements forward and backward need (the packed taps, and one tap's weight gradient).
Index causal_conv_scratch(Index in, Index out, Index kernel);

// y [T·B, O] from x [T·B, I].
template <class T>
void causal_conv_forward(const CausalConv<T>& c, const T* x, T* y, T* scratch);
template <class T>
void causal_conv_forward_ref(const CausalConv<T>& c, const T* x, T* y);

// From dy [T·B, O] (overwritten with the gradient before the activation): dw [O, I, K] and db
// [O] accumulate (+=; db skipped when null), dx [T·B, I] is written when not null. x and y are
// the forward's.
template <class T>
void causal_conv_backward(const CausalConv<T>& c, const T* x, const T* y, T* dy, T* dx, T* dw,
                          T* db, T* scratch);
template <class T>
void causal_conv_backward_ref(const CausalConv<T>& c, const T* x, const T* y, T* dy, T* dx, T* dw,
                              T* db);

}  // namespace shoal::kernels
